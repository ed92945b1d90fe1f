//! Triggers on a PostgreSQL store that two servers share: each tick is one run and one delivery
//! whichever server handles it, and a webhook delivery sent to both is accepted once.

use crate::http_common;

use std::sync::{Arc, OnceLock};

use http_common::{ACME, tree, write};
use magrathea_postgres::testing::TestCluster;
use magrathea_server::triggers::{ManualClock, TriggerConfig};
use magrathea_server::{ServeConfig, ServerHandle, serve};
use serde_json::Value;

fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(TestCluster::start)
}

/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200_000;
const PATH_TOKEN: &str = "f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899";

const QUICK: &str = "start: done\nstates:\n  done: { type: terminal, result: ok }\n";

struct Pair {
    _tmp: tempfile::TempDir,
    servers: Vec<(std::net::SocketAddr, ServerHandle)>,
    clock: ManualClock,
}

async fn pair() -> Pair {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let vance = root.join("acme/shop/_vance");
    write(&vance.join("workflows/quick.yaml"), QUICK);
    write(
        &vance.join("scheduler/tick.yaml"),
        "cron: \"*/10 * * * * *\"\nworkflow: quick\noverlap: allow_all\n",
    );
    write(
        &vance.join("events/hook.yaml"),
        "workflow: quick\nwebhook:\n  tokenSetting: webhooks.path\n  dedupe: { header: X-Delivery }\n",
    );
    write(
        &vance.join("settings.yaml"),
        &format!("webhooks:\n  path: {PATH_TOKEN}\n"),
    );
    let url = cluster().create_database();
    let clock = ManualClock::new(T0);
    let mut servers = Vec::new();
    for _ in 0..2 {
        let config = ServeConfig::new(&root)
            .addr("127.0.0.1:0".parse().unwrap())
            .store(&url)
            .triggers(TriggerConfig {
                clock: Arc::new(clock.clone()),
                enabled: false,
                ..TriggerConfig::default()
            });
        let (addr, handle) = serve(config).await.unwrap();
        handle.triggers().resync_all(handle.state()).unwrap();
        servers.push((addr, handle));
    }
    Pair {
        _tmp: tmp,
        servers,
        clock,
    }
}

impl Pair {
    /// Both servers make a pass at once.
    async fn passes(&self) {
        let (a, b) = (&self.servers[0].1, &self.servers[1].1);
        let (ra, rb) = tokio::join!(a.triggers().tick(a.state()), b.triggers().tick(b.state()));
        ra.unwrap();
        rb.unwrap();
    }

    async fn get(&self, path: &str) -> Value {
        reqwest::Client::new()
            .get(format!("http://{}{path}", self.servers[0].0))
            .bearer_auth(ACME)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn two_servers_on_one_database_fire_each_tick_once() {
    let p = pair().await;
    p.passes().await;
    for _ in 0..5 {
        p.clock.advance(10_000);
        p.passes().await;
    }
    let d = p
        .get("/brain/acme/project/shop/triggers/deliveries?trigger=tick&limit=100")
        .await;
    let ticks: Vec<i64> = d["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["status"], "accepted", "{d}");
            d["tickMs"].as_i64().unwrap() - T0
        })
        .collect();
    assert_eq!(ticks, [50_000, 40_000, 30_000, 20_000, 10_000]);
    let runs = p.get("/brain/acme/project/shop/workflows/runs").await;
    let scheduled = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["startedBy"] == "schedule:tick")
        .count();
    assert_eq!(scheduled, 5);
}

#[tokio::test]
async fn a_webhook_delivery_sent_to_both_servers_is_accepted_once() {
    let p = pair().await;
    let client = reqwest::Client::new();
    let send = |addr: std::net::SocketAddr| {
        client
            .post(format!("http://{addr}/v1/workflow-webhooks/{PATH_TOKEN}"))
            .header("X-Delivery", "same-one")
            .body("{}")
            .send()
    };
    let (a, b) = tokio::join!(send(p.servers[0].0), send(p.servers[1].0));
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut codes = [a.status().as_u16(), b.status().as_u16()];
    codes.sort_unstable();
    assert_eq!(codes, [200, 202]);
    let (a, b): (Value, Value) = (a.json().await.unwrap(), b.json().await.unwrap());
    assert_eq!(a["workflowRunId"], b["workflowRunId"]);
    let runs = p.get("/brain/acme/project/shop/workflows/runs").await;
    assert_eq!(runs.as_array().unwrap().len(), 1);
}
