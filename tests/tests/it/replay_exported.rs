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

    let missing = replay_file(&engine, journal("nope.jsonl")).expect_err("no such file");
    assert!(missing.to_string().starts_with("[MAG-RP001]"), "{missing}");
}
