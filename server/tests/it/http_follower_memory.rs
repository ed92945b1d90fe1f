//! A follower that does not read costs the server bounded memory: `magrathea serve` as a
//! process, a finished run of 300,000 records in its store, five SSE followers that take one
//! chunk each and stop reading; the server's resident memory (VmRSS) grows by far less than
//! the journal's size, where loading the journal per follower took several times that size.

use crate::http_common;
use crate::long_run;
use crate::serve_child;

use std::time::Duration;

use http_common::*;
use serve_child::ServeChild;

/// Records of the long run, and the bytes of each one's value.
const VARS: u64 = 300_000;
const VALUE_LEN: usize = 100;
/// Followers that connect and stop reading.
const FOLLOWERS: usize = 5;

/// The process's resident memory, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .map(|v| v.trim().parse().unwrap())
        .expect("a VmRSS line");
    kib * 1024
}

/// The highest resident memory seen over a short while: the followers fill their channels
/// and socket buffers meanwhile, so the peak is what they hold.
async fn peak_rss(pid: u32) -> u64 {
    let mut peak = 0;
    for _ in 0..20 {
        peak = peak.max(rss(pid));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    peak
}

const MIB: u64 = 1 << 20;

#[tokio::test]
async fn followers_that_do_not_read_cost_bounded_memory_on_a_long_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let (run, journal_bytes) = long_run::write_long_run(&root.join(".magrathea"), VARS, VALUE_LEN);
    let server = ServeChild::start(&root);
    let (pid, base) = (server.pid(), server.base.clone());
    let client = reqwest::Client::new();
    let events = format!("{base}/brain/acme/project/shop/workflows/runs/{run}/events");

    // Warm up every path a follower takes (its first chunk and the SSE encoder) once, so
    // that the baseline holds what any server that served one follower holds.
    let mut warm = client.get(&events).bearer_auth(ACME).send().await.unwrap();
    assert_eq!(warm.status(), 200);
    assert!(warm.chunk().await.unwrap().is_some());
    drop(warm);
    let before = peak_rss(pid).await;

    let mut idle = Vec::new();
    for _ in 0..FOLLOWERS {
        let mut r = client.get(&events).bearer_auth(ACME).send().await.unwrap();
        assert_eq!(r.status(), 200);
        // The follower has started sending; from here on nobody reads.
        assert!(r.chunk().await.unwrap().is_some());
        idle.push(r);
    }
    let during = peak_rss(pid).await;
    let growth = during.saturating_sub(before);
    eprintln!(
        "journal {} MiB encoded; server RSS {} MiB before, {} MiB with {FOLLOWERS} idle \
         followers (+{} KiB)",
        journal_bytes / MIB,
        before / MIB,
        during / MIB,
        growth / 1024
    );
    let bound = journal_bytes / 4;
    assert!(
        growth < bound,
        "{FOLLOWERS} idle followers grew the server by {} MiB, more than a quarter of the \
         journal's {} MiB",
        growth / MIB,
        journal_bytes / MIB
    );

    // Once they hang up, the server holds no more than before they came (give or take what
    // the allocator keeps).
    drop(idle);
    let after = peak_rss(pid).await;
    eprintln!("server RSS {} MiB after the followers left", after / MIB);
    assert!(
        after.saturating_sub(before) < bound,
        "the server kept {} MiB after its followers left",
        after.saturating_sub(before) / MIB
    );
    drop(server);
}
