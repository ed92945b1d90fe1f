//! A task call whose first attempt has a number of its own (`TaskCall::first_attempt`): code
//! that retries by asking for a new step (the YAML front end's `retry:`) numbers the attempts
//! of one state on, and the engine's own retry policy still counts from the step's first.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use magrathea_core::{
    Engine, Record, RetryPolicy, RunStatus, StartRequest, TaskCall, TaskError, TaskOptions,
    TaskRegistration, WorkflowRegistration,
};
use serde_json::{Value, json};

/// A workflow calling a task that always fails, retryable, under a policy of two attempts;
/// the first is numbered `first`. The attempts the task saw go to `seen`.
fn workflow(first: u32, seen: Arc<Mutex<Vec<u32>>>) -> WorkflowRegistration {
    WorkflowRegistration::new("numbered", "", move |ctx, _input| {
        let seen = seen.clone();
        async move {
            let options = TaskOptions {
                retry: RetryPolicy::fixed(2, Duration::ZERO),
                timeout: None,
            };
            let body = TaskRegistration::new("flaky", options.clone(), move |_: Value, tc| {
                seen.lock().unwrap().push(tc.attempt);
                async move { Err::<Value, _>(TaskError::retryable("not yet")) }
            });
            let out = ctx
                .task_with(TaskCall {
                    task: "flaky".into(),
                    name: Some("state".into()),
                    input: json!({}),
                    options: Some(options),
                    registration: Some(body),
                    first_attempt: Some(first),
                })
                .await;
            Ok(json!({ "failed": out.is_err() }))
        }
    })
}

#[tokio::test]
async fn attempts_are_journaled_from_the_first_number_and_the_policy_counts_from_there() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let engine = Engine::builder()
        .workflow(workflow(3, seen.clone()))
        .build()
        .await
        .unwrap();
    let run = engine
        .start(StartRequest::code("numbered", json!({})))
        .await
        .unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!({ "failed": true })));
    assert_eq!(
        *seen.lock().unwrap(),
        [3, 4],
        "two attempts, numbered from 3"
    );

    let journal = engine.journal(run).unwrap();
    let attempts: Vec<(&str, u32, bool)> = journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::TaskStarted { attempt, .. } => Some(("started", *attempt, false)),
            Record::TaskResult {
                attempt, is_final, ..
            } => Some(("result", *attempt, *is_final)),
            _ => None,
        })
        .collect();
    assert_eq!(
        attempts,
        [
            ("started", 3, false),
            ("result", 3, false),
            ("started", 4, false),
            ("result", 4, true),
        ]
    );
    engine
        .check_replay(journal)
        .expect("the numbered attempts replay");
}
