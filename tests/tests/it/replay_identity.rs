//! Replay identity: a run interrupted at a random moment and recovered by a fresh engine ends
//! with the journal an uninterrupted run writes, and never rewrites what it had journaled.
//!
//! Method. One registered workflow, `shape_flow`, interprets a random *shape* (its input): a
//! sequence of tasks, joins of 2–4 tasks, selects (a task against an hour-long timer, so the
//! winner is the same in every run), short durable sleeps, approval gates answered from
//! outside, and `now()`/`random()` side effects.
//! 1. The *reference*: the shape runs uninterrupted on its own `MemoryStore`.
//! 2. The *interruption*: the shape runs on a shared `Arc<MemoryStore>` in a dedicated tokio
//!    runtime, which is shut down (`shutdown_background`) at a random moment within the time the
//!    reference took (an in-process stop, not a killed process: the SIGKILL tests are in
//!    `crash_recovery.rs`); once that engine has let go of the store (its writer thread has
//!    drained and exited), the journal is snapshotted.
//! 3. The *recovery*: a second engine is built on the same store (`recover(true)`) and runs the
//!    shape to its end.
//!
//! Properties:
//! - the snapshot is a prefix of the final journal, byte for byte (append-only, never
//!   rewritten; timestamps included);
//! - per step (and for the step-less records), the final journal holds the same records as the
//!   reference, in the same order, once timestamps, timer due times and side-effect values are
//!   blanked (joined tasks finish in any order, so the interleaving *between* steps may differ),
//!   apart from the one record recovery adds by design: a `TaskRestartedRecord` (execution 2)
//!   for each task attempt the snapshot shows started and unfinished, and for no other;
//! - the result carries, for each `now()`/`random()`, exactly the value journaled for that step
//!   (replay returns the journaled value, it does not draw a new one), and the deterministic
//!   rest of the result equals the reference's.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use magrathea::core::{MemoryStore, Store};
use magrathea::prelude::*;
use magrathea::{Entry, Record};
use magrathea_tests::{runtime, wait_for_blocking};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One node of a workflow shape.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Node {
    Task(u64),
    Join(Vec<u64>),
    Select(u64),
    Sleep(u64),
    Gate,
    Now,
    Random,
}

#[task]
async fn rid_task(x: u64) -> Result<u64, TaskError> {
    tokio::time::sleep(Duration::from_millis(1 + x % 4)).await;
    Ok(x * 3 + 1)
}

#[workflow]
async fn shape_flow(ctx: Context, shape: Vec<Node>) -> Result<Vec<Value>, WorkflowError> {
    let mut out = Vec::new();
    for node in shape {
        out.push(match node {
            Node::Task(x) => json!(ctx.task(rid_task, x).await?),
            Node::Join(xs) => {
                let all = futures::future::join_all(xs.iter().map(|x| ctx.task(rid_task, *x)));
                let mut values = Vec::new();
                for r in all.await {
                    values.push(r?);
                }
                json!(values)
            }
            Node::Select(x) => {
                let task = ctx.task(rid_task, x).map(|r| r.map(Some));
                let hour = ctx
                    .sleep(Duration::from_secs(3600))
                    .map(|r| r.map(|()| None));
                let (i, v) = ctx.select(vec![task, hour]).await;
                json!([i, v?])
            }
            Node::Sleep(ms) => {
                ctx.sleep(Duration::from_millis(ms)).await?;
                json!("slept")
            }
            Node::Gate => match ctx.gate(Gate::approval("shape gate").into_spec()).await {
                GateOutcome::Answered(a) => a.value,
                other => return Err(WorkflowError::failed(format!("{other:?}"))),
            },
            Node::Now => json!({ "now": ctx.now() }),
            Node::Random => json!({ "random": ctx.random() }),
        });
    }
    Ok(out)
}

fn node() -> impl Strategy<Value = Node> {
    prop_oneof![
        3 => (0u64..100).prop_map(Node::Task),
        2 => prop::collection::vec(0u64..100, 2..=4).prop_map(Node::Join),
        1 => (0u64..100).prop_map(Node::Select),
        1 => (1u64..5).prop_map(Node::Sleep),
        1 => Just(Node::Gate),
        1 => Just(Node::Now),
        1 => Just(Node::Random),
    ]
}

/// Answers every pending gate once, until the engine's runtime stops.
fn spawn_answerer(engine: Engine) {
    tokio::spawn(async move {
        let mut answered = HashSet::new();
        loop {
            if let Ok(items) = engine.inbox(magrathea_core::InboxFilter::Pending) {
                for item in items {
                    if answered.insert(item.id.clone()) {
                        let _ = engine.answer_gate(&item.id, GateAnswer::approve()).await;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    });
}

async fn engine_on(store: Arc<dyn Store>) -> Engine {
    let engine = Engine::builder()
        .store(store)
        .workflow(shape_flow)
        .task(rid_task)
        .build()
        .await
        .unwrap();
    spawn_answerer(engine.clone());
    engine
}

/// Blanks what legitimately differs between two runs of one shape.
fn normalise(record: &Record) -> String {
    let mut r = record.clone();
    match &mut r {
        Record::TimerSet { fire_at_ms, .. } => *fire_at_ms = 0,
        Record::SideEffect { value, .. } => *value = Value::Null,
        Record::Result {
            result: Value::Array(items),
            ..
        } => {
            for item in items {
                if item.get("now").is_some() || item.get("random").is_some() {
                    *item = Value::Null;
                }
            }
        }
        _ => {}
    }
    format!("{r:?}")
}

fn step_of(record: &Record) -> Option<u32> {
    match record {
        Record::TaskStarted { step, .. }
        | Record::TaskResult { step, .. }
        | Record::TimerSet { step, .. }
        | Record::TimerFired { step }
        | Record::GateOpened { step, .. }
        | Record::GateAnswered { step, .. }
        | Record::SideEffect { step, .. }
        | Record::Ignored { step, .. } => Some(*step),
        _ => None,
    }
}

/// `(step, attempt, 2)` of each task attempt `journal` shows started and without a result,
/// sorted: the executions a recovery must put on record.
fn interrupted(journal: &[Entry]) -> Vec<(u32, u32, u32)> {
    let finished = |step: u32, attempt: u32| {
        journal.iter().any(|e| {
            matches!(&e.record, Record::TaskResult { step: s, attempt: a, .. }
                if *s == step && *a == attempt)
        })
    };
    let mut attempts: Vec<(u32, u32, u32)> = journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::TaskStarted { step, attempt, .. } if !finished(*step, *attempt) => {
                Some((*step, *attempt, 2))
            }
            _ => None,
        })
        .collect();
    attempts.sort_unstable();
    attempts
}

/// `(step, attempt, execution)` of each `TaskRestartedRecord` in `journal`, sorted.
fn restarts(journal: &[Entry]) -> Vec<(u32, u32, u32)> {
    let mut restarts: Vec<(u32, u32, u32)> = journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::TaskRestarted {
                step,
                attempt,
                execution,
                ..
            } => Some((*step, *attempt, *execution)),
            _ => None,
        })
        .collect();
    restarts.sort_unstable();
    restarts
}

fn by_step(journal: &[Entry]) -> BTreeMap<Option<u32>, Vec<String>> {
    let mut map: BTreeMap<Option<u32>, Vec<String>> = BTreeMap::new();
    for e in journal {
        map.entry(step_of(&e.record))
            .or_default()
            .push(normalise(&e.record));
    }
    map
}

fn result_of(journal: &[Entry]) -> Vec<Value> {
    journal
        .iter()
        .find_map(|e| match &e.record {
            Record::Result { result, .. } => serde_json::from_value(result.clone()).ok(),
            _ => None,
        })
        .expect("a ResultRecord")
}

/// Runs `shape` to its end; with `stop_after`, shuts the first engine's runtime down that long
/// after the start and finishes with a second engine. Returns the journal at the stop (empty
/// without one) and the final journal.
fn run_to_end(shape: &[Node], stop_after: Option<Duration>) -> (Vec<Entry>, Vec<Entry>) {
    let mem = Arc::new(MemoryStore::new());
    let store: Arc<dyn Store> = mem.clone();
    let finish = async |engine: Engine, run: RunId| {
        let view = tokio::time::timeout(Duration::from_secs(20), engine.wait(run))
            .await
            .expect("the run finishes")
            .unwrap();
        assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
        engine.journal(run).unwrap()
    };
    let rt = runtime();
    let Some(stop_after) = stop_after else {
        let journal = rt.block_on(async {
            let engine = engine_on(store.clone()).await;
            let run = engine.start(shape_flow, shape.to_vec()).await.unwrap().id();
            finish(engine, run).await
        });
        rt.shutdown_background();
        return (Vec::new(), journal);
    };
    let run = rt.block_on(async {
        let engine = engine_on(store.clone()).await;
        engine.start(shape_flow, shape.to_vec()).await.unwrap().id()
    });
    std::thread::sleep(stop_after);
    rt.shutdown_background();
    wait_for_blocking(
        "the stopped engine to let go of the store",
        Duration::from_secs(10),
        || Arc::strong_count(&mem) == 2,
    );
    let snapshot = store.read_journal(run).unwrap();
    let rt = runtime();
    let journal = rt.block_on(async {
        let engine = engine_on(store.clone()).await;
        finish(engine, run).await
    });
    rt.shutdown_background();
    (snapshot, journal)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn a_recovered_run_reproduces_the_uninterrupted_journal(
        shape in prop::collection::vec(node(), 1..6),
        stop_permille in 0u32..1000,
    ) {
        let began = std::time::Instant::now();
        let (_, reference) = run_to_end(&shape, None);
        // Stop somewhere within the time an uninterrupted run takes.
        let stop_after = began.elapsed().mul_f64(f64::from(stop_permille) / 1000.0);
        let (snapshot, recovered) = run_to_end(&shape, Some(stop_after));

        eprintln!(
            "stopped after {stop_after:?}: {} of {} records journaled before it",
            snapshot.len(),
            recovered.len()
        );
        prop_assert!(!snapshot.is_empty(), "the start was acknowledged before the stop");
        prop_assert!(
            recovered.len() >= snapshot.len() && recovered[..snapshot.len()] == snapshot[..],
            "the journal at the stop is not a prefix of the final journal"
        );
        prop_assert!(recovered.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
        // Recovery re-executes exactly the attempts the stop interrupted, each once on record.
        prop_assert_eq!(
            restarts(&recovered),
            interrupted(&snapshot),
            "one re-execution record (execution 2) per interrupted attempt"
        );
        let without_restarts: Vec<Entry> = recovered
            .iter()
            .filter(|e| !matches!(e.record, Record::TaskRestarted { .. }))
            .cloned()
            .collect();
        prop_assert_eq!(by_step(&without_restarts), by_step(&reference));

        let result = result_of(&recovered);
        let side_effects: Vec<&Value> = recovered
            .iter()
            .filter_map(|e| match &e.record {
                Record::SideEffect { value, .. } => Some(value),
                _ => None,
            })
            .collect();
        let reported: Vec<&Value> = result
            .iter()
            .filter_map(|v| v.get("now").or_else(|| v.get("random")))
            .collect();
        prop_assert_eq!(reported, side_effects, "replay returns the journaled values");
    }
}
