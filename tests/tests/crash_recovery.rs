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
//!   re-executions happened (side effects at least once).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use magrathea::core::{RedbStore, Store};
use magrathea::{Durability, Record, RunFilter, RunStatus};
use magrathea_tests::{CRASH_TASKS, crash_expected};
use rand::Rng;

const RUNS: u64 = 300;
const KILLS: usize = 5;

fn spawn_worker(db: &Path, side: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_crash_worker"))
        .arg(db)
        .arg(side)
        .arg(RUNS.to_string())
        .spawn()
        .expect("spawning crash_worker")
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
    let mut rng = rand::rng();

    let mut kills = 0;
    let mut incarnations = 0;
    while kills < KILLS {
        incarnations += 1;
        assert!(
            incarnations <= 20,
            "could not kill the worker {KILLS} times"
        );
        let mut child = spawn_worker(&db, &side);
        std::thread::sleep(Duration::from_millis(rng.random_range(50..=400)));
        match child.try_wait().unwrap() {
            Some(status) => panic!(
                "the worker ended ({status}) before kill {} of {KILLS}; make it slower",
                kills + 1
            ),
            None => {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                kills += 1;
            }
        }
    }
    let mut child = spawn_worker(&db, &side);
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

    let store = RedbStore::open(&db, Durability::Immediate).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len() as u64, RUNS, "one run per idempotency key");
    let executions = read_side_file(&side);

    let mut by_key = HashMap::new();
    // (run, step, attempt) -> number of TaskStarted / TaskResult records
    let mut started: HashMap<(String, u32, u32), usize> = HashMap::new();
    let mut results: HashMap<(String, u32, u32), usize> = HashMap::new();
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

    let mut reexecuted = 0;
    for (attempt, n) in &executions {
        assert!(
            started.contains_key(attempt),
            "{attempt:?} executed without its TaskStartedRecord in the journal"
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
