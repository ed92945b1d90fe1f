//! A bounded load test of the HTTP server: 10,000 starts (`LOAD_STARTS`) from 64 concurrent
//! clients over loopback; prints throughput and latency percentiles.
//!
//! `cargo bench -p magrathea-server --bench http_load`

#[path = "../tests/http_common/mod.rs"]
mod http_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_common::*;
use serde_json::json;

const CLIENTS: usize = 64;

/// The allocator of the `magrathea` binary, whose server this measures.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(ten_thousand_starts_from_64_clients());
}

async fn ten_thousand_starts_from_64_clients() {
    let total: usize = std::env::var("LOAD_STARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/noop.yaml"),
        "start: done\nstates:\n  done: { type: terminal, result: ok }\n",
    );
    // As on a server that has been up a while, the tenant's settings were written well before
    // the load (a file written in the last 2 s is read again at each use; see the settings
    // cache of `magrathea-exec`).
    let settings = s.root.join("acme/_tenant/_vance/settings.yaml");
    std::fs::File::options()
        .write(true)
        .open(&settings)
        .and_then(|f| {
            f.set_times(
                std::fs::FileTimes::new()
                    .set_modified(std::time::SystemTime::now() - Duration::from_secs(60)),
            )
        })
        .expect("dating the tenant settings");
    let url = Arc::new(s.url("/brain/acme/project/shop/workflows/noop/start"));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let url = url.clone();
        let client = reqwest::Client::new();
        let n = total / CLIENTS + usize::from(c < total % CLIENTS);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(n);
            for _ in 0..n {
                let t = Instant::now();
                let r = client
                    .post(url.as_str())
                    .bearer_auth(ACME)
                    .json(&json!({}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 201);
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut all: Vec<Duration> = Vec::with_capacity(total);
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed();
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    println!(
        "{total} starts, {CLIENTS} clients: {:.0} starts/s; p50 {:?} p99 {:?} max {:?}",
        total as f64 / elapsed.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        all[all.len() - 1],
    );
    let metrics = s
        .get("/metrics", None)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in metrics
        .lines()
        .filter(|l| l.starts_with("magrathea_journal_"))
    {
        println!("{line}");
    }
}
