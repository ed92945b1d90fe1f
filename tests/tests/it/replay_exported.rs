//! Journals of the order pipeline exported before its code changed (`tests/journals/`, written
//! with `magrathea journal RUN --export`) still replay against the example's code today: a
//! change that would block such a run fails here, not in production.

#[allow(dead_code)]
#[path = "../../../dsl/examples/order_pipeline/pipeline.rs"]
mod pipeline;

use magrathea::Engine;
use magrathea::testing::{ReplayFileError, assert_replays, read_journal, replay_file};

fn journal(name: &str) -> String {
    format!(
        "{}/journals/order_pipeline/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

async fn engine() -> Engine {
    Engine::builder()
        .in_memory()
        .workflow(pipeline::order)
        .workflow(pipeline::ship)
        .build()
        .await
        .expect("the engine opens")
}

#[tokio::test]
async fn journals_of_the_earlier_order_pipeline_replay_against_todays_code() {
    let engine = engine().await;
    assert_replays(&engine, journal("order.jsonl"));
    assert_replays(&engine, journal("ship.jsonl"));
}

#[tokio::test]
async fn a_journal_cut_at_every_record_replays_too() {
    // Every prefix is a journal of a run caught in flight (mid-retry, at the timer, at the gate).
    let engine = engine().await;
    let entries = read_journal(journal("order.jsonl")).expect("the journal reads");
    for n in 1..=entries.len() {
        let prefix = entries[..n].to_vec();
        if let Err(e) = engine.core().check_replay(prefix) {
            panic!("the first {n} records do not replay: {e}");
        }
    }
}

#[tokio::test]
async fn code_that_no_longer_matches_fails_with_the_report() {
    // The shipping workflow's journal against an engine whose `ship` is the order workflow's
    // code under the other name: the first step differs.
    let engine = Engine::builder()
        .in_memory()
        .workflow_registration(magrathea::core::WorkflowRegistration::new(
            "ship",
            "",
            |ctx, _| async move {
                ctx.task("reserve", serde_json::json!({})).await?;
                Ok(serde_json::Value::Null)
            },
        ))
        .build()
        .await
        .expect("the engine opens");
    let err = replay_file(&engine, journal("ship.jsonl")).expect_err("the code diverges");
    let ReplayFileError::Diverged { source, .. } = &err else {
        panic!("expected a divergence, got {err}");
    };
    let text = source.to_string();
    assert!(text.starts_with("[MAG-ND001]"), "{text}");
    assert!(
        text.contains("book_courier") && text.contains("reserve"),
        "{text}"
    );
    // The same report, typed: a test can match on the step and both sides.
    assert_eq!(source.code(), Some("MAG-ND001"));
    let nd = source
        .nondeterminism
        .as_ref()
        .expect("a divergence carries its report");
    assert_eq!(nd.code(), "MAG-ND001");
    match &nd.divergence {
        magrathea::Divergence::Mismatch { journal, code, .. } => {
            assert_eq!(journal.name, "book_courier");
            assert_eq!(code.name, "reserve");
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }

    let missing = replay_file(&engine, journal("nope.jsonl")).expect_err("no such file");
    assert!(missing.to_string().starts_with("[MAG-RP001]"), "{missing}");
}

#[magrathea::task]
async fn charge(key: String) -> Result<String, magrathea::TaskError> {
    Ok(format!("charged under {key}"))
}

/// Uses its run's id in a task's input (an idempotency key for a provider, say).
#[magrathea::workflow]
async fn keyed(ctx: magrathea::Context, n: u32) -> Result<String, magrathea::WorkflowError> {
    let key = format!("{}-{n}", ctx.run_id());
    Ok(ctx.task(charge, key).await?)
}

async fn keyed_engine() -> Engine {
    Engine::builder()
        .in_memory()
        .workflow(keyed)
        .build()
        .await
        .expect("the engine opens")
}

#[tokio::test]
async fn code_that_uses_its_run_id_replays_the_export_of_its_run() {
    let engine = keyed_engine().await;
    let run = engine.start(keyed, 7).await.expect("starts").id();
    let view = engine.wait(run).await.expect("ends");
    assert_eq!(view.status, magrathea::RunStatus::Done, "{:?}", view.reason);
    let entries = engine.core().journal(run).expect("the journal reads");

    // What `magrathea journal RUN --export FILE` writes.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("keyed.jsonl");
    let text = magrathea::core::export::write_export(run, &entries).expect("writes");
    std::fs::write(&file, text).expect("the export is written");

    // Another process, where the run never ran.
    let fresh = keyed_engine().await;
    assert_replays(&fresh, &file);
    // Replayed under another id, the code asks for another input.
    let err = fresh
        .core()
        .check_replay(entries)
        .expect_err("another run id, another key");
    assert!(err.to_string().starts_with("[MAG-ND001]"), "{err}");
}
