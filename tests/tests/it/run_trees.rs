//! One start cannot grow into an unbounded tree of runs: a workflow that starts itself
//! several times per level stays inside every bound of its own runs (spawns, journal, depth)
//! while the tree multiplies, so the engine bounds the runs one tree may hold
//! (`EngineBuilder::max_runs_per_tree`, 10,000 by default): a child beyond it is not started
//! and its step fails with `[MAG-CH003]`.
//! - a code workflow that starts two of itself per level, eight levels deep (511 runs
//!   unbounded), and a YAML `foreach_task` that starts four of itself per level with its
//!   failures tolerated (5,461 runs unbounded) stop at the bound;
//! - children that ended still count while their root runs; a new root counts afresh.

use std::path::PathBuf;
use std::time::Duration;

use magrathea::prelude::*;
use magrathea::yaml::{DocumentSource, YamlRuntime};
use magrathea::{EngineBuilder, Record, RunFilter, RunView};
use serde_json::json;

/// Starts two of itself, each one level deeper, until `depth` reaches 8.
#[workflow]
async fn fork(ctx: Context, depth: u32) -> Result<u32, WorkflowError> {
    if depth >= 8 {
        return Ok(1);
    }
    let (a, b) = futures::join!(ctx.child(fork, depth + 1), ctx.child(fork, depth + 1));
    Ok(a? + b? + 1)
}

/// Starts `n` children one after another, each ending before the next starts.
#[workflow]
async fn serial(ctx: Context, n: u32) -> Result<u32, WorkflowError> {
    for _ in 0..n {
        ctx.child(leaf, ()).await?;
    }
    Ok(n)
}

#[workflow]
async fn leaf(_ctx: Context, _input: ()) -> Result<(), WorkflowError> {
    Ok(())
}

/// Runs four of itself per level, their failures tolerated: only a bound stops it.
const SPREAD: &str = r#"
start: spread
states:
  spread:
    type: foreach_task
    items: [1, 2, 3, 4]
    workflow: spread
    toleratedFailures: "100%"
    storeAs: out
    on: { success: done, failure: done }
  done: { type: terminal, result: spread }
"#;

struct Setup {
    _dir: tempfile::TempDir,
    engine: Engine,
    runtime: YamlRuntime,
    scope: magrathea::yaml::Scope,
}

impl Setup {
    /// An in-memory engine with the workflows above and the YAML project `acme/shop` holding
    /// `spread` (nested at most six deep), built with `configure`.
    async fn new(configure: impl FnOnce(EngineBuilder) -> EngineBuilder) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let project: PathBuf = dir.path().join("acme").join("shop");
        std::fs::create_dir_all(project.join("_vance/workflows")).unwrap();
        std::fs::write(project.join("_vance/workflows/spread.yaml"), SPREAD).unwrap();
        std::fs::write(
            project.join("_vance/settings.yaml"),
            "subRuns:\n  maxDepth: 6\n",
        )
        .unwrap();
        let (source, scope) = DocumentSource::for_project_dir(&project);
        let runtime = YamlRuntime::new(source);
        let rt = runtime.clone();
        let builder = Engine::builder()
            .in_memory()
            .workflow(fork)
            .workflow(serial)
            .workflow(leaf);
        let engine = configure(builder)
            .with_core(|b| rt.install(b))
            .build()
            .await
            .unwrap();
        Self {
            _dir: dir,
            engine,
            runtime,
            scope,
        }
    }

    async fn ended(&self, run: RunId) -> RunView {
        tokio::time::timeout(Duration::from_secs(60), self.engine.wait(run))
            .await
            .unwrap_or_else(|_| panic!("run {run} did not end"))
            .unwrap()
    }

    fn runs_of(&self, workflow: &str) -> Vec<magrathea::RunSummary> {
        self.engine
            .list_runs(&RunFilter {
                workflow: Some(workflow.into()),
                limit: 0,
                ..Default::default()
            })
            .unwrap()
    }

    /// The reasons of the child steps whose child was not started for the tree's bound.
    fn refusals(&self, runs: &[magrathea::RunSummary]) -> Vec<String> {
        runs.iter()
            .flat_map(|r| self.engine.journal(r.run_id).unwrap())
            .filter_map(|e| match e.record {
                Record::ChildFinished {
                    status: RunStatus::Failed,
                    reason: Some(reason),
                    ..
                } if reason.starts_with("[MAG-CH003]") => Some(reason),
                _ => None,
            })
            .collect()
    }
}

/// The run failed because a child did not fit in its tree.
#[track_caller]
fn failed_for_its_tree(view: &RunView) {
    assert_eq!(view.status, RunStatus::Failed, "{view:?}");
    assert!(
        view.reason
            .as_deref()
            .unwrap_or_default()
            .contains("[MAG-CH003] the tree of runs under root run"),
        "{view:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_workflow_that_forks_itself_stops_at_the_bound_of_its_tree() {
    let s = Setup::new(|b| b.max_runs_per_tree(20)).await;
    let root = s.engine.start(fork, 0).await.unwrap().id();
    let view = s.ended(root).await;
    // The root's reason carries the cause up.
    failed_for_its_tree(&view);
    let runs = s.runs_of("fork");
    assert_eq!(runs.len(), 21, "the root and 20 children, of 511 unbounded");
    let refusals = s.refusals(&runs);
    assert!(!refusals.is_empty());
    assert!(
        refusals[0].contains(&format!(
            "the tree of runs under root run {root} holds 20 sub-runs, the most one tree may hold (20)"
        )),
        "{}",
        refusals[0]
    );
    assert!(refusals[0].contains("cannot start a child `fork`"));
    // Every run of the tree ended: failed, or cancelled with its failing parent.
    for r in &runs {
        assert!(r.status.is_terminal(), "{r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yaml_foreach_that_spreads_itself_stops_at_the_bound_of_its_tree() {
    let s = Setup::new(|b| b.max_runs_per_tree(29)).await;
    let root = s
        .runtime
        .start(s.engine.core(), &s.scope, "spread", json!({}), "test")
        .await
        .unwrap();
    let view = s.ended(root).await;
    // Its refused items are tolerated failures: the tree finishes, within the bound.
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    let runs = s.runs_of("spread");
    assert_eq!(
        runs.len(),
        30,
        "the root and 29 sub-runs, of 5,461 unbounded"
    );
    assert!(runs.iter().all(|r| r.status == RunStatus::Done), "{runs:?}");
    assert!(!s.refusals(&runs).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_that_ended_count_until_their_root_ends_and_a_new_root_counts_afresh() {
    let s = Setup::new(|b| b.max_runs_per_tree(4)).await;
    // Four children one after another fill a tree's four places (the root takes none).
    let first = s.engine.start(serial, 4).await.unwrap().id();
    assert_eq!(s.ended(first).await.status, RunStatus::Done);
    // A fifth does not fit, although none of the four is active any more.
    let second = s.engine.start(serial, 5).await.unwrap().id();
    let view = s.ended(second).await;
    failed_for_its_tree(&view);
    let children_of = |root: RunId| {
        s.runs_of("leaf")
            .iter()
            .filter(|r| r.parent == Some(root))
            .count()
    };
    assert_eq!(children_of(first), 4);
    assert_eq!(children_of(second), 4, "the fifth child was not started");
}

/// Sleeps two seconds.
#[workflow]
async fn nap(ctx: Context, _input: ()) -> Result<(), WorkflowError> {
    ctx.sleep(Duration::from_secs(2)).await?;
    Ok(())
}

/// Three naps at once, then one more child.
#[workflow]
async fn naps(ctx: Context, _input: ()) -> Result<(), WorkflowError> {
    let (a, b, c) = futures::join!(ctx.child(nap, ()), ctx.child(nap, ()), ctx.child(nap, ()));
    a?;
    b?;
    c?;
    ctx.child(leaf, ()).await?;
    Ok(())
}

/// Runs `f` with an engine (a tree bound of 3 sub-runs) on `db` in its own runtime, then shuts that
/// runtime down: a restart.
fn incarnation<T>(db: &std::path::Path, f: impl AsyncFnOnce(Engine) -> T) -> T {
    magrathea_tests::incarnation(
        || {
            Engine::builder()
                .path(db)
                .max_runs_per_tree(3)
                .workflow(naps)
                .workflow(nap)
                .workflow(leaf)
        },
        f,
    )
}

#[test]
fn after_a_restart_a_tree_counts_its_recovered_children() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let root = incarnation(&db, async |engine| {
        let root = engine.start(naps, ()).await.unwrap().id();
        magrathea_tests::wait_for("three naps asleep", Duration::from_secs(10), || {
            let asleep = engine
                .list_runs(&RunFilter {
                    workflow: Some("nap".into()),
                    ..Default::default()
                })
                .unwrap()
                .iter()
                .filter(|r| {
                    engine.journal(r.run_id).is_ok_and(|j| {
                        j.iter()
                            .any(|e| matches!(e.record, Record::TimerSet { .. }))
                    })
                })
                .count();
            asleep == 3
        })
        .await;
        root
    });
    // The naps are recovered and count again: the three fill the tree's three places.
    incarnation(&db, async |engine| {
        let view = tokio::time::timeout(Duration::from_secs(30), engine.wait(root))
            .await
            .expect("the root ends")
            .unwrap();
        failed_for_its_tree(&view);
        let leaves = engine
            .list_runs(&RunFilter {
                workflow: Some("leaf".into()),
                ..Default::default()
            })
            .unwrap();
        assert!(leaves.is_empty(), "{leaves:?}");
    });
}
