//! `WorkflowContext::next_completed`: a sliding window of child runs that takes the next one
//! to complete by journal order, keeps the others running, and replays to the same choices.

use std::sync::Arc;
use std::time::Duration;

use magrathea_core::testing::gate_spec;
use magrathea_core::{
    ChildRequest, Engine, GateAnswer, GateKind, InboxFilter, InboxItem, MemoryStore, Record, RunId,
    RunStatus, StartRequest, WorkflowRegistration,
};
use serde_json::{Value, json};

/// A child that waits at a gate titled after its input and returns its input.
fn gated_child() -> WorkflowRegistration {
    WorkflowRegistration::new("child", "", |ctx, input| async move {
        let title = format!("item {}", input.as_u64().unwrap_or(0));
        let _ = ctx.gate(gate_spec(GateKind::Approval, &title)).await;
        Ok(input)
    })
}

/// Four children, at most two in flight; the result lists the items in completion order.
fn window_parent() -> WorkflowRegistration {
    WorkflowRegistration::new("window", "", |ctx, _| async move {
        let mut pending = Vec::new();
        let mut next = 0u64;
        let mut order = Vec::new();
        while next < 4 || !pending.is_empty() {
            while next < 4 && pending.len() < 2 {
                pending.push(ctx.child(ChildRequest::code("child", json!(next))));
                next += 1;
            }
            let (_, done) = ctx.next_completed(&mut pending).await;
            order.push(done.result);
        }
        Ok(Value::Array(order))
    })
}

async fn engine(store: &Arc<MemoryStore>) -> Engine {
    Engine::builder()
        .store(store.clone())
        .workflow(gated_child())
        .workflow(window_parent())
        .build()
        .await
        .expect("the engine opens")
}

/// Waits until the inbox holds `n` pending items, and returns them.
async fn pending(engine: &Engine, n: usize) -> Vec<InboxItem> {
    for _ in 0..500 {
        let items = engine.inbox(InboxFilter::Pending).expect("the inbox reads");
        if items.len() == n {
            return items;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the inbox never held {n} pending items");
}

async fn answer(engine: &Engine, items: &[InboxItem], title: &str) {
    let item = items
        .iter()
        .find(|i| i.title == title)
        .unwrap_or_else(|| panic!("no pending item '{title}'"));
    engine
        .answer_gate(&item.id, GateAnswer::approve())
        .await
        .expect("the answer is journaled");
}

/// The most children of `run` ever in flight at once, read from its journal.
fn most_in_flight(engine: &Engine, run: RunId) -> (usize, usize) {
    let (mut now, mut most, mut started) = (0usize, 0usize, 0usize);
    for e in engine.journal(run).expect("the journal reads") {
        match e.record {
            Record::ChildStarted { .. } => {
                now += 1;
                started += 1;
                most = most.max(now);
            }
            Record::ChildFinished { .. } => now -= 1,
            _ => {}
        }
    }
    (most, started)
}

#[tokio::test]
async fn the_window_takes_completions_in_journal_order_and_replays_after_a_restart() {
    let store = Arc::new(MemoryStore::new());
    let first = engine(&store).await;
    let run = first
        .start(StartRequest::code("window", Value::Null))
        .await
        .unwrap();
    // Items 0 and 1 are in flight; 1 ends first, which lets item 2 start.
    let items = pending(&first, 2).await;
    answer(&first, &items, "item 1").await;
    let items = pending(&first, 2).await;
    assert!(items.iter().any(|i| i.title == "item 2"), "{items:?}");
    drop(first);

    // A new engine replays the parent mid-window: no child starts twice.
    let second = engine(&store).await;
    let items = pending(&second, 2).await;
    answer(&second, &items, "item 2").await;
    let items = pending(&second, 2).await;
    answer(&second, &items, "item 3").await;
    let items = pending(&second, 1).await;
    answer(&second, &items, "item 0").await;
    let view = second.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(view.result, Some(json!([1, 2, 3, 0])));
    let (most, started) = most_in_flight(&second, run);
    assert_eq!(most, 2, "never more than two children at once");
    assert_eq!(started, 4, "each child started once");
}

#[tokio::test]
async fn children_left_in_the_window_keep_running_until_dropped() {
    // Taking the first completion leaves the other child in the window, still running: the
    // parent then waits for it too.
    let parent = WorkflowRegistration::new("first", "", |ctx, _| async move {
        let mut pending = vec![
            ctx.child(ChildRequest::code("child", json!(0))),
            ctx.child(ChildRequest::code("child", json!(1))),
        ];
        let (i, done) = ctx.next_completed(&mut pending).await;
        let still = pending.len();
        let (_, other) = ctx.next_completed(&mut pending).await;
        Ok(json!([i, done.result, still, other.result]))
    });
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::builder()
        .store(store.clone())
        .workflow(gated_child())
        .workflow(parent)
        .build()
        .await
        .unwrap();
    let run = engine
        .start(StartRequest::code("first", Value::Null))
        .await
        .unwrap();
    let items = pending(&engine, 2).await;
    answer(&engine, &items, "item 1").await;
    let items = pending(&engine, 1).await;
    answer(&engine, &items, "item 0").await;
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.result, Some(json!([1, 1, 1, 0])));
}
