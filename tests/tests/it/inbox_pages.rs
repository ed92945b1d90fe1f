//! The inbox a page at a time: pages walk every item once, oldest first, within an item limit
//! and a byte budget; a cursor outlives the answer of its item; a cursor the caller may not
//! see is refused; and a paused or evicted run's pending item stays listed.

use std::time::Duration;

use magrathea::prelude::*;
use magrathea::{InboxFilter, InboxItem, InboxPageError, InboxPageRequest, RunFilter, RunId};
use magrathea_tests::wait_for;

/// Opens an approval whose body is `body`, and ends with the answer.
#[workflow]
async fn ask(ctx: Context, body: String) -> Result<String, WorkflowError> {
    match ctx
        .gate(Gate::approval("ship?").body(body).into_spec())
        .await
    {
        GateOutcome::Answered(a) => Ok(format!("answered {}", a.value["approved"])),
        GateOutcome::TimedOut => Ok("timed out".into()),
        GateOutcome::Cancelled(r) => Err(WorkflowError::cancelled(r)),
    }
}

async fn engine() -> Engine {
    Engine::builder()
        .in_memory()
        .workflow(ask)
        .build()
        .await
        .unwrap()
}

/// Starts one `ask` per body, in order, and waits until each has opened its gate.
async fn asking(engine: &Engine, bodies: &[String]) -> Vec<RunId> {
    let mut runs = Vec::new();
    for body in bodies {
        let run = engine.start(ask, body.clone()).await.unwrap().id();
        wait_for("the gate to open", Duration::from_secs(10), || {
            engine.status(run).unwrap() == RunStatus::Waiting
        })
        .await;
        runs.push(run);
    }
    runs
}

fn request(after: Option<String>, limit: usize, max_bytes: usize) -> InboxPageRequest {
    InboxPageRequest {
        filter: InboxFilter::Pending,
        runs: RunFilter::default(),
        after,
        limit,
        max_bytes,
    }
}

/// Every page from the first, with `limit` and `max_bytes`.
fn walk(engine: &Engine, limit: usize, max_bytes: usize) -> Vec<Vec<InboxItem>> {
    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let page = engine
            .core()
            .inbox_page(&request(after, limit, max_bytes), |_| true, |_| true)
            .unwrap();
        pages.push(page.items);
        match page.next {
            Some(next) => after = Some(next),
            None => return pages,
        }
        assert!(pages.len() < 100, "the pages never end");
    }
}

fn ids(items: &[InboxItem]) -> Vec<String> {
    items.iter().map(|i| i.id.clone()).collect()
}

fn json_len(item: &InboxItem) -> usize {
    serde_json::to_vec(item).unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_walk_every_pending_item_once_oldest_first_within_limit_and_bytes() {
    let engine = engine().await;
    let bodies: Vec<String> = (0..5).map(|n| format!("{n}").repeat(300_000)).collect();
    asking(&engine, &bodies).await;
    let whole = engine.core().inbox(InboxFilter::Pending).unwrap();
    assert_eq!(whole.len(), 5);

    // By count: pages of two.
    let pages = walk(&engine, 2, usize::MAX);
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![2, 2, 1]
    );
    assert_eq!(ids(&pages.concat()), ids(&whole));

    // By bytes: two 300 KB items fit in 700 KB, a third does not.
    let pages = walk(&engine, 1000, 700_000);
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![2, 2, 1]
    );
    for page in &pages {
        assert!(page.iter().map(json_len).sum::<usize>() <= 700_000);
    }
    assert_eq!(ids(&pages.concat()), ids(&whole));

    // An item larger than the budget still makes a page of its own.
    let pages = walk(&engine, 1000, 10);
    assert_eq!(pages.len(), 5);
    assert!(pages.iter().all(|p| p.len() == 1));
    assert_eq!(ids(&pages.concat()), ids(&whole));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_outlives_the_answer_of_its_item() {
    let engine = engine().await;
    let runs = asking(&engine, &["a".into(), "b".into(), "c".into()]).await;
    let first = engine
        .core()
        .inbox_page(&request(None, 1, usize::MAX), |_| true, |_| true)
        .unwrap();
    assert_eq!(first.items[0].workflow_run_id, runs[0]);
    let cursor = first.next.expect("a next page");

    engine
        .answer_gate(&first.items[0].id, GateAnswer::approve())
        .await
        .unwrap();
    engine.wait(runs[0]).await.unwrap();

    let second = engine
        .core()
        .inbox_page(&request(Some(cursor), 1, usize::MAX), |_| true, |_| true)
        .unwrap();
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.items[0].workflow_run_id, runs[1]);
    assert!(second.next.is_some(), "the third item is still to come");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_the_caller_may_not_see_is_refused() {
    let engine = engine().await;
    let runs = asking(&engine, &["a".into(), "b".into()]).await;
    let item = format!("{}-", runs[0]);
    let item = engine
        .core()
        .inbox(InboxFilter::Pending)
        .unwrap()
        .into_iter()
        .find(|i| i.id.starts_with(&item))
        .unwrap();

    for after in ["nope".to_owned(), format!("{}-99", runs[1])] {
        let refused = engine
            .core()
            .inbox_page(
                &request(Some(after.clone()), 10, usize::MAX),
                |_| true,
                |_| true,
            )
            .unwrap_err();
        assert!(
            matches!(&refused, InboxPageError::UnknownCursor(c) if *c == after),
            "{refused:?}"
        );
    }
    // The item exists, but its run is outside what the caller may see.
    let foreign = engine
        .core()
        .inbox_page(
            &request(Some(item.id.clone()), 10, usize::MAX),
            |s| s.run_id != runs[0],
            |_| true,
        )
        .unwrap_err();
    assert!(
        matches!(foreign, InboxPageError::UnknownCursor(_)),
        "{foreign:?}"
    );
    // The same cursor for a caller who may see it.
    let page = engine
        .core()
        .inbox_page(&request(Some(item.id), 10, usize::MAX), |_| true, |_| true)
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].workflow_run_id, runs[1]);
    assert_eq!(page.next, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_or_evicted_runs_pending_item_stays_listed() {
    let engine = Engine::builder()
        .in_memory()
        .evict_after(Duration::from_millis(20))
        .workflow(ask)
        .build()
        .await
        .unwrap();
    let runs = asking(&engine, &["paused".into(), "evicted".into()]).await;
    engine
        .core()
        .pause(runs[0], "ops", Some("holiday"))
        .await
        .unwrap();
    assert_eq!(engine.status(runs[0]).unwrap(), RunStatus::Paused);
    wait_for("the runs to leave memory", Duration::from_secs(10), || {
        engine.core().runs_in_memory() == 0
    })
    .await;

    let listed: Vec<RunId> = engine
        .core()
        .inbox(InboxFilter::Pending)
        .unwrap()
        .iter()
        .map(|i| i.workflow_run_id)
        .collect();
    assert_eq!(listed, runs);
    let page = engine
        .core()
        .inbox_page(&request(None, 10, usize::MAX), |_| true, |_| true)
        .unwrap();
    assert_eq!(
        page.items
            .iter()
            .map(|i| i.workflow_run_id)
            .collect::<Vec<_>>(),
        runs
    );
}
