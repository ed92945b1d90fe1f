//! Exactly once per tick across SIGKILL: `magrathea serve` fires a per-second schedule and is
//! killed again and again at random instants (between a tick coming due and its run starting,
//! among others); afterwards every tick from the first to the last has exactly one run and one
//! accepted delivery.

use crate::http_common;
use crate::serve_child;

use std::collections::BTreeSet;
use std::time::Duration;

use http_common::{ACME, tree, write};
use serde_json::{Value, json};
use serve_child::ServeChild;

const QUICK: &str = "start: done\nstates:\n  done: { type: terminal, result: ok }\n";

#[tokio::test]
async fn every_tick_runs_exactly_once_however_often_the_server_is_killed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let vance = root.join("acme/shop/_vance");
    write(&vance.join("workflows/quick.yaml"), QUICK);
    write(
        &vance.join("scheduler/every-second.yaml"),
        "cron: \"* * * * * *\"\nworkflow: quick\noverlap: allow_all\ncatchupWindow: 10m\n",
    );
    let client = reqwest::Client::new();
    for round in 0..6u64 {
        let mut server = ServeChild::start(&root);
        // Different instants in the second each round.
        tokio::time::sleep(Duration::from_millis(900 + round * 317)).await;
        server.kill();
    }
    let server = ServeChild::start(&root);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Pause, so that the counts below hold still.
    let listed = server
        .get_json(&client, "/brain/acme/project/shop/triggers", ACME)
        .await;
    let id = listed["triggers"][0]["id"].as_str().unwrap().to_owned();
    let r = client
        .patch(format!("{}/v1/workflow-triggers/{id}", server.base))
        .bearer_auth(ACME)
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // A pass that began before the pause finishes its tick (the run, then its delivery): wait
    // until deliveries and runs hold still, then compare them.
    let mut seen = snapshot(&server, &client).await;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = snapshot(&server, &client).await;
        if now == seen {
            break;
        }
        seen = now;
    }
    let (deliveries, scheduled) = seen;
    let accepted: Vec<&Value> = deliveries
        .iter()
        .filter(|d| d["status"] == "accepted")
        .collect();
    assert!(
        deliveries.iter().all(|d| d["status"] == "accepted"),
        "nothing is skipped or lost: {deliveries:?}"
    );
    let ticks: Vec<i64> = accepted
        .iter()
        .map(|d| d["tickMs"].as_i64().unwrap())
        .collect();
    let unique: BTreeSet<i64> = ticks.iter().copied().collect();
    assert_eq!(
        unique.len(),
        ticks.len(),
        "a tick was delivered twice: {ticks:?}"
    );
    assert!(
        unique.len() >= 8,
        "too few ticks to mean anything: {ticks:?}"
    );
    let (first, last) = (*unique.first().unwrap(), *unique.last().unwrap());
    let expected: BTreeSet<i64> = (0..=(last - first) / 1000)
        .map(|i| first + i * 1000)
        .collect();
    assert_eq!(
        unique, expected,
        "a tick between the first and the last was lost"
    );

    let delivered: BTreeSet<String> = accepted
        .iter()
        .map(|d| d["runId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(delivered.len(), accepted.len(), "two ticks share a run");
    assert_eq!(
        scheduled, delivered,
        "every run is a tick's, every tick has its run"
    );
}

/// The schedule's deliveries and the runs it started, as the server lists them now.
async fn snapshot(server: &ServeChild, client: &reqwest::Client) -> (Vec<Value>, BTreeSet<String>) {
    let page = server
        .get_json(
            client,
            "/brain/acme/project/shop/triggers/deliveries?trigger=every-second&limit=1000",
            ACME,
        )
        .await;
    let deliveries = page["deliveries"].as_array().unwrap().clone();
    let runs = server
        .get_json(client, "/brain/acme/project/shop/workflows/runs", ACME)
        .await;
    let scheduled = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["startedBy"] == "schedule:every-second")
        .map(|r| r["workflowRunId"].as_str().unwrap().to_owned())
        .collect();
    (deliveries, scheduled)
}
