//! Task and workflow bodies that return errors of other crates: `anyhow::Error`, `String` and
//! boxed errors take the boxed-error path of the macros, with their context chain as the
//! message; a cancelled step still cancels the run through them.

use std::time::Duration;

use anyhow::Context as _;
use magrathea::prelude::*;
use magrathea::{Record, ResultError};

async fn engine(builder: magrathea::EngineBuilder) -> Engine {
    builder
        .in_memory()
        .build()
        .await
        .expect("an in-memory engine")
}

fn offline() -> std::io::Error {
    std::io::Error::other("card reader offline")
}

/// Fails its first attempt with an `anyhow` error that has context, then succeeds.
#[task(retry(max_attempts = 3, backoff_ms = 1))]
async fn charge(ctx: TaskContext, cents: u64) -> anyhow::Result<u64> {
    if ctx.attempt == 1 {
        Err(offline()).context("charging the card")?;
    }
    Ok(cents)
}

/// Always fails with a `String`, once.
#[task(retry = "none")]
async fn refund(cents: u64) -> Result<u64, String> {
    Err(format!("refund of {cents} refused"))
}

#[workflow]
async fn checkout(ctx: Context, cents: u64) -> anyhow::Result<u64> {
    let charged = ctx.task(charge, cents).await?;
    let code: u64 = "7".parse().context("reading the code")?;
    Ok(charged + code)
}

#[tokio::test]
async fn an_anyhow_error_in_a_task_fails_the_attempt_with_its_context_and_is_retried() {
    let engine = engine(Engine::builder().workflow(checkout)).await;
    let run = engine.start(checkout, 100).await.unwrap();
    assert_eq!(run.result().await.unwrap(), 107);
    let errors: Vec<String> = engine
        .journal(run.id())
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.record {
            Record::TaskResult {
                error: Some(error), ..
            } => Some(error),
            _ => None,
        })
        .collect();
    assert_eq!(errors, ["charging the card: card reader offline"]);
}

#[workflow]
async fn refund_all(ctx: Context, cents: u64) -> Result<u64, String> {
    ctx.task(refund, cents)
        .await
        .map_err(|e| format!("refunding: {}", e.message()))
}

#[tokio::test]
async fn string_errors_fail_a_task_and_a_workflow_with_their_text() {
    let engine = engine(Engine::builder().workflow(refund_all)).await;
    let run = engine.start(refund_all, 5).await.unwrap();
    match run.result().await {
        Err(ResultError::Unsuccessful { status, reason, .. }) => {
            assert_eq!(status, RunStatus::Failed);
            assert_eq!(reason, "refunding: refund of 5 refused");
        }
        other => panic!("expected a failed run, got {other:?}"),
    }
}

#[workflow]
async fn parse_code(_ctx: Context, text: String) -> anyhow::Result<u32> {
    let code: u32 = text.parse().with_context(|| format!("reading {text:?}"))?;
    Ok(code)
}

#[tokio::test]
async fn an_anyhow_error_in_a_workflow_fails_the_run_with_its_context() {
    let engine = engine(Engine::builder().workflow(parse_code)).await;
    let ok = engine.start(parse_code, "12".into()).await.unwrap();
    assert_eq!(ok.result().await.unwrap(), 12);
    let run = engine.start(parse_code, "x".into()).await.unwrap();
    let view = engine.wait(run.id()).await.unwrap();
    assert_eq!(view.status, RunStatus::Failed);
    assert_eq!(
        view.reason.as_deref(),
        Some("reading \"x\": invalid digit found in string")
    );
}

/// Sleeps an hour; a cancelled timer reaches the end through `anyhow`, with context.
#[workflow]
async fn nap(ctx: Context) -> anyhow::Result<()> {
    ctx.sleep(Duration::from_secs(3600))
        .await
        .context("napping")?;
    Ok(())
}

/// The same without context: `?` on the step error itself.
#[workflow]
async fn bare_nap(ctx: Context) -> anyhow::Result<()> {
    ctx.sleep(Duration::from_secs(3600)).await?;
    Ok(())
}

/// The same through a boxed error.
#[workflow]
async fn boxed_nap(ctx: Context) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    ctx.sleep(Duration::from_secs(3600)).await?;
    Ok(())
}

#[tokio::test]
async fn a_cancelled_step_through_anyhow_or_a_box_cancels_the_run() {
    let engine = engine(
        Engine::builder()
            .workflow(nap)
            .workflow(bare_nap)
            .workflow(boxed_nap),
    )
    .await;
    let mut committed = engine.core().subscribe_journal();
    let runs = [
        engine.start(nap, ()).await.unwrap().id(),
        engine.start(bare_nap, ()).await.unwrap().id(),
        engine.start(boxed_nap, ()).await.unwrap().id(),
    ];
    // Cancellation reaches the steps pending when it is requested: wait for both timers.
    let mut waiting: Vec<_> = runs.to_vec();
    let timer_set = |entries: &[magrathea::Entry]| {
        entries
            .iter()
            .any(|e| matches!(e.record, Record::TimerSet { .. }))
    };
    waiting.retain(|r| !timer_set(&engine.journal(*r).unwrap_or_default()));
    while !waiting.is_empty() {
        let update = committed.recv().await.unwrap();
        if timer_set(&update.entries) {
            waiting.retain(|r| *r != update.run_id);
        }
    }
    for run in runs {
        engine.cancel(run, "enough").await.unwrap();
        let view = engine.wait(run).await.unwrap();
        assert_eq!(view.status, RunStatus::Cancelled, "{view:?}");
    }
}
