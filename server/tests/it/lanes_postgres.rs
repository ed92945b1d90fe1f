//! Lanes across workers (reference §11): three `magrathea serve` workers on one PostgreSQL
//! database hold a project's `lanes.maxConcurrentTasks` together, not each on its own; a step
//! that waited in the lane when its worker died is not failed for the run's lost claim.

use crate::http_common;
use crate::serve_child;

use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::http_crash_lanes::{HOG, QUICK, lines};
use http_common::write;
use magrathea_postgres::testing::TestCluster;
use serde_json::{Value, json};
use serve_child::{ServeChild, serve_command};

fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(TestCluster::start)
}

/// One shell step that notes when it starts and ends, in the project's workspace that every
/// worker shares, and takes a while in between.
const NOTED: &str = "\
start: work
states:
  work:
    type: shell_task
    run: 'echo \"s $(date +%s%N)\" >> lane-times.log; sleep 0.4; echo \"e $(date +%s%N)\" >> lane-times.log'
    dirName: workspace
    on: { success: done }
  done: { type: terminal, result: finished }
";

const RUNS: &str = "/brain/acme/project/shop/workflows";

/// Tenant acme, project shop, with shell steps allowed and a lane `width` wide.
fn tree(root: &Path, width: u32) {
    write(
        &root.join("acme/_tenant/_vance/settings.yaml"),
        "execution: { shellTask: true }\n",
    );
    let shop = root.join("acme/shop/_vance");
    write(
        &shop.join("settings.yaml"),
        &format!("lanes:\n  maxConcurrentTasks: {width}\n"),
    );
    write(&shop.join("workflows/noted.yaml"), NOTED);
}

fn worker(root: &Path, url: &str) -> ServeChild {
    let mut cmd = serve_command(root);
    cmd.args(["--insecure-no-auth", "--store", url, "--lease-grace", "5"]);
    ServeChild::spawn(cmd)
}

async fn start(client: &reqwest::Client, worker: &ServeChild) -> String {
    start_of(client, worker, "noted").await
}

async fn start_of(client: &reqwest::Client, worker: &ServeChild, workflow: &str) -> String {
    let r = client
        .post(format!("{}{RUNS}/{workflow}/start", worker.base))
        .json(&json!({ "params": {} }))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "start: {}", r.status());
    let v: Value = r.json().await.unwrap();
    v["workflowRunId"].as_str().unwrap().to_owned()
}

async fn wait_done(client: &reqwest::Client, worker: &ServeChild, run: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let v: Value = client
            .get(format!("{}{RUNS}/runs/{run}", worker.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if ["DONE", "FAILED", "BLOCKED"]
            .iter()
            .any(|s| v["status"] == *s)
        {
            return v;
        }
        assert!(Instant::now() < deadline, "run {run} did not end: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The most steps that ran at once, from the `s <ns>` / `e <ns>` lines the steps wrote (an
/// end and a start at the same nanosecond count as one after the other).
fn most_at_once(log: &str) -> usize {
    let mut events: Vec<(u128, i32)> = log
        .lines()
        .map(|line| {
            let (kind, ns) = line.split_once(' ').unwrap_or_else(|| panic!("{line:?}"));
            let ns: u128 = ns.trim().parse().unwrap_or_else(|_| panic!("{line:?}"));
            (ns, if kind == "s" { 1 } else { -1 })
        })
        .collect();
    events.sort();
    let (mut running, mut most) = (0i32, 0i32);
    for (_, step) in events {
        running += step;
        most = most.max(running);
    }
    usize::try_from(most).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lane_of_width_two_runs_at_most_two_steps_across_three_workers_and_does_run_two() {
    let url = cluster().create_database();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root, 2);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let workers: Vec<ServeChild> = (0..3).map(|_| worker(&root, &url)).collect();

    // Four runs through each worker, all at once: every worker has steps waiting in the lane.
    let mut runs = Vec::new();
    for _ in 0..4 {
        for w in &workers {
            runs.push(start(&client, w).await);
        }
    }
    for run in &runs {
        let view = wait_done(&client, &workers[0], run).await;
        assert_eq!(view["status"], "DONE", "run {run}: {view}");
    }

    let log = std::fs::read_to_string(root.join("acme/shop/lane-times.log")).unwrap();
    assert_eq!(
        log.lines().count(),
        2 * runs.len(),
        "one start and end per step: {log}"
    );
    let most = most_at_once(&log);
    assert!(
        most <= 2,
        "at most two steps at once across the workers, saw {most}:\n{log}"
    );
    assert_eq!(most, 2, "two steps did run at once:\n{log}");
}

/// A worker whose runs survive no lost claim (`--max-claim-attempts 1`), reclaimed a second
/// after its heartbeat stops.
fn strict_worker(root: &Path, url: &str) -> ServeChild {
    let mut cmd = serve_command(root);
    cmd.args(["--insecure-no-auth", "--store", url, "--lease-grace", "1"]);
    cmd.args(["--max-claim-attempts", "1"]);
    ServeChild::spawn(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_queued_in_the_lane_when_its_worker_dies_is_not_failed_for_the_lost_claim() {
    let url = cluster().create_database();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root, 1);
    let shop = root.join("acme/shop");
    write(&shop.join("_vance/workflows/hog.yaml"), HOG);
    write(&shop.join("_vance/workflows/quick.yaml"), QUICK);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();

    let mut first = strict_worker(&root, &url);
    let hog = start_of(&client, &first, "hog").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while lines(&shop.join("hog.log")) < 1 {
        assert!(Instant::now() < deadline, "the hog never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let quick = start_of(&client, &first, "quick").await;
    first
        .journaled(&client, &quick, "-", "TaskQueuedRecord")
        .await;
    first.kill(); // SIGKILL while `quick` waits for the lane `hog` holds

    let second = strict_worker(&root, &url);
    let view = wait_done(&client, &second, &quick).await;
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(view["result"], "finished", "{view}");
    assert_eq!(lines(&shop.join("quick.log")), 1, "it ran once");
    // The hog had begun: its lost claim is one more than the worker allows.
    let view = wait_done(&client, &second, &hog).await;
    assert_eq!(view["result"], "gave up", "{view}");
    assert_eq!(lines(&shop.join("hog.log")), 1, "not run again");
}

#[test]
fn the_overlap_count_sees_three_steps_at_once() {
    // The check above must be able to fail: three overlapping intervals count as three.
    assert_eq!(most_at_once("s 1\ns 2\ns 3\ne 4\ne 5\ne 6\n"), 3);
    assert_eq!(most_at_once("s 1\ne 2\ns 3\ne 4\n"), 1);
}
