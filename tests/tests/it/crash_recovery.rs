//! Crash recovery by real SIGKILL of a worker process.
//!
//! The `crash_worker` binary runs 300 runs of `crash_flow` (6 tasks, a durable sleep, a planned
//! retry) on a redb file with `Durability::Immediate`; every task execution appends
//! `run step attempt key` to a side file before it returns. The test kills the worker with
//! SIGKILL (`std::process::Child::kill` sends SIGKILL on Unix) at random moments, restarts it
//! each time, lets the last incarnation finish, and then checks the journal against the core's
//! promises:
//! - every run is DONE with the result computed from its input;
//! - every task step has exactly one final `TaskResultRecord` (results exactly once);
//! - every execution in the side file has its `TaskStartedRecord` journaled (journal, then
//!   act), with the idempotency key `<run>-<step>-<attempt>`;
//! - an attempt that executed more than once has no more than one result journaled, and
//!   re-executions happened (side effects at least once);
//! - every execution of an attempt is on record: the side file never shows an attempt
//!   executed more often than its `TaskStartedRecord` plus its `TaskRestartedRecord`s say,
//!   and those count executions 2, 3, … in order.
//!
//! A second test does the same with parents that start child workflows (`crash_worker …
//! parents`): every parent ends DONE with its children's results, and no child is started
//! twice.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use magrathea::core::{RedbStore, Store};
use magrathea::{Durability, Record, RunFilter, RunId, RunStatus};
use magrathea_tests::{
    CRASH_CHILDREN, CRASH_TASKS, crash_child_input, crash_expected, crash_parent_expected,
    wait_for_blocking,
};
use rand::Rng;

const RUNS: u64 = 300;
const KILLS: usize = 5;
/// The most kills a test makes while waiting for one that lands where it must.
const MAX_KILLS: usize = 16;

fn spawn_worker(db: &Path, side: &Path) -> Child {
    spawn_worker_with(db, side, RUNS, &[])
}

fn spawn_worker_with(db: &Path, side: &Path, runs: u64, mode: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_crash_worker"))
        .arg(db)
        .arg(side)
        .arg(runs.to_string())
        .args(mode)
        .spawn()
        .expect("spawning crash_worker")
}

/// Kills workers made by `spawn` with SIGKILL, each at a random moment: 50–400 ms after its
/// start or after 20–200 more task executions, whichever comes first. Calls `after_kill` once
/// each is dead; it answers whether the kills so far caught what the test is about. Kills at
/// least `kills` times, and more (up to `MAX_KILLS`) until `after_kill` answers yes; then lets
/// one more worker finish, asserts that it succeeded, and answers how many kills there were.
///
/// The first worker's random moment is counted from its first task execution (the first line
/// of the `side` file) rather than from its start: a kill while the very first incarnation
/// still creates the redb file is another case (it can leave a file that no longer opens), not
/// the recovery of runs that these tests are about.
fn kill_then_finish(
    kills: usize,
    side: &Path,
    mut spawn: impl FnMut() -> Child,
    mut after_kill: impl FnMut() -> bool,
) -> usize {
    let mut rng = rand::rng();
    let mut killed = 0;
    let mut caught = false;
    while killed < kills || (!caught && killed < MAX_KILLS) {
        let mut child = spawn();
        if killed == 0 {
            wait_for_blocking("the first task execution", Duration::from_secs(10), || {
                std::fs::metadata(side).is_ok_and(|m| m.len() > 0)
            });
        }
        // The moment: a random time, or a random amount of progress (lines of the side file)
        // if that comes first, so a fast machine cannot finish the work between two kills.
        let lines_at_start = side_lines(side);
        let until = Instant::now() + Duration::from_millis(rng.random_range(50..=400));
        let growth = rng.random_range(20..=200);
        while Instant::now() < until && side_lines(side) < lines_at_start + growth {
            std::thread::sleep(Duration::from_millis(2));
        }
        match child.try_wait().unwrap() {
            Some(status) => panic!(
                "the worker ended ({status}) before kill {} of {kills}; make it slower",
                killed + 1
            ),
            None => {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                killed += 1;
                caught = after_kill();
            }
        }
    }
    let mut child = spawn();
    let deadline = Instant::now() + Duration::from_secs(45);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the last worker did not finish within 45 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "the last worker failed: {status}");
    killed
}

/// How many lines (task executions) the side file holds.
fn side_lines(side: &Path) -> usize {
    std::fs::read(side).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

/// `(run, step, attempt) -> executions`, checking each line's idempotency key.
fn read_side_file(side: &Path) -> BTreeMap<(String, u32, u32), usize> {
    let text = std::fs::read_to_string(side).expect("reading the side file");
    let mut executions = BTreeMap::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 4, "torn or malformed side-file line: {line:?}");
        let (run, step, attempt) = (
            parts[0].to_string(),
            parts[1].parse::<u32>().expect("step"),
            parts[2].parse::<u32>().expect("attempt"),
        );
        assert_eq!(
            parts[3],
            format!("{run}-{step}-{attempt}"),
            "the idempotency key is <run>-<step>-<attempt>"
        );
        *executions.entry((run, step, attempt)).or_insert(0) += 1;
    }
    executions
}

#[test]
fn sigkilled_worker_recovers_every_run_and_journals_each_result_once() {
    let began = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let side = dir.path().join("executions.log");
    let kills = kill_then_finish(KILLS, &side, || spawn_worker(&db, &side), || true);

    let store = RedbStore::open(&db, Durability::Immediate).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len() as u64, RUNS, "one run per idempotency key");
    let executions = read_side_file(&side);

    let mut by_key = HashMap::new();
    // (run, step, attempt) -> number of TaskStarted / TaskResult records
    let mut started: HashMap<(String, u32, u32), usize> = HashMap::new();
    let mut results: HashMap<(String, u32, u32), usize> = HashMap::new();
    // (run, step, attempt) -> the executions its TaskRestarted records count, in journal order
    let mut restarted: HashMap<(String, u32, u32), Vec<u32>> = HashMap::new();
    for summary in &runs {
        let run = summary.run_id;
        assert_eq!(summary.status, RunStatus::Done, "run {run}");
        let journal = store.read_journal(run).unwrap();
        let Record::Start(start) = &journal[0].record else {
            panic!("run {run} does not begin with a StartRecord");
        };
        let input = start.params.as_u64().expect("numeric input");
        let key = start.idempotency_key.clone().expect("idempotency key");
        assert_eq!(key, format!("w-{input}"));
        assert!(by_key.insert(key, run).is_none(), "two runs for one key");
        let result = journal.iter().find_map(|e| match &e.record {
            Record::Result { result, .. } => Some(result.clone()),
            _ => None,
        });
        assert_eq!(
            result,
            Some(serde_json::json!(crash_expected(input))),
            "result of run {run}"
        );

        let mut finals: BTreeMap<u32, usize> = BTreeMap::new();
        for e in &journal {
            match &e.record {
                Record::TaskStarted { step, attempt, .. } => {
                    *started
                        .entry((run.to_string(), *step, *attempt))
                        .or_default() += 1;
                }
                Record::TaskRestarted {
                    step,
                    attempt,
                    execution,
                    ..
                } => restarted
                    .entry((run.to_string(), *step, *attempt))
                    .or_default()
                    .push(*execution),
                Record::TaskResult {
                    step,
                    attempt,
                    is_final,
                    ..
                } => {
                    *results
                        .entry((run.to_string(), *step, *attempt))
                        .or_default() += 1;
                    if *is_final {
                        *finals.entry(*step).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
        assert_eq!(
            finals.len(),
            CRASH_TASKS as usize,
            "run {run}: a final result for each task step, got {finals:?}"
        );
        assert!(
            finals.values().all(|n| *n == 1),
            "run {run}: exactly one final result per step, got {finals:?}"
        );
    }
    assert!(
        started.values().all(|n| *n == 1),
        "an attempt was started twice in the journal"
    );
    assert!(
        results.values().all(|n| *n == 1),
        "an attempt has two results in the journal"
    );

    for (attempt, counted) in &restarted {
        let expected: Vec<u32> = (2..2 + counted.len() as u32).collect();
        assert_eq!(
            counted, &expected,
            "{attempt:?}: executions counted in order"
        );
    }
    let mut reexecuted = 0;
    for (attempt, n) in &executions {
        assert!(
            started.contains_key(attempt),
            "{attempt:?} executed without its TaskStartedRecord in the journal"
        );
        let on_record = 1 + restarted.get(attempt).map_or(0, Vec::len);
        assert!(
            *n <= on_record,
            "{attempt:?} executed {n} times, {on_record} on record"
        );
        if *n > 1 {
            reexecuted += 1;
        }
    }
    for attempt in started.keys() {
        assert!(
            executions.contains_key(attempt),
            "{attempt:?} was journaled as started but never executed"
        );
    }
    let total: usize = executions.values().sum();
    eprintln!(
        "crash recovery: {kills} kills, {} runs, {total} task executions of {} attempts, \
         {reexecuted} attempts executed more than once, {:?}",
        runs.len(),
        executions.len(),
        began.elapsed()
    );
    assert!(
        reexecuted > 0,
        "no attempt ran twice although the worker was killed {kills} times mid-run"
    );
}

/// In the store at `db`: parents that have started a child and not yet seen it finish, and
/// children that a parent journaled as started but whose own start was not committed.
fn parents_waiting_on_children(db: &Path) -> (usize, usize) {
    let store = RedbStore::open(db, Durability::Immediate).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let (mut waiting, mut unstarted) = (0, 0);
    for parent in runs
        .iter()
        .filter(|s| s.parent.is_none() && !s.status.is_terminal())
    {
        let journal = store.read_journal(parent.run_id).unwrap();
        let mut open = 0i64;
        for e in &journal {
            match &e.record {
                Record::ChildStarted { child_run_id, .. } => {
                    open += 1;
                    if store.run_summary(*child_run_id).unwrap().is_none() {
                        unstarted += 1;
                    }
                }
                Record::ChildFinished { .. } => open -= 1,
                _ => {}
            }
        }
        if open > 0 {
            waiting += 1;
        }
    }
    (waiting, unstarted)
}

const PARENTS: u64 = 400;
const PARENT_KILLS: usize = 4;

/// Parents that start children, across real SIGKILLs: `crash_worker … parents` runs 400 runs of
/// `crash_parent`, each starting 3 `crash_flow` children (one, then two at once). After the
/// kills and a last incarnation that finishes, every parent is DONE with the sum of its
/// children's results, and each parent has exactly its 3 children in the store: a child whose
/// start was journaled before a kill is found again after the restart, never started twice.
#[test]
fn sigkilled_worker_finishes_every_parent_with_its_children_and_starts_no_child_twice() {
    let began = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let side = dir.path().join("executions.log");
    // Parents that a kill caught with a child started and not finished, and children caught
    // between their parent's ChildStartedRecord and their own StartRecord.
    let (mut caught, mut unstarted) = (0, 0);
    let kills = kill_then_finish(
        PARENT_KILLS,
        &side,
        || spawn_worker_with(&db, &side, PARENTS, &["parents"]),
        || {
            let (w, u) = parents_waiting_on_children(&db);
            caught += w;
            unstarted += u;
            caught > 0 && unstarted > 0
        },
    );
    assert!(
        caught > 0,
        "no kill landed while a parent waited on a child; the test proves nothing"
    );
    assert!(
        unstarted > 0,
        "no kill landed between a ChildStartedRecord and the child's StartRecord"
    );

    let store = RedbStore::open(&db, Durability::Immediate).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let parents: Vec<_> = runs.iter().filter(|s| s.parent.is_none()).collect();
    assert_eq!(
        parents.len() as u64,
        PARENTS,
        "one parent per idempotency key"
    );
    assert_eq!(
        runs.len() as u64,
        PARENTS * (1 + CRASH_CHILDREN),
        "no run but the parents and their children"
    );

    let mut inputs = BTreeSet::new();
    for parent in parents {
        let run = parent.run_id;
        assert_eq!(parent.status, RunStatus::Done, "parent {run}");
        let journal = store.read_journal(run).unwrap();
        let Record::Start(start) = &journal[0].record else {
            panic!("parent {run} does not begin with a StartRecord");
        };
        let input = start.params.as_u64().expect("numeric input");
        assert_eq!(start.idempotency_key, Some(format!("p-{input}")));
        assert!(inputs.insert(input), "two parents for input {input}");
        let result = journal.iter().find_map(|e| match &e.record {
            Record::Result { result, .. } => Some(result.clone()),
            _ => None,
        });
        assert_eq!(
            result,
            Some(serde_json::json!(crash_parent_expected(input))),
            "result of parent {run}"
        );

        // step -> child run id, from the parent's journal; each step starts one child once.
        let mut started: BTreeMap<u32, RunId> = BTreeMap::new();
        let mut finished: BTreeMap<u32, usize> = BTreeMap::new();
        for e in &journal {
            match &e.record {
                Record::ChildStarted {
                    step, child_run_id, ..
                } => {
                    assert!(
                        started.insert(*step, *child_run_id).is_none(),
                        "parent {run}: step {step} started a child twice"
                    );
                }
                Record::ChildFinished { step, status, .. } => {
                    assert_eq!(*status, RunStatus::Done, "parent {run}, step {step}");
                    *finished.entry(*step).or_default() += 1;
                }
                _ => {}
            }
        }
        assert_eq!(started.len() as u64, CRASH_CHILDREN, "parent {run}");
        assert!(
            started.keys().all(|s| finished.get(s) == Some(&1)),
            "parent {run}: one ChildFinishedRecord per child step, got {finished:?}"
        );

        let children: Vec<_> = runs.iter().filter(|s| s.parent == Some(run)).collect();
        assert_eq!(
            children.len() as u64,
            CRASH_CHILDREN,
            "parent {run} has exactly its children in the store: {children:?}"
        );
        for child in children {
            let id = child.run_id;
            assert_eq!(child.status, RunStatus::Done, "child {id} of {run}");
            let journal = store.read_journal(id).unwrap();
            let Record::Start(cs) = &journal[0].record else {
                panic!("child {id} does not begin with a StartRecord");
            };
            let parent_ref = cs.parent.as_ref().expect("a child names its parent");
            assert_eq!(parent_ref.run_id, run);
            assert_eq!(
                started.get(&parent_ref.step),
                Some(&id),
                "child {id} is the one its parent's step {} journaled",
                parent_ref.step
            );
            let child_input = cs.params.as_u64().expect("numeric child input");
            assert!(
                (0..CRASH_CHILDREN).any(|j| crash_child_input(input, j) == child_input),
                "child {id} of parent input {input} has input {child_input}"
            );
            let child_result = journal.iter().find_map(|e| match &e.record {
                Record::Result { result, .. } => Some(result.clone()),
                _ => None,
            });
            assert_eq!(
                child_result,
                Some(serde_json::json!(crash_expected(child_input))),
                "result of child {id}"
            );
        }
    }
    eprintln!(
        "crash recovery with children: {kills} kills caught {caught} parents waiting on \
         children and {unstarted} children journaled but not started, {} runs, {:?}",
        runs.len(),
        began.elapsed()
    );
}
