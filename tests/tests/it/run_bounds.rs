//! Bounds the engine keeps on every run: a run whose journal outgrows its limit fails with
//! `[MAG-BD001] bounds exhausted`, and a task whose
//! output is too large fails with `technical_error` and `[MAG-BD002]`, not retried — and the
//! engine goes on serving every other run.

use std::time::Duration;

use magrathea::Record;
use magrathea::prelude::*;
use serde_json::json;

#[task]
async fn echo(n: u64) -> Result<u64, TaskError> {
    Ok(n)
}

#[task(retry(max_attempts = 3, backoff_ms = 1))]
async fn blob(len: usize) -> Result<String, TaskError> {
    Ok("x".repeat(len))
}

/// Runs `steps` tasks, then waits for a `stop` signal (`u64::MAX`: runs tasks forever).
#[workflow]
async fn grow(ctx: Context, steps: u64) -> Result<u64, WorkflowError> {
    let mut k = 0;
    while k < steps {
        k = ctx.task(echo, k).await? + 1;
    }
    ctx.signal::<String>("stop").await?;
    Ok(k)
}

/// Asks for a `len`-byte string from a task.
#[workflow]
async fn fetch(ctx: Context, len: usize) -> Result<usize, WorkflowError> {
    Ok(ctx.task(blob, len).await?.len())
}

fn builder(path: &std::path::Path) -> magrathea::EngineBuilder {
    Engine::builder()
        .path(path)
        .workflow(grow)
        .workflow(fetch)
        .task(echo)
        .task(blob)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_journal_outgrows_its_limit_fails_and_other_runs_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let engine = builder(&dir.path().join("j.redb"))
        .max_journal_bytes_per_run(4_096)
        .build()
        .await
        .unwrap();
    let endless = engine.start(grow, u64::MAX).await.unwrap().id();
    let view = tokio::time::timeout(Duration::from_secs(30), engine.wait(endless))
        .await
        .expect("the endless run stops")
        .unwrap();
    assert_eq!(view.status, RunStatus::Failed);
    let reason = view.reason.unwrap_or_default();
    assert!(
        reason.contains("[MAG-BD001] bounds exhausted") && reason.contains("4096 bytes"),
        "{reason}"
    );
    let bytes: u64 = engine
        .core()
        .store()
        .read_journal_raw(endless)
        .unwrap()
        .iter()
        .map(|(_, b)| b.len() as u64)
        .sum();
    assert!(bytes > 4_096, "it failed past its limit, at {bytes} bytes");
    assert!(
        bytes < 8_192,
        "and in the commit that crossed it, not later: {bytes} bytes"
    );

    // The engine serves other runs as before.
    let small = engine.start(grow, 2).await.unwrap().id();
    engine.signal(small, "stop", json!("now")).await.unwrap();
    assert_eq!(engine.wait(small).await.unwrap().status, RunStatus::Done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_output_over_the_limit_is_a_technical_error_that_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let engine = builder(&dir.path().join("j.redb"))
        .max_task_output_bytes(1_000)
        .build()
        .await
        .unwrap();
    let ok = engine.start(fetch, 998).await.unwrap();
    assert_eq!(
        ok.wait().await.unwrap().status,
        RunStatus::Done,
        "998 chars + quotes fit"
    );

    let run = engine.start(fetch, 5_000).await.unwrap().id();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Failed);
    let results: Vec<_> = engine
        .core()
        .journal(run)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.record {
            Record::TaskResult {
                outcome,
                output,
                error,
                is_final,
                attempt,
                ..
            } => Some((outcome.to_string(), output, error, is_final, attempt)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results.len(),
        1,
        "one attempt despite the retry policy: {results:?}"
    );
    let (outcome, output, error, is_final, attempt) = &results[0];
    assert_eq!(
        (outcome.as_str(), *is_final, *attempt),
        ("technical_error", true, 1)
    );
    assert!(
        output.as_str().is_none_or(|s| s.len() < 1_000),
        "the output is not journaled"
    );
    let error = error.clone().unwrap_or_default();
    assert!(
        error.contains("[MAG-BD002]")
            && error.contains("5002 bytes")
            && error.contains("1000 bytes"),
        "{error}"
    );
}
