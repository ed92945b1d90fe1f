//! A task call that carries its body (`TaskCall::registration`) across a restart: the body the
//! replaying code hands the step again is the one that runs for a step that was started and
//! never finished. Front ends rely on it to give a task what it must not journal (the YAML
//! shell step's environment): the closure captures it, and replay rebuilds the same closure.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use magrathea_core::{
    Engine, MemoryStore, Record, RunStatus, StartRequest, Store, TaskCall, TaskOptions,
    TaskRegistration, WorkflowRegistration,
};
use serde_json::{Value, json};

/// A runtime of its own per engine incarnation: shutting it down stops that engine at once,
/// as a crash would (the store is shared, in memory).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A workflow calling task `carried` with a body built here, from `hidden` (a value the input
/// does not carry): the first incarnation's body never ends, the second's answers.
fn workflow(hidden: &'static str, started: Arc<AtomicBool>) -> WorkflowRegistration {
    WorkflowRegistration::new("carrier", "", move |ctx, input| {
        let started = started.clone();
        async move {
            let body =
                TaskRegistration::new("carried", TaskOptions::default(), move |input: Value, _| {
                    let started = started.clone();
                    async move {
                        started.store(true, Ordering::SeqCst);
                        if hidden == "hangs" {
                            std::future::pending::<()>().await;
                        }
                        Ok(json!({ "input": input, "hidden": hidden }))
                    }
                });
            let out = ctx
                .task_with(TaskCall {
                    task: "carried".into(),
                    name: Some("step".into()),
                    input,
                    options: None,
                    registration: Some(body),
                    first_attempt: None,
                })
                .await?;
            Ok(out)
        }
    })
}

#[test]
fn a_started_unfinished_step_runs_the_body_its_replayed_call_carries() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());

    let first = runtime();
    let started = Arc::new(AtomicBool::new(false));
    let run = first.block_on({
        let (store, started) = (store.clone(), started.clone());
        async move {
            let engine = Engine::builder()
                .store(store)
                .workflow(workflow("hangs", started.clone()))
                .build()
                .await
                .unwrap();
            let run = engine
                .start(StartRequest::code("carrier", json!("in")))
                .await
                .unwrap();
            while !started.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            run
        }
    });
    first.shutdown_background();

    let second = runtime();
    let (view, journal) = second.block_on(async move {
        let again = Arc::new(AtomicBool::new(false));
        let engine = Engine::builder()
            .store(store)
            .workflow(workflow("answers", again.clone()))
            .build()
            .await
            .unwrap();
        let view = tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
            .await
            .expect("the recovered run ends")
            .unwrap();
        assert!(again.load(Ordering::SeqCst), "the carried body ran again");
        (view, engine.journal(run).unwrap())
    });
    second.shutdown_background();

    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert_eq!(
        view.result,
        Some(json!({ "input": "in", "hidden": "answers" })),
        "the body of the replayed call ran, with the journaled input"
    );
    let started: Vec<(u32, Value)> = journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::TaskStarted { attempt, input, .. } => Some((*attempt, input.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        vec![(1, json!("in"))],
        "the re-execution journals no second start, and the journal holds only the input"
    );
}
