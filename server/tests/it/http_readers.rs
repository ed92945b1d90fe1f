//! Readers of a run's journal are bounded: `GET …/journal` pages by cursor and limit, live
//! followers read long journals in order through to their end, and a token subject or a
//! WebSocket connection holds a bounded number of followers.

use crate::http_common;
use crate::live_common;
use crate::long_run;

use std::time::{Duration, Instant};

use http_common::*;
use live_common::*;
use magrathea_server::ServeConfig;
use serde_json::{Value, json};

/// A server whose store holds a finished run of `vars + 2` records in `acme/shop`.
async fn with_long_run(
    vars: u64,
    config: impl FnOnce(ServeConfig) -> ServeConfig,
) -> (Server, String, tempfile::TempDir) {
    with_run_of(vars, 16, config).await
}

/// [`with_long_run`] with values of `value_len` bytes.
async fn with_run_of(
    vars: u64,
    value_len: usize,
    config: impl FnOnce(ServeConfig) -> ServeConfig,
) -> (Server, String, tempfile::TempDir) {
    let store = tempfile::tempdir().unwrap();
    let (run, _) = long_run::write_long_run(store.path(), vars, value_len);
    let dir = store.path().to_path_buf();
    let s = Server::start_with(move |c| config(c.store(dir))).await;
    (s, run.to_string(), store)
}

fn seqs(records: &[Value]) -> Vec<u64> {
    records.iter().map(|r| r["seq"].as_u64().unwrap()).collect()
}

#[tokio::test]
async fn the_journal_is_paged_by_cursor_and_limit_and_every_record_comes_once() {
    let (s, run, _store) = with_long_run(1_300, |c| c).await;
    let path = format!("/brain/acme/project/shop/workflows/runs/{run}/journal");

    // The default page: 1,000 records, streamed in several store reads, then a cursor.
    let first = s.get(&path, Some(ACME)).send().await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["content-type"], "application/json");
    let cursor = first.headers()["x-next-cursor"]
        .to_str()
        .unwrap()
        .to_string();
    let link = first.headers()["link"].to_str().unwrap().to_string();
    assert_eq!(
        link,
        format!("<{path}?limit=1000&cursor={cursor}>; rel=\"next\"")
    );
    let page: Vec<Value> = first.json().await.unwrap();
    assert_eq!(seqs(&page), (0..1_000).collect::<Vec<_>>());
    assert_eq!(page[0]["type"], "StartRecord");

    // The last page has no cursor and ends with the terminal record.
    let last = s
        .get(&format!("{path}?cursor={cursor}"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert!(last.headers().get("x-next-cursor").is_none());
    assert!(last.headers().get("link").is_none());
    let rest: Vec<Value> = last.json().await.unwrap();
    assert_eq!(seqs(&rest), (1_000..1_302).collect::<Vec<_>>());
    assert_eq!(rest.last().unwrap()["type"], "StatusRecord");

    // Small pages, followed by their Link, cover the journal exactly once.
    let mut all = Vec::new();
    let mut next = Some(format!("{path}?limit=300"));
    while let Some(url) = next.take() {
        let r = s.get(&url, Some(ACME)).send().await.unwrap();
        next = r.headers().get("link").map(|l| {
            l.to_str()
                .unwrap()
                .trim_start_matches('<')
                .split('>')
                .next()
                .unwrap()
                .to_string()
        });
        all.extend(r.json::<Vec<Value>>().await.unwrap());
    }
    assert_eq!(seqs(&all), (0..1_302).collect::<Vec<_>>());

    // A page past the end is empty.
    let past: Vec<Value> = s.get_json(&format!("{path}?cursor=5000"), Some(ACME)).await;
    assert!(past.is_empty());
}

#[tokio::test]
async fn a_bad_cursor_or_limit_is_400_and_a_foreign_run_404() {
    let (s, run, _store) = with_long_run(10, |c| c).await;
    let path = format!("/brain/acme/project/shop/workflows/runs/{run}/journal");
    for (query, want) in [
        ("limit=10001", "MAG-RD002"),
        ("limit=0", "MAG-RD002"),
        ("limit=-1", "MAG-RD002"),
        ("limit=ten", "MAG-RD002"),
        ("cursor=abc", "MAG-RD001"),
        ("cursor=-3", "MAG-RD001"),
    ] {
        let r = s
            .get(&format!("{path}?{query}"), Some(ACME))
            .send()
            .await
            .unwrap();
        assert_eq!(code(r).await, (400, want.to_string()), "{query}");
    }
    let ok: Vec<Value> = s.get_json(&format!("{path}?limit=10000"), Some(ACME)).await;
    assert_eq!(ok.len(), 12, "the largest limit is allowed");
    let other = s
        .get(&path.replace("/acme/", "/globex/"), Some(GLOBEX))
        .send()
        .await
        .unwrap();
    assert_eq!(code(other).await, (404, "MAG-HTTP-404".to_string()));
    let lab = s
        .get(&path.replace("/shop/", "/lab/"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(code(lab).await, (404, "MAG-HTTP-404".to_string()));
}

#[tokio::test]
async fn followers_of_a_long_run_get_every_record_once_in_order_through_its_end() {
    let (s, run, _store) = with_long_run(2_000, |c| c).await;
    let body = s.events(&run).await.text().await.unwrap();
    let got = sse_records(&body);
    assert_eq!(seqs(&got), (0..2_002).collect::<Vec<_>>());

    let mut ws = ws_connect(s.addr, ACME).await;
    subscribe(&mut ws, &run).await;
    let got = events_to_end(&mut ws).await;
    assert_eq!(got, (0..2_002).collect::<Vec<_>>());
}

/// Records larger than a store read's byte budget come one per read: a page and a follower
/// still get every one, and a page still ends with its cursor where its limit says.
#[tokio::test]
async fn records_larger_than_a_read_come_whole_in_pages_and_to_followers() {
    let (s, run, _store) = with_run_of(6, 1_500_000, |c| c).await;
    let path = format!("/brain/acme/project/shop/workflows/runs/{run}/journal");
    let whole: Vec<Value> = s.get_json(&path, Some(ACME)).await;
    assert_eq!(seqs(&whole), (0..8).collect::<Vec<_>>());
    assert_eq!(whole[3]["value"].as_str().map(str::len), Some(1_500_000));

    let first = s
        .get(&format!("{path}?limit=5"), Some(ACME))
        .send()
        .await
        .unwrap();
    let cursor = first.headers()["x-next-cursor"]
        .to_str()
        .unwrap()
        .to_string();
    let page: Vec<Value> = first.json().await.unwrap();
    assert_eq!(seqs(&page), (0..5).collect::<Vec<_>>());
    let rest: Vec<Value> = s
        .get_json(&format!("{path}?cursor={cursor}"), Some(ACME))
        .await;
    assert_eq!(seqs(&rest), (5..8).collect::<Vec<_>>());

    let body = s.events(&run).await.text().await.unwrap();
    assert_eq!(seqs(&sse_records(&body)), (0..8).collect::<Vec<_>>());
    let mut ws = ws_connect(s.addr, ACME).await;
    subscribe(&mut ws, &run).await;
    assert_eq!(events_to_end(&mut ws).await, (0..8).collect::<Vec<_>>());
}

#[tokio::test]
async fn sse_followers_beyond_the_subjects_cap_are_refused_with_429() {
    let s = Server::start_with(|c| c.max_followers_per_subject(2)).await;
    let run = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let events = format!("/brain/acme/project/shop/workflows/runs/{run}/events");
    let first = s.get(&events, Some(ACME)).send().await.unwrap();
    let second = s.get(&events, Some(ACME)).send().await.unwrap();
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );

    let third = s.get(&events, Some(ACME)).send().await.unwrap();
    let (status, code_) = code(third).await;
    assert_eq!((status, code_.as_str()), (429, "MAG-RD003"));

    // The cap is per subject: another subject of the tenant still follows.
    let reader = s.get(&events, Some(ACME_READ)).send().await.unwrap();
    assert_eq!(reader.status(), 200);

    // It counts WebSocket subscriptions too.
    let mut ws = ws_connect(s.addr, ACME).await;
    subscribe(&mut ws, &run).await;
    assert_eq!(next_error(&mut ws).await, "MAG-RD003");

    // A closed stream gives its place back.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let again = s.get(&events, Some(ACME)).send().await.unwrap();
        if again.status() == 200 {
            break;
        }
        assert_eq!(again.status(), 429);
        assert!(
            Instant::now() < deadline,
            "the closed stream's place never came back"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    drop(second);
}

#[tokio::test]
async fn a_websocket_connection_beyond_its_subscription_cap_gets_an_error_message() {
    let s = Server::start_with(|c| c.max_subscriptions_per_connection(2)).await;
    let mut runs = Vec::new();
    for _ in 0..3 {
        let run = s.start_run("shop", "approve", json!({})).await;
        s.wait_status("shop", &run, &["WAITING"]).await;
        runs.push(run);
    }
    let mut ws = ws_connect(s.addr, ACME).await;
    for run in &runs {
        subscribe(&mut ws, run).await;
    }
    assert_eq!(next_error(&mut ws).await, "MAG-RD004");
    // The connection stays usable.
    send(&mut ws, json!({"type": "ping"})).await;
    loop {
        let m = recv(&mut ws).await;
        assert_ne!(m["type"], "error", "{m}");
        if m["type"] == "pong" {
            break;
        }
    }
    // Another connection has its own subscriptions.
    let mut other = ws_connect(s.addr, ACME).await;
    subscribe(&mut other, &runs[2]).await;
    let m = recv(&mut other).await;
    assert_eq!(m["type"], "run-event", "{m}");
}
