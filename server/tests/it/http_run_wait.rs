//! A long poll on a run over real HTTP: `GET …/workflows/runs/{id}?wait=…` answers once the
//! run ends (or, with `until=settled`, waits on a gate), or with the run as it is when the wait
//! is over; its refusals; and its bound, the token subject's follower slots.

use std::time::{Duration, Instant};

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

fn run_path(run: &str, query: &str) -> String {
    format!("/brain/acme/project/shop/workflows/runs/{run}?{query}")
}

#[tokio::test]
async fn a_wait_answers_once_the_run_ends_and_a_settled_wait_once_it_waits_on_its_gate() {
    let s = Server::start().await;
    let run = s.start_run("shop", "approve", json!({})).await;

    // Settled: the run waits on its gate, which the answer says.
    let settled: Value = s
        .get_json(&run_path(&run, "wait=30s&until=settled"), Some(ACME))
        .await;
    assert_eq!(settled["status"], "WAITING", "{settled}");

    // Ended: the request is answered only once the gate's answer has ended the run.
    let waiting = s.get(&run_path(&run, "wait=30"), Some(ACME)).send();
    let waiting = tokio::spawn(waiting);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "a run waiting on its gate has not ended: the request still waits"
    );
    let item = s.pending_item(&run).await;
    let id = item["id"].as_str().unwrap();
    let answered = s.answer(id, &json!({"kind": "approve"})).await;
    assert_eq!(answered.status(), 200);
    let ended = waiting.await.unwrap().unwrap();
    assert_eq!(ended.status(), 200);
    let ended: Value = ended.json().await.unwrap();
    assert_eq!(
        (ended["status"].clone(), ended["result"].clone()),
        (json!("DONE"), json!("approved")),
        "{ended}"
    );

    // A run that has ended is answered at once, whatever the wait.
    let again: Value = s
        .get_json(&run_path(&run, "wait=60s&until=settled"), Some(ACME))
        .await;
    assert_eq!(again["status"], "DONE");
}

/// A parent waiting on a sub-run's gate stays RUNNING, but nothing moves it until someone
/// answers: a settled wait answers then, as `magrathea run` stops with exit code 3.
#[tokio::test]
async fn a_settled_wait_answers_once_the_run_waits_on_people_through_a_sub_run() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/parent.yaml"),
        "start: call\nstates:\n  call:\n    type: workflow_task\n    workflow: approve\n    \
         on: { success: done }\n  done: { type: terminal, result: called }\n",
    );
    let run = s.start_run("shop", "parent", json!({})).await;
    let waiting = tokio::spawn(
        s.get(&run_path(&run, "wait=60s&until=settled"), Some(ACME))
            .send(),
    );
    // Answered long before the wait is over, though the parent still reads RUNNING.
    let v: Value = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the settled wait answered while the sub-run waits on its gate")
        .unwrap()
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["status"], "RUNNING", "{v}");
    assert_eq!(v["subRuns"][0]["status"], "WAITING", "{v}");
}

#[tokio::test]
async fn a_wait_that_is_over_answers_the_run_as_it_is() {
    let s = Server::start().await;
    let run = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let r = s
        .get(&run_path(&run, "wait=250ms"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"], "WAITING", "{v}");
    assert_eq!(v["workflowRunId"], run.as_str());
}

#[tokio::test]
async fn a_wait_is_refused_when_malformed_and_finds_no_run_of_another_tenant() {
    let s = Server::start().await;
    let run = s.start_run("shop", "approve", json!({})).await;
    for query in [
        "wait=2m",
        "wait=61",
        "wait=soon",
        "until=ended",
        "wait=1s&until=done",
    ] {
        let r = s
            .get(&run_path(&run, query), Some(ACME))
            .send()
            .await
            .unwrap();
        assert_eq!(
            code(r).await,
            (400, "MAG-HTTP-INVALID-WAIT".into()),
            "{query}"
        );
    }
    // Another tenant's token learns nothing and waits for nothing: 404 at once, as without a
    // wait, whatever the run does meanwhile.
    let other = s
        .get(
            &format!("/brain/globex/project/shop/workflows/runs/{run}?wait=30s"),
            Some(GLOBEX),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    let acme_path = s
        .get(&run_path(&run, "wait=30s"), Some(GLOBEX))
        .send()
        .await
        .unwrap();
    assert_eq!(
        code(acme_path).await,
        (404, "MAG-HTTP-404".into()),
        "globex's token on acme's path"
    );
}

/// Waits until a short wait on `run` (a WAITING run) gets the subject's slot, which it gives
/// back as it answers.
async fn until_a_slot_is_free(s: &Server, run: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = s
            .get(&run_path(run, "wait=1ms"), Some(ACME))
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            return;
        }
        assert_eq!(code(r).await, (429, "MAG-RD003".into()));
        assert!(Instant::now() < deadline, "the slot never came back");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_subject_waits_on_no_more_runs_than_its_follower_slots() {
    let s = Server::start_with(|c| c.max_followers_per_subject(1)).await;
    let first = s.start_run("shop", "approve", json!({})).await;
    let second = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &first, &["WAITING"]).await;
    s.wait_status("shop", &second, &["WAITING"]).await;

    // An SSE stream holds the subject's one slot: a wait is refused.
    let stream = s.events(&first).await;
    assert_eq!(stream.status(), 200);
    let refused = s
        .get(&run_path(&second, "wait=30s"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(code(refused).await, (429, "MAG-RD003".into()));

    // A run that has ended needs no slot; a plain read never does.
    let done = s.start_run("shop", "hello", json!({})).await;
    s.wait_status("shop", &done, &["DONE"]).await;
    let v: Value = s.get_json(&run_path(&done, "wait=30s"), Some(ACME)).await;
    assert_eq!(v["status"], "DONE");
    let plain = s
        .get(&run_path(&second, ""), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 200);
    drop(stream);

    // A wait holds the slot while it waits: a stream is refused until the wait answers.
    let holding = loop {
        until_a_slot_is_free(&s, &second).await;
        let poll = tokio::spawn(s.get(&run_path(&first, "wait=30s"), Some(ACME)).send());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let probe = s.events(&second).await;
        if probe.status() == 429 && !poll.is_finished() {
            break poll;
        }
        // The probe came first (a loaded machine): the wait was refused; try again.
        drop(probe);
        let _ = poll.await;
    };
    let item = s.pending_item(&first).await;
    let id = item["id"].as_str().unwrap();
    assert_eq!(
        s.answer(id, &json!({"kind": "approve"})).await.status(),
        200
    );
    let ended: Value = holding.await.unwrap().unwrap().json().await.unwrap();
    assert_eq!(ended["status"], "DONE");
    // Its slot is back as soon as it answered.
    let settled: Value = s
        .get_json(&run_path(&second, "wait=30s&until=settled"), Some(ACME))
        .await;
    assert_eq!(settled["status"], "WAITING");
    let stream = s.events(&second).await;
    assert_eq!(stream.status(), 200, "the wait gave its slot back");
}

/// The server's stop does not wait out a read waiting for its run, nor a run's live stream:
/// the read answers the run as it is, and the stream ends as a stream ends.
#[tokio::test]
async fn a_stop_answers_a_waiting_read_and_ends_a_run_s_stream() {
    let mut s = Server::start_with(|c| c.max_followers_per_subject(1)).await;
    let run = s.start_run("shop", "approve", json!({})).await;
    let other = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    s.wait_status("shop", &other, &["WAITING"]).await;
    // Once the wait holds its subject's one place, a short wait of the same subject is
    // refused; a probe that came first (a loaded machine) refuses the wait instead: again.
    let deadline = Instant::now() + Duration::from_secs(20);
    let waiting = loop {
        let waiting = tokio::spawn(s.get(&run_path(&run, "wait=60s"), Some(ACME)).send());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let probe = s
            .get(&run_path(&other, "wait=1ms"), Some(ACME))
            .send()
            .await
            .unwrap();
        if probe.status() == 429 && !waiting.is_finished() {
            break waiting;
        }
        let _ = waiting.await;
        assert!(Instant::now() < deadline, "the wait never began");
    };
    let stream = s
        .get(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/events"),
            Some(ACME_READ),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);

    s.handle.take().unwrap().shutdown().await.unwrap();
    let answered = waiting
        .await
        .unwrap()
        .expect("the waiting read is answered");
    assert_eq!(answered.status(), 200);
    let v: Value = answered.json().await.unwrap();
    assert_eq!(v["status"], "WAITING", "{v}");
    let records = stream.text().await.expect("the stream ends cleanly");
    assert!(records.contains("StartRecord"), "{records}");
}
