//! Several `magrathea serve` workers on one PostgreSQL database: runs survive SIGKILLs of
//! workers with exactly one result per step, a worker frozen past its lease cannot add a record
//! behind the worker that reclaimed its runs, a run whose worker dies every time it drives it
//! fails after `--max-claim-attempts` claims, a worker starting beside hundreds of active runs
//! gets to listening and takes over those of a dead worker, and a schedule's `cancel_other`
//! reaches a run a killed worker held once another worker reclaimed it.

use crate::http_common;
use crate::serve_child;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use http_common::write;
use magrathea_postgres::testing::TestCluster;
use rand::Rng;
use serde_json::{Value, json};
use serve_child::{ServeChild, serve_command};

fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(TestCluster::start)
}

/// Five script steps, each adding one to the last, with timers between them: a run takes
/// about a second, so that kills land in the middle of runs.
const CHAIN: &str = "\
parameters:
  n: { type: integer, required: true }
start: s1
states:
  s1: { type: script_task, path: _vance/scripts/inc.js, storeAs: v, on: { success: w1 } }
  w1: { type: timer_task, duration: 300ms, on: { fired: s2 } }
  s2: { type: script_task, path: _vance/scripts/inc.js, storeAs: v, on: { success: w2 } }
  w2: { type: timer_task, duration: 300ms, on: { fired: s3 } }
  s3: { type: script_task, path: _vance/scripts/inc.js, storeAs: v, on: { success: w3 } }
  w3: { type: timer_task, duration: 300ms, on: { fired: s4 } }
  s4: { type: script_task, path: _vance/scripts/inc.js, storeAs: v, on: { success: s5 } }
  s5: { type: script_task, path: _vance/scripts/inc.js, storeAs: v, on: { success: done } }
  done: { type: terminal, result: \"${state.v}\" }
";

/// One shell step that takes a while.
const SLOW: &str = "\
start: work
states:
  work:
    type: shell_task
    run: sleep 3
    dirName: workspace
    on: { success: done }
  done: { type: terminal, result: finished }
";

const FOREVER: &str = "\
start: work
states:
  work:
    type: shell_task
    run: sleep 600
    dirName: workspace
    storeAs: out
    on: { success: done }
    catch: { technical_error: gave_up }
  done: { type: terminal }
  gave_up: { type: terminal, result: \"${state.out.error}\" }
";

const REVIEW: &str = "\
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: \"Ship it?\" }
    on: { approved: done, rejected: nope }
  done: { type: terminal, result: shipped }
  nope: { type: terminal, outcome: failure }
";

/// A five-second durable timer, then the end.
const NAP: &str = "\
start: nap
states:
  nap: { type: timer_task, duration: 5s, on: { fired: done } }
  done: { type: terminal, result: rested }
";

/// A first step that runs until the file `go` exists, then a second step.
const TWO_STEPS: &str = "\
start: first
states:
  first:
    type: shell_task
    run: \"touch first.started; while [ ! -e go ]; do sleep 0.05; done\"
    dirName: workspace
    on: { success: second }
  second:
    type: shell_task
    run: touch second.started
    dirName: workspace
    on: { success: done }
  done: { type: terminal, result: finished }
";

/// A document tree for tenant acme, project shop, with script and shell steps allowed and
/// room for many steps at once.
fn tree(root: &Path) {
    write(
        &root.join("acme/_tenant/_vance/settings.yaml"),
        "execution: { shellTask: true, scriptTask: true }\n",
    );
    let shop = root.join("acme/shop/_vance");
    write(
        &shop.join("settings.yaml"),
        "lanes:\n  maxConcurrentTasks: 256\n",
    );
    write(
        &shop.join("scripts/inc.js"),
        "return (state.v === undefined ? params.n : state.v) + 1;\n",
    );
    write(&shop.join("workflows/chain.yaml"), CHAIN);
    write(&shop.join("workflows/slow.yaml"), SLOW);
    write(&shop.join("workflows/forever.yaml"), FOREVER);
    write(&shop.join("workflows/review.yaml"), REVIEW);
    write(&shop.join("workflows/two.yaml"), TWO_STEPS);
    write(&shop.join("workflows/nap.yaml"), NAP);
}

/// A fresh database, a document tree (see [`tree`]) and an HTTP client.
struct Setup {
    url: String,
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    client: reqwest::Client,
}

impl Setup {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        tree(&root);
        Self {
            url: cluster().create_database(),
            _tmp: tmp,
            root,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
        }
    }
}

impl Setup {
    /// A worker on the database, with `--lease-grace` and `--max-claim-attempts`.
    fn worker(&self, grace: &str, max_claims: &str) -> ServeChild {
        worker(&self.root, &self.url, grace, max_claims)
    }
}

/// A worker: `magrathea serve` on the shared database.
fn worker(root: &Path, url: &str, grace: &str, max_claims: &str) -> ServeChild {
    let mut cmd = serve_command(root);
    cmd.args(["--insecure-no-auth", "--store", url]).args([
        "--lease-grace",
        grace,
        "--max-claim-attempts",
        max_claims,
    ]);
    ServeChild::spawn(cmd)
}

const RUNS: &str = "/brain/acme/project/shop/workflows";

/// Starts `name` through the first worker that answers, with an idempotency key so that a
/// retry after a worker died never starts a second run.
async fn start(
    client: &reqwest::Client,
    workers: &[ServeChild],
    name: &str,
    params: Value,
    key: &str,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for w in workers {
            let sent = client
                .post(format!("{}{RUNS}/{name}/start", w.base))
                .header("Idempotency-Key", key)
                .json(&json!({ "params": params }))
                .send()
                .await;
            if let Ok(r) = sent
                && r.status().is_success()
                && let Ok(v) = r.json::<Value>().await
                && let Some(id) = v["workflowRunId"].as_str()
            {
                return id.to_owned();
            }
        }
        assert!(Instant::now() < deadline, "no worker started {name}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts `n` runs of `name` (no parameters) on `worker`, keyed `<name>-<i>`; their ids.
async fn start_many(
    client: &reqwest::Client,
    worker: &ServeChild,
    name: &str,
    n: usize,
) -> Vec<String> {
    let mut runs = Vec::with_capacity(n);
    for i in 0..n {
        let key = format!("{name}-{i}");
        runs.push(start(client, std::slice::from_ref(worker), name, json!({}), &key).await);
    }
    runs
}

/// GETs `path` from the first worker that answers.
async fn get(client: &reqwest::Client, workers: &[ServeChild], path: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for w in workers {
            if let Ok(r) = client.get(format!("{}{path}", w.base)).send().await
                && r.status().is_success()
                && let Ok(v) = r.json::<Value>().await
            {
                return v;
            }
        }
        assert!(Instant::now() < deadline, "no worker answered GET {path}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until every run in `runs` has one of `statuses`; returns their views.
async fn wait_all(
    client: &reqwest::Client,
    workers: &[ServeChild],
    runs: &[String],
    statuses: &[&str],
    within: Duration,
) -> Vec<Value> {
    let deadline = Instant::now() + within;
    let mut views = Vec::new();
    for run in runs {
        loop {
            let v = get(client, workers, &format!("{RUNS}/runs/{run}")).await;
            if statuses.iter().any(|s| v["status"] == *s) {
                views.push(v);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "run {run} did not reach {statuses:?}: {v}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    views
}

/// The number of task results journaled for each step of `run`.
async fn results_per_step(
    client: &reqwest::Client,
    workers: &[ServeChild],
    run: &str,
) -> BTreeMap<u64, usize> {
    let journal = get(client, workers, &format!("{RUNS}/runs/{run}/journal")).await;
    let records = journal.as_array().unwrap_or_else(|| panic!("{journal}"));
    let mut counts = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["seq"], i as u64, "seqs are dense: {r}");
        if r["type"] == "TaskResultRecord" {
            *counts.entry(r["step"].as_u64().unwrap()).or_insert(0) += 1;
        }
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_survive_workers_killed_at_random_with_one_result_per_step() {
    let s = Setup::new();
    let mut workers: Vec<ServeChild> = (0..3).map(|_| s.worker("1", "1000")).collect();

    // Start the runs in six waves; after each, kill a random worker at a random moment (while
    // it holds runs in flight) and restart it.
    let mut runs = Vec::new();
    let mut rng = rand::rng();
    let mut killed_holding = 0;
    for wave in 0..6u64 {
        for n in wave * 50..(wave + 1) * 50 {
            let run = start(
                &s.client,
                &workers,
                "chain",
                json!({"n": n}),
                &format!("chain-{n}"),
            )
            .await;
            runs.push((run, n));
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(100..600))).await;
        // Starts go to the first worker that answers, so most runs are on one worker: the
        // victim is drawn from the workers that hold runs at this moment.
        let holding: Vec<(usize, u64)> = workers
            .iter()
            .enumerate()
            .map(|(i, w)| (i, held_by(&s.url, w.pid())))
            .filter(|&(_, held)| held > 0)
            .collect();
        let (victim, held) = if holding.is_empty() {
            (rng.random_range(0..workers.len()), 0)
        } else {
            holding[rng.random_range(0..holding.len())]
        };
        killed_holding += held;
        workers[victim].kill();
        workers[victim] = s.worker("1", "1000");
    }
    eprintln!("the six kills hit workers holding {killed_holding} runs in all");
    assert!(killed_holding > 0, "the kills hit workers that held runs");
    let ids: Vec<String> = runs.iter().map(|(r, _)| r.clone()).collect();
    let views = wait_all(
        &s.client,
        &workers,
        &ids,
        &["DONE", "FAILED", "BLOCKED"],
        Duration::from_secs(240),
    )
    .await;
    for ((run, n), view) in runs.iter().zip(&views) {
        assert_eq!(view["status"], "DONE", "run {run}: {view}");
        let result = &view["result"];
        assert!(
            *result == json!(n + 5) || *result == json!((n + 5).to_string()),
            "run {run} of n={n}: {result}"
        );
        let counts = results_per_step(&s.client, &workers, run).await;
        assert_eq!(
            counts.len(),
            8,
            "five script steps and three timers, each a task step, in {run}: {counts:?}"
        );
        assert!(
            counts.values().all(|c| *c == 1),
            "exactly one result per step in {run}: {counts:?}"
        );
    }
}

/// A worker starting while the store holds hundreds of runs a dead worker left recovers them
/// all as it starts, and gets to listening.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_starting_beside_hundreds_of_active_runs_listens_and_takes_over_the_dead_ones() {
    let s = Setup::new();
    let mut first = s.worker("1", "1000");
    let runs = start_many(&s.client, &first, "nap", 300).await;
    first.kill();
    // Once the dead worker's leases (1 s) expired, the new worker claims each of its runs
    // before it listens (the spawn bounds the wait).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let heir = s.worker("1", "1000");
    let views = wait_all(
        &s.client,
        std::slice::from_ref(&heir),
        &runs,
        &["DONE", "FAILED", "CANCELLED", "BLOCKED"],
        Duration::from_secs(120),
    )
    .await;
    for (run, view) in runs.iter().zip(&views) {
        assert_eq!(
            (view["status"].as_str(), &view["result"]),
            (Some("DONE"), &json!("rested")),
            "run {run}: {view}"
        );
    }
}

/// How many runs the worker with process id `pid` holds.
fn held_by(url: &str, pid: u32) -> u64 {
    psql(
        url,
        &format!("SELECT count(*) FROM magrathea_leases WHERE owner LIKE '%:{pid}:%'"),
    )
    .parse()
    .unwrap()
}

fn psql(url: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args(["-X", "-q", "-t", "-A", "-d", url, "-c", sql])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The lease owner of `run`, from the database.
fn owner(url: &str, run: &str) -> Option<String> {
    let out = std::process::Command::new("psql")
        .args(["-X", "-q", "-t", "-A", "-d", url, "-c"])
        .arg(format!(
            "SELECT owner FROM magrathea_leases WHERE run_id = '{run}'"
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (!s.is_empty()).then_some(s)
}

/// Waits until `run`'s lease is held by a worker other than `not`; returns it.
async fn owner_other_than(url: &str, run: &str, not: Option<&str>) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(o) = owner(url, run)
            && Some(o.as_str()) != not
        {
            return o;
        }
        assert!(Instant::now() < deadline, "nobody claimed {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_frozen_past_its_lease_adds_nothing_after_another_reclaimed_its_runs() {
    let s = Setup::new();
    let frozen = s.worker("1", "1000");
    let runs = start_many(&s.client, &frozen, "slow", 5).await;
    // Every run's shell step is running on the first worker.
    let first_owner = owner_other_than(&s.url, &runs[4], None).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = nix::unistd::Pid::from_raw(frozen.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();

    let other = s.worker("1", "1000");
    for run in &runs {
        owner_other_than(&s.url, run, Some(&first_owner)).await;
    }
    // The frozen worker wakes up after its runs moved; its shell steps have long ended.
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    let both = [other, frozen];
    let views = wait_all(
        &s.client,
        &both,
        &runs,
        &["DONE", "FAILED"],
        Duration::from_secs(60),
    )
    .await;
    for (run, view) in runs.iter().zip(&views) {
        assert_eq!(view["status"], "DONE", "{view}");
        let counts = results_per_step(&s.client, &both, run).await;
        assert_eq!(
            counts.values().copied().collect::<Vec<_>>(),
            [1],
            "one result for the shell step of {run}, from the worker that reclaimed it"
        );
    }
    // Give the woken worker time to try its late appends, then look again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for run in &runs {
        let counts = results_per_step(&s.client, &both, run).await;
        assert_eq!(counts.values().copied().collect::<Vec<_>>(), [1], "{run}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_worker_dies_on_every_claim_fails_after_max_claim_attempts() {
    let s = Setup::new();
    let mut current = s.worker("1", "2");
    let run = start(
        &s.client,
        std::slice::from_ref(&current),
        "forever",
        json!({}),
        "forever",
    )
    .await;
    let mut last = owner_other_than(&s.url, &run, None).await;
    // maxClaimAttempts 2: the first claim and one reclaim are allowed, the second reclaim is
    // refused; each driver is killed under the run.
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        current.kill();
        current = s.worker("1", "2");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let o = owner(&s.url, &run);
            if o.as_deref().is_some_and(|o| o != last) {
                last = o.unwrap();
                break;
            }
            let v = get(
                &s.client,
                std::slice::from_ref(&current),
                &format!("{RUNS}/runs/{run}"),
            )
            .await;
            if v["status"] == "DONE" {
                break;
            }
            assert!(Instant::now() < deadline, "the run was not reclaimed: {v}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // The task fails terminally with technical_error, and catch: routes it (reference §12).
    let views = wait_all(
        &s.client,
        std::slice::from_ref(&current),
        std::slice::from_ref(&run),
        &["DONE", "FAILED"],
        Duration::from_secs(60),
    )
    .await;
    let view = &views[0];
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(view["currentState"], "gave_up", "{view}");
    let error = view["result"].as_str().unwrap_or_default();
    assert!(error.contains("MAG-LS001"), "{view}");
    assert!(error.contains("maxClaimAttempts (2)"), "{view}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_on_one_worker_sees_every_record_of_a_run_driven_by_another() {
    let s = Setup::new();
    let driver = s.worker("5", "3");
    let reader = s.worker("5", "3");
    let run = start(
        &s.client,
        std::slice::from_ref(&driver),
        "chain",
        json!({"n": 1}),
        "follow",
    )
    .await;
    assert_eq!(
        owner_other_than(&s.url, &run, None).await.split(':').nth(1),
        Some(driver.pid().to_string().as_str())
    );
    // The stream ends by itself after the run's terminal record.
    let body = s
        .client
        .get(format!("{}{RUNS}/runs/{run}/events", reader.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let seqs: Vec<u64> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| {
            serde_json::from_str::<Value>(d.trim()).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(!seqs.is_empty());
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "every record once, in order"
    );
    let both = [driver, reader];
    let view = get(&s.client, &both, &format!("{RUNS}/runs/{run}")).await;
    assert_eq!(view["status"], "DONE", "{view}");
    let journal = get(&s.client, &both, &format!("{RUNS}/runs/{run}/journal")).await;
    assert_eq!(
        journal.as_array().unwrap().len(),
        seqs.len(),
        "the follower saw the whole journal"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_and_a_cancel_sent_to_another_worker_reach_the_run() {
    let s = Setup::new();
    let a = s.worker("5", "3");
    let b = s.worker("5", "3");
    let approved = start(
        &s.client,
        std::slice::from_ref(&a),
        "review",
        json!({}),
        "r1",
    )
    .await;
    let cancelled = start(
        &s.client,
        std::slice::from_ref(&a),
        "review",
        json!({}),
        "r2",
    )
    .await;
    let both = [a, b];
    wait_all(
        &s.client,
        &both,
        &[approved.clone(), cancelled.clone()],
        &["WAITING"],
        Duration::from_secs(30),
    )
    .await;

    // Worker b lists a's inbox items and answers one; a drives the run on.
    let inbox = get(&s.client, &both[1..], "/brain/acme/project/shop/inbox").await;
    let item = inbox
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"].as_str().unwrap().starts_with(&approved))
        .unwrap_or_else(|| panic!("{inbox}"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // An answer the gate does not take is refused as such through the other worker too.
    let invalid = s
        .client
        .post(format!(
            "{}/brain/acme/project/shop/inbox/{item}/answer",
            both[1].base
        ))
        .json(&json!({"kind": "choose", "option": "maybe"}))
        .send()
        .await
        .unwrap();
    assert_eq!(invalid.status(), 400);
    let body: Value = invalid.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MAG-HTTP-INVALID-ANSWER", "{body}");
    let answer = s
        .client
        .post(format!(
            "{}/brain/acme/project/shop/inbox/{item}/answer",
            both[1].base
        ))
        .json(&json!({"kind": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    let cancel = s
        .client
        .post(format!("{}{RUNS}/runs/{cancelled}/cancel", both[1].base))
        .json(&json!({"reason": "not needed"}))
        .send()
        .await
        .unwrap();
    assert!(
        cancel.status().is_success(),
        "{}",
        cancel.text().await.unwrap()
    );

    let views = wait_all(
        &s.client,
        &both,
        &[approved.clone(), cancelled.clone()],
        &["DONE", "CANCELLED", "FAILED"],
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(
        (views[0]["status"].as_str(), &views[0]["result"]),
        (Some("DONE"), &json!("shipped"))
    );
    assert_eq!(views[1]["status"], "CANCELLED", "{}", views[1]);
    // Both runs stayed with the worker that started them.
    assert!(
        owner(&s.url, &approved).is_none(),
        "an ended run holds no lease"
    );
}

/// POSTs `{}` to `path` on `worker`; the status and the body.
async fn post(client: &reqwest::Client, worker: &ServeChild, path: &str) -> (u16, Value) {
    let r = client
        .post(format!("{}{path}", worker.base))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_paused_through_another_worker_stays_paused_when_its_worker_dies() {
    let s = Setup::new();
    let project = s.root.join("acme/shop");
    let a = s.worker("1", "5");
    let b = s.worker("1", "5");
    let run = start(
        &s.client,
        std::slice::from_ref(&a),
        "two",
        json!({}),
        "pause-1",
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !project.join("first.started").exists() {
        assert!(Instant::now() < deadline, "the first step never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Worker b pauses the run worker a drives (through the mailbox).
    let (status, body) = post(&s.client, &b, &format!("{RUNS}/runs/{run}/pause")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["run"]["status"], "PAUSED");
    std::fs::write(project.join("go"), "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let journal = get(
            &s.client,
            std::slice::from_ref(&b),
            &format!("{RUNS}/runs/{run}/journal"),
        )
        .await;
        if journal
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "TaskResultRecord")
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the first step's result was never journaled"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut a = a;
    a.kill(); // SIGKILL: b reclaims the run once the lease's grace is over
    tokio::time::sleep(Duration::from_secs(4)).await;
    let view = get(
        &s.client,
        std::slice::from_ref(&b),
        &format!("{RUNS}/runs/{run}"),
    )
    .await;
    assert_eq!(view["status"], "PAUSED", "{view}");
    assert!(
        !project.join("second.started").exists(),
        "no step after the reclaim"
    );

    let (status, body) = post(&s.client, &b, &format!("{RUNS}/runs/{run}/resume")).await;
    assert_eq!(status, 200, "{body}");
    let done = wait_all(
        &s.client,
        std::slice::from_ref(&b),
        std::slice::from_ref(&run),
        &["DONE"],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(done[0]["result"], "finished");
    assert!(project.join("second.started").exists());
}

/// A worker that has nothing to commit still reports its database gone, or hanging: its
/// health check reads the shared store, and does not wait for an answer for long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_database_stops_answering_is_unhealthy_without_committing() {
    let s = Setup::new();
    let a = s.worker("5", "3");
    let health = || async {
        let r = s
            .client
            .get(format!("{}/healthz", a.base))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap())
    };
    let until = |healthy: bool| async move {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = health().await;
            if (status == 200) == healthy || std::time::Instant::now() > deadline {
                break (status, body);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    assert_eq!(health().await.0, 200);

    // A database that holds every read of the runs (a lock that is not let go): no answer.
    let mut lock = std::process::Command::new("psql")
        .args(["-X", "-q", "-d", &s.url])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let stdin = lock.stdin.as_mut().unwrap();
        writeln!(
            stdin,
            "BEGIN; LOCK TABLE magrathea_runs, magrathea_catalog IN ACCESS EXCLUSIVE MODE;"
        )
        .unwrap();
        stdin.flush().unwrap();
    }
    let (status, body) = until(false).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "unhealthy", "{body}");
    // The worker's background passes (the scheduler's reads of the catalog) wait on the
    // database off the threads that answer requests: a route that needs no store answers.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let answered = s
        .client
        .get(format!("{}/openapi.json", a.base))
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    assert!(
        answered.is_ok_and(|r| r.status() == 200),
        "the worker stopped answering while its database hangs"
    );
    let _ = lock.kill();
    let _ = lock.wait();
    let (status, body) = until(true).await;
    assert_eq!(status, 200, "healthy again once it answers: {body}");

    // A database that is gone.
    let database = s.url.rsplit('/').next().unwrap();
    cluster().psql(&format!("DROP DATABASE {database} WITH (FORCE)"));
    let (status, body) = until(false).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "unhealthy", "{body}");
    // A request that fails on the store says so, and when to try again; it is no server bug.
    for path in [
        format!("{RUNS}/runs"),
        "/brain/acme/project/shop/inbox".to_owned(),
    ] {
        let r = s
            .client
            .get(format!("{}{path}", a.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503, "{path}");
        assert_eq!(
            r.headers().get("retry-after").map(|v| v.to_str().unwrap()),
            Some("5"),
            "{path}"
        );
        let body: Value = r.json().await.unwrap();
        assert_eq!(
            body["error"]["code"], "MAG-HTTP-STORE-UNAVAILABLE",
            "{path}: {body}"
        );
    }
}

/// `overlap: cancel_other` whose previous run is held by a worker that was killed: the cancel
/// finds no one to answer it until the lease runs out and another worker reclaims the run. It
/// is tried again until then, so the old run ends cancelled instead of going on beside the
/// newer ticks' runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_other_whose_run_a_killed_worker_held_cancels_it_once_reclaimed() {
    let s = Setup::new();
    let shop = s.root.join("acme/shop/_vance");
    write(
        &shop.join("workflows/hold.yaml"),
        "start: wait\nstates:\n  wait: { type: timer_task, duration: 1h, on: { fired: done } }\n  done: { type: terminal }\n",
    );
    write(
        &shop.join("scheduler/every.yaml"),
        "cron: \"* * * * * *\"\nworkflow: hold\noverlap: cancel_other\n",
    );
    // A lease that outlasts the cancel's wait for an answer (30 s): the next worker's first
    // tick asks the dead worker, which never answers.
    let mut first = s.worker("40", "3");
    let pid = first.pid();
    // A tick's run, held by the first worker.
    let deadline = Instant::now() + Duration::from_secs(60);
    while held_by(&s.url, pid) == 0 {
        assert!(Instant::now() < deadline, "the first worker ran no tick");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    first.kill();
    let held = psql(
        &s.url,
        &format!(
            "SELECT replace(run_id::text, '-', '') FROM magrathea_leases WHERE owner LIKE '%:{pid}:%'"
        ),
    );
    let held: Vec<String> = held.lines().map(str::to_owned).collect();
    assert!(!held.is_empty());

    // The next worker's ticks cancel the previous run, which the dead worker holds until its
    // lease runs out.
    let second = s.worker("40", "3");
    let views = wait_all(
        &s.client,
        std::slice::from_ref(&second),
        &held,
        &["CANCELLED", "DONE", "FAILED"],
        Duration::from_secs(120),
    )
    .await;
    for view in views {
        assert_eq!(view["status"], "CANCELLED", "{view}");
        assert!(
            view["reason"]
                .as_str()
                .is_some_and(|r| r.contains("overlap: cancel_other")),
            "{view}"
        );
    }
}
