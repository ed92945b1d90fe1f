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

/// What [`FOLLOWERS`] idle followers of a run of `vars` records of `value_len` bytes cost
/// the server: the journal's encoded bytes, the server's growth with the followers, and its
/// growth after they left.
async fn idle_followers(vars: u64, value_len: usize) -> (u64, u64, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let (run, journal_bytes) = long_run::write_long_run(&root.join(".magrathea"), vars, value_len);
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
    eprintln!(
        "journal {} MiB encoded; server RSS {} MiB before, {} MiB with {FOLLOWERS} idle \
         followers (+{} KiB)",
        journal_bytes / MIB,
        before / MIB,
        during / MIB,
        during.saturating_sub(before) / 1024
    );
    // Once they hang up, the server holds no more than before they came (give or take what
    // the allocator keeps).
    drop(idle);
    let after = peak_rss(pid).await;
    eprintln!("server RSS {} MiB after the followers left", after / MIB);
    drop(server);
    (
        journal_bytes,
        during.saturating_sub(before),
        after.saturating_sub(before),
    )
}

#[tokio::test]
async fn followers_that_do_not_read_cost_bounded_memory_on_a_long_run() {
    let (journal_bytes, growth, kept) = idle_followers(VARS, VALUE_LEN).await;
    let bound = journal_bytes / 4;
    assert!(
        growth < bound,
        "{FOLLOWERS} idle followers grew the server by {} MiB, more than a quarter of the \
         journal's {} MiB",
        growth / MIB,
        journal_bytes / MIB
    );
    assert!(
        kept < bound,
        "the server kept {} MiB after its followers left",
        kept / MIB
    );
}

/// Records of several MiB (a task's output may be 4 MiB): a follower's chunk and channel are
/// bounded in bytes, not only in records. Counted in records, each follower held the whole
/// journal, five times its size together.
#[tokio::test]
async fn followers_that_do_not_read_cost_bounded_memory_on_a_run_of_large_records() {
    let (journal_bytes, growth, kept) = idle_followers(100, 2 << 20).await;
    assert!(
        growth < journal_bytes,
        "{FOLLOWERS} idle followers grew the server by {} MiB, more than the journal's {} MiB",
        growth / MIB,
        journal_bytes / MIB
    );
    assert!(
        kept < journal_bytes,
        "the server kept {} MiB after its followers left",
        kept / MIB
    );
}
