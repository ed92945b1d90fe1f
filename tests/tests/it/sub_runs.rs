//! Sub-runs live and die with their parent (issue 10, part 4), through the library:
//! - cancelling a YAML run cancels its `workflow_task` sub-run and that one's sub-run, each
//!   cancellation journaled in both runs, and the grandchild's inbox item closes;
//! - a code `ctx.child` is cancelled with its parent;
//! - a `workflow_task` whose `timeoutSeconds` fires cancels its sub-run, and the parent routes
//!   `timeout`;
//! - a parent that ends (failed by bounds exhaustion, or by its code) while a child runs
//!   cancels the child;
//! - a workflow that starts itself stops at the nesting depth limit with `[MAG-CH002]`, for
//!   YAML (`subRuns.maxDepth` in the project settings) and code
//!   (`EngineBuilder::max_child_depth`), by default at 32.
//!
//! The crash between a parent's record and its child's cancellation is in `sub_run_crash.rs`.

use std::path::PathBuf;
use std::time::Duration;

use magrathea::prelude::*;
use magrathea::yaml::{DocumentSource, Scope, YamlRuntime};
use magrathea::{CancelAck, EngineBuilder, InboxFilter, InboxStatus, Record, RunFilter, RunView};
use magrathea_tests::wait_for;
use serde_json::{Value, json};

// ---- code workflows ---------------------------------------------------------------------------

/// Sleeps a week: only a cancellation ends it early.
#[workflow]
async fn sleeper(ctx: Context, _name: String) -> Result<String, WorkflowError> {
    ctx.sleep(Duration::from_secs(7 * 24 * 3600)).await?;
    Ok("slept".into())
}

/// Waits for a `sleeper` child.
#[workflow]
async fn holder(ctx: Context, name: String) -> Result<String, WorkflowError> {
    Ok(ctx.child(sleeper, name).await?)
}

/// Gives a `sleeper` child `ms` milliseconds, then gives up and fails.
#[workflow]
async fn impatient(ctx: Context, ms: u64) -> Result<String, WorkflowError> {
    let child = ctx.child(sleeper, "late".into()).map(|r| r.ok());
    let timer = ctx.sleep(Duration::from_millis(ms)).map(|_| None);
    match ctx.select(vec![child, timer]).await {
        (_, Some(done)) => Ok(done),
        (_, None) => Err(WorkflowError::failed("gave up waiting")),
    }
}

/// Starts itself, one level deeper each time: only the depth limit stops it.
#[workflow]
async fn recurse(ctx: Context, depth: u32) -> Result<u32, WorkflowError> {
    Ok(ctx.child(recurse, depth + 1).await?)
}

// ---- YAML documents ---------------------------------------------------------------------------

/// A workflow that runs `child` as its sub-run and ends when it does.
fn calls(child: &str) -> String {
    format!(
        r#"
start: call
states:
  call:
    type: workflow_task
    workflow: {child}
    on:
      success: done
  done: {{ type: terminal }}
"#
    )
}

/// Asks a person; nobody answers in these tests.
const ASK: &str = r#"
start: ask
states:
  ask:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Deep enough?" }
    on:
      approved: done
  done: { type: terminal }
"#;

/// Gives its `ask` sub-run 0.3 s, then routes `timeout` through a short timer to `late`.
const HURRIED: &str = r#"
start: call
states:
  call:
    type: workflow_task
    workflow: ask
    timeoutSeconds: 0.3
    on:
      success: done
    catch:
      timeout: cool_down
  cool_down:
    type: timer_task
    duration: 50ms
    on:
      fired: late
  done: { type: terminal, result: answered }
  late: { type: terminal, result: timed out }
"#;

/// Its wall-clock bound is exhausted by the time its sub-run's timeout fires.
const BOUNDED: &str = r#"
start: call
bounds:
  maxWallclockSeconds: 0.1
states:
  call:
    type: workflow_task
    workflow: ask
    timeoutSeconds: 0.3
    on:
      success: done
    catch:
      timeout: done
  done: { type: terminal }
"#;

/// Starts itself; a sub-run that fails (the depth limit) is routed to `failed`.
const RECURSE: &str = r#"
start: again
states:
  again:
    type: workflow_task
    workflow: recurse
    storeAs: sub
    on:
      success: done
      failure: failed
  done: { type: terminal, result: deeper }
  failed: { type: terminal, outcome: failure, result: "${state.sub.reason}" }
"#;

// ---- set-up -----------------------------------------------------------------------------------

struct Setup {
    _dir: tempfile::TempDir,
    engine: Engine,
    runtime: YamlRuntime,
    scope: Scope,
}

impl Setup {
    /// A YAML project (`<tmp>/acme/shop`) with `docs` and, if given, `_vance/settings.yaml`;
    /// an in-memory engine with the code workflows above and whatever `configure` adds.
    async fn new(
        docs: &[(&str, &str)],
        settings: Option<&str>,
        configure: impl FnOnce(EngineBuilder) -> EngineBuilder,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let project: PathBuf = dir.path().join("acme").join("shop");
        std::fs::create_dir_all(project.join("_vance/workflows")).unwrap();
        for (name, body) in docs {
            std::fs::write(
                project
                    .join("_vance/workflows")
                    .join(format!("{name}.yaml")),
                body,
            )
            .unwrap();
        }
        if let Some(settings) = settings {
            std::fs::write(project.join("_vance/settings.yaml"), settings).unwrap();
        }
        let (source, scope) = DocumentSource::for_project_dir(&project);
        let runtime = YamlRuntime::new(source);
        let builder = Engine::builder()
            .in_memory()
            .workflow(sleeper)
            .workflow(holder)
            .workflow(impatient)
            .workflow(recurse);
        let rt = runtime.clone();
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

    async fn start_yaml(&self, name: &str) -> RunId {
        self.runtime
            .start(self.engine.core(), &self.scope, name, json!({}), "test")
            .await
            .unwrap()
    }

    /// The only run of `workflow`, once it exists.
    async fn only_run_of(&self, workflow: &str) -> RunId {
        let mut found = None;
        wait_for(
            &format!("a run of `{workflow}`"),
            Duration::from_secs(10),
            || {
                found = self.runs_of(workflow).first().copied();
                found.is_some()
            },
        )
        .await;
        found.unwrap()
    }

    fn runs_of(&self, workflow: &str) -> Vec<RunId> {
        self.engine
            .list_runs(&RunFilter {
                workflow: Some(workflow.into()),
                ..Default::default()
            })
            .unwrap()
            .into_iter()
            .map(|s| s.run_id)
            .collect()
    }

    async fn ended(&self, run: RunId) -> RunView {
        tokio::time::timeout(Duration::from_secs(20), self.engine.wait(run))
            .await
            .unwrap_or_else(|_| panic!("run {run} did not end"))
            .unwrap()
    }

    async fn waiting(&self, run: RunId) {
        tokio::time::timeout(
            Duration::from_secs(10),
            self.engine
                .wait_until(run, |s| s == RunStatus::Waiting || s.is_terminal()),
        )
        .await
        .expect("the run waits")
        .unwrap();
        assert_eq!(self.engine.status(run).unwrap(), RunStatus::Waiting);
    }

    fn journal(&self, run: RunId) -> Vec<magrathea::Entry> {
        self.engine.journal(run).unwrap()
    }
}

/// The reason of the `ChildCancelRequestedRecord` in `parent`'s journal for `child`, and when
/// it was appended. Exactly one.
fn child_cancel_record(journal: &[magrathea::Entry], child: RunId) -> (String, u64) {
    let found: Vec<_> = journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::ChildCancelRequested {
                child_run_id,
                reason,
                ..
            } if *child_run_id == child => Some((reason.clone(), e.at_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one ChildCancelRequestedRecord for {child}: {journal:#?}"
    );
    found.into_iter().next().unwrap()
}

/// The reason of the run's `CancelRequestedRecord`, and when it was appended. Exactly one.
fn cancel_record(journal: &[magrathea::Entry]) -> (String, u64) {
    let found: Vec<_> = journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::CancelRequested { reason } => Some((reason.clone(), e.at_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(found.len(), 1, "one CancelRequestedRecord: {journal:#?}");
    found.into_iter().next().unwrap()
}

/// The step of the `ChildStartedRecord` that started `child`.
fn child_step(journal: &[magrathea::Entry], child: RunId) -> u32 {
    journal
        .iter()
        .find_map(|e| match &e.record {
            Record::ChildStarted {
                step, child_run_id, ..
            } if *child_run_id == child => Some(*step),
            _ => None,
        })
        .expect("the parent journaled the child's start")
}

/// Checks that `parent` journaled the cancellation of `child` on the child's step before the
/// child journaled it, with the same reason; returns that reason.
fn cancelled_by_parent(s: &Setup, parent: RunId, child: RunId) -> String {
    let parent_journal = s.journal(parent);
    let (reason, asked_at) = child_cancel_record(&parent_journal, child);
    let step = child_step(&parent_journal, child);
    assert!(parent_journal.iter().any(|e| matches!(&e.record,
        Record::ChildCancelRequested { step: st, child_run_id, .. } if *st == step && *child_run_id == child)));
    let (child_reason, cancelled_at) = cancel_record(&s.journal(child));
    assert_eq!(
        child_reason, reason,
        "the child journals the reason its parent gave"
    );
    assert!(
        asked_at <= cancelled_at,
        "journal, then act: the parent's record ({asked_at}) comes before the child's ({cancelled_at})"
    );
    reason
}

// ---- cancellation -----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_yaml_run_cancels_its_sub_run_and_theirs_and_closes_their_inbox_items() {
    let s = Setup::new(
        &[
            ("top", &calls("middle")),
            ("middle", &calls("bottom")),
            ("bottom", ASK),
        ],
        None,
        |b| b,
    )
    .await;
    let top = s.start_yaml("top").await;
    let middle = s.only_run_of("middle").await;
    let bottom = s.only_run_of("bottom").await;
    s.waiting(bottom).await;
    let item = s
        .engine
        .inbox(InboxFilter::Pending)
        .unwrap()
        .into_iter()
        .find(|i| i.workflow_run_id == bottom)
        .expect("the grandchild's inbox item");

    assert_eq!(
        s.engine.cancel(top, "stop the tree").await.unwrap(),
        CancelAck::Requested
    );
    for run in [top, middle, bottom] {
        let view = s.ended(run).await;
        assert_eq!(view.status, RunStatus::Cancelled, "{run}: {view:?}");
        assert!(
            view.reason
                .as_deref()
                .unwrap_or("")
                .contains("stop the tree"),
            "{run} says why: {:?}",
            view.reason
        );
    }
    assert_eq!(cancel_record(&s.journal(top)).0, "stop the tree");
    let to_middle = cancelled_by_parent(&s, top, middle);
    assert_eq!(
        to_middle,
        format!("parent run {top} was cancelled: stop the tree")
    );
    let to_bottom = cancelled_by_parent(&s, middle, bottom);
    assert_eq!(
        to_bottom,
        format!("parent run {middle} was cancelled: parent run {top} was cancelled: stop the tree")
    );
    assert!(matches!(
        s.journal(bottom).last().unwrap().record,
        Record::Status {
            status: RunStatus::Cancelled,
            ..
        }
    ));

    // The grandchild's gate closed: its item is no longer pending anywhere.
    assert_eq!(
        s.engine.inbox_item(&item.id).unwrap().status,
        InboxStatus::Closed
    );
    assert!(s.engine.inbox(InboxFilter::Pending).unwrap().is_empty());
    let err = s
        .engine
        .answer_gate(&item.id, GateAnswer::approve())
        .await
        .unwrap();
    assert_eq!(
        err,
        magrathea::AnswerAck::Ignored,
        "a late answer changes nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_child_is_cancelled_with_its_parent() {
    let s = Setup::new(&[], None, |b| b).await;
    let parent = s.engine.start(holder, "towel".into()).await.unwrap().id();
    let child = s.only_run_of("sleeper").await;
    wait_for("the child's sleep", Duration::from_secs(10), || {
        s.journal(child)
            .iter()
            .any(|e| matches!(e.record, Record::TimerSet { .. }))
    })
    .await;
    s.engine.cancel(parent, "no more towels").await.unwrap();
    assert_eq!(s.ended(parent).await.status, RunStatus::Cancelled);
    let view = s.ended(child).await;
    assert_eq!(view.status, RunStatus::Cancelled);
    let reason = cancelled_by_parent(&s, parent, child);
    assert_eq!(
        reason,
        format!("parent run {parent} was cancelled: no more towels")
    );
    assert!(view.reason.unwrap().contains(&reason));
    // Cancelling again changes nothing in either run.
    let before = (s.journal(parent).len(), s.journal(child).len());
    assert_eq!(
        s.engine.cancel(parent, "again").await.unwrap(),
        CancelAck::AlreadyFinished
    );
    assert_eq!((s.journal(parent).len(), s.journal(child).len()), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_task_that_times_out_cancels_its_sub_run_and_routes_timeout() {
    let s = Setup::new(&[("hurried", HURRIED), ("ask", ASK)], None, |b| b).await;
    let parent = s.start_yaml("hurried").await;
    let child = s.only_run_of("ask").await;
    let view = s.ended(parent).await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert_eq!(
        view.result,
        Some(json!("timed out")),
        "the parent routed `timeout`"
    );
    let child_view = s.ended(child).await;
    assert_eq!(child_view.status, RunStatus::Cancelled);
    let reason = cancelled_by_parent(&s, parent, child);
    assert!(
        reason.starts_with(&format!("parent run {parent} stopped waiting for it")),
        "{reason}"
    );
    assert!(
        s.engine.inbox(InboxFilter::Pending).unwrap().is_empty(),
        "the sub-run's inbox item closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_failed_by_bounds_exhaustion_cancels_the_sub_run_it_left() {
    let s = Setup::new(&[("bounded", BOUNDED), ("ask", ASK)], None, |b| b).await;
    let parent = s.start_yaml("bounded").await;
    let child = s.only_run_of("ask").await;
    let view = s.ended(parent).await;
    assert_eq!(view.status, RunStatus::Failed);
    let why = view.reason.unwrap();
    assert!(
        why.starts_with("bounds exhausted: maxWallclockSeconds"),
        "{why}"
    );
    assert_eq!(s.ended(child).await.status, RunStatus::Cancelled);
    // The deadline preempts the sub-run: the child is cancelled when it fires, before the
    // parent ends.
    let reason = cancelled_by_parent(&s, parent, child);
    assert_eq!(
        reason,
        format!("parent run {parent} passed its deadline: {why}")
    );
    let journal = s.journal(parent);
    let asked = journal
        .iter()
        .position(|e| matches!(e.record, Record::ChildCancelRequested { .. }))
        .unwrap();
    let ended = journal
        .iter()
        .position(|e| {
            matches!(
                e.record,
                Record::Status {
                    status: RunStatus::Failed,
                    ..
                }
            )
        })
        .unwrap();
    assert!(asked < ended);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_run_that_ends_while_its_child_runs_cancels_the_child() {
    let s = Setup::new(&[], None, |b| b).await;
    let parent = s.engine.start(impatient, 100).await.unwrap().id();
    let view = s.ended(parent).await;
    assert_eq!(view.status, RunStatus::Failed);
    assert_eq!(view.reason.as_deref(), Some("gave up waiting"));
    let child = s.only_run_of("sleeper").await;
    assert_eq!(s.ended(child).await.status, RunStatus::Cancelled);
    let reason = cancelled_by_parent(&s, parent, child);
    assert_eq!(
        reason,
        format!("parent run {parent} ended FAILED: gave up waiting")
    );
}

// ---- nesting depth ----------------------------------------------------------------------------

/// The runs of `workflow`, root first (each run's parent before it), with their depth.
fn chain(s: &Setup, workflow: &str) -> Vec<RunId> {
    let runs = s
        .engine
        .list_runs(&RunFilter {
            workflow: Some(workflow.into()),
            ..Default::default()
        })
        .unwrap();
    let mut chain: Vec<RunId> = runs
        .iter()
        .filter(|r| r.parent.is_none())
        .map(|r| r.run_id)
        .collect();
    assert_eq!(chain.len(), 1, "one root");
    while let Some(next) = runs
        .iter()
        .find(|r| r.parent == chain.last().copied())
        .map(|r| r.run_id)
    {
        chain.push(next);
    }
    assert_eq!(chain.len(), runs.len(), "the runs form one chain");
    chain
}

/// The reason of the deepest run's failed child step: it was never started.
fn depth_failure(s: &Setup, deepest: RunId) -> String {
    let journal = s.journal(deepest);
    let (child, reason) = journal
        .iter()
        .find_map(|e| match &e.record {
            Record::ChildFinished {
                status: RunStatus::Failed,
                reason,
                step,
                ..
            } => Some((*step, reason.clone().unwrap_or_default())),
            _ => None,
        })
        .expect("the deepest run's child step failed");
    let child_id = journal
        .iter()
        .find_map(|e| match &e.record {
            Record::ChildStarted {
                step, child_run_id, ..
            } if *step == child => Some(*child_run_id),
            _ => None,
        })
        .unwrap();
    assert!(
        s.engine.summary(child_id).is_err(),
        "the child beyond the limit was not started"
    );
    reason
}

async fn code_recursion_stops_at(
    limit: u32,
    configure: impl FnOnce(EngineBuilder) -> EngineBuilder,
) {
    let s = Setup::new(&[], None, configure).await;
    let root = s.engine.start(recurse, 0).await.unwrap().id();
    let view = s.ended(root).await;
    assert_eq!(view.status, RunStatus::Failed, "{view:?}");
    let chain = chain(&s, "recurse");
    assert_eq!(chain.len() as u32, limit + 1, "runs at depths 0 to {limit}");
    for run in &chain {
        assert_eq!(s.engine.status(*run).unwrap(), RunStatus::Failed);
    }
    let deepest = *chain.last().unwrap();
    let reason = depth_failure(&s, deepest);
    assert!(
        reason.starts_with(&format!(
            "[MAG-CH002] sub-run nesting depth limit {limit} reached: run {deepest} at depth {limit} cannot start a child `recurse`"
        )),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("chain from the root: `recurse` ×{}", limit + 1)),
        "{reason}"
    );
    assert!(
        view.reason.unwrap().contains("[MAG-CH002]"),
        "the root's reason carries the cause up"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_workflow_that_starts_itself_stops_at_the_default_depth_limit() {
    assert_eq!(magrathea::core::DEFAULT_MAX_CHILD_DEPTH, 32);
    code_recursion_stops_at(32, |b| b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_depth_limit_of_code_workflows_is_configurable() {
    code_recursion_stops_at(4, |b| b.max_child_depth(4)).await;
}

async fn yaml_recursion_stops_at(limit: u32, settings: Option<&str>) {
    let s = Setup::new(&[("recurse", RECURSE)], settings, |b| b).await;
    let root = s.start_yaml("recurse").await;
    let view = s.ended(root).await;
    assert_eq!(view.status, RunStatus::Failed, "{view:?}");
    let chain = chain(&s, "recurse");
    assert_eq!(chain.len() as u32, limit + 1, "runs at depths 0 to {limit}");
    let deepest = *chain.last().unwrap();
    let reason = depth_failure(&s, deepest);
    assert!(
        reason.starts_with(&format!(
            "[MAG-CH002] sub-run nesting depth limit {limit} reached"
        )),
        "{reason}"
    );
    // The deepest run routed its `failure` outcome with `on:` and kept the error.
    let deepest_view = s.ended(deepest).await;
    assert_eq!(deepest_view.status, RunStatus::Failed);
    assert_eq!(deepest_view.current_state.as_deref(), Some("failed"));
    assert_eq!(deepest_view.result, Some(Value::String(reason)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yaml_workflow_that_starts_itself_stops_at_the_default_depth_limit() {
    yaml_recursion_stops_at(32, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_depth_limit_of_a_yaml_project_is_set_in_its_settings() {
    yaml_recursion_stops_at(3, Some("subRuns:\n  maxDepth: 3\n")).await;
}

// ---- a blocked parent -------------------------------------------------------------------------

/// Runs `f` with an engine on `db` in its own runtime, then shuts that runtime down (a
/// restart, as in `restart.rs`).
fn incarnation<T>(db: &std::path::Path, with_holder: bool, f: impl AsyncFnOnce(Engine) -> T) -> T {
    magrathea_tests::incarnation(
        || {
            let b = Engine::builder().path(db).workflow(sleeper);
            if with_holder { b.workflow(holder) } else { b }
        },
        f,
    )
}

#[test]
fn cancelling_a_blocked_run_cancels_the_children_its_journal_shows_running() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let (parent, child) = incarnation(&db, true, async |engine| {
        let parent = engine.start(holder, "towel".into()).await.unwrap().id();
        let mut child = None;
        wait_for("the child asleep", Duration::from_secs(10), || {
            child = engine
                .list_runs(&RunFilter {
                    workflow: Some("sleeper".into()),
                    ..Default::default()
                })
                .unwrap()
                .first()
                .map(|s| s.run_id);
            child.is_some_and(|c| {
                engine.journal(c).is_ok_and(|j| {
                    j.iter()
                        .any(|e| matches!(e.record, Record::TimerSet { .. }))
                })
            })
        })
        .await;
        (parent, child.unwrap())
    });
    // Reopened without the parent's workflow: the parent is blocked, its child sleeps on.
    incarnation(&db, false, async |engine| {
        let view = tokio::time::timeout(Duration::from_secs(10), engine.wait(parent))
            .await
            .expect("the parent is blocked")
            .unwrap();
        assert_eq!(view.status, RunStatus::Blocked, "{view:?}");
        assert!(!engine.status(child).unwrap().is_terminal());
        assert_eq!(
            engine.cancel(parent, "give up").await.unwrap(),
            CancelAck::Requested
        );
        let view = engine.wait(parent).await.unwrap();
        assert_eq!(view.status, RunStatus::Cancelled);
        let child_view = tokio::time::timeout(Duration::from_secs(10), engine.wait(child))
            .await
            .expect("the child ends")
            .unwrap();
        assert_eq!(child_view.status, RunStatus::Cancelled);
        let journal = engine.journal(parent).unwrap();
        let (reason, _) = child_cancel_record(&journal, child);
        assert_eq!(
            reason,
            format!("parent run {parent} was cancelled: give up")
        );
        assert_eq!(cancel_record(&engine.journal(child).unwrap()).0, reason);
    });
}
