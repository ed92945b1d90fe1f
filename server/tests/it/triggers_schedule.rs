//! The scheduler against a clock the test moves: cron with seconds, time zones across both
//! daylight-saving changes, every overlap policy, catch-up after a gap, one-shot `at:`, pause
//! and resume — over real HTTP, with each tick's delivery on record.

use crate::http_common;

use std::sync::Arc;

use http_common::{ACME, Server, write};
use magrathea_server::triggers::{ManualClock, TriggerConfig};
use serde_json::{Value, json};

/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200_000;

const QUICK: &str = "start: done\nstates:\n  done: { type: terminal, result: ok }\n";

struct Fixture {
    server: Server,
    clock: ManualClock,
}

impl Fixture {
    /// A server whose triggers run on a manual clock at `now`, with the background loop off
    /// (each test makes the passes itself), and `schedule` as `_vance/scheduler/nightly.yaml`
    /// of acme/shop.
    async fn new(now: i64, schedule: &str) -> Self {
        let clock = ManualClock::new(now);
        let config = TriggerConfig {
            clock: Arc::new(clock.clone()),
            enabled: false,
            ..TriggerConfig::default()
        };
        let server = Server::start_with(|c| c.triggers(config)).await;
        let project = server.root.join("acme/shop/_vance");
        write(&project.join("workflows/quick.yaml"), QUICK);
        write(&project.join("scheduler/nightly.yaml"), schedule);
        let f = Self { server, clock };
        let h = f.server.handle.as_ref().unwrap();
        h.triggers().resync_all(h.state()).unwrap();
        f.pass().await; // the first pass sets the cursor at now
        f
    }

    async fn pass(&self) {
        let h = self.server.handle.as_ref().unwrap();
        h.triggers().tick(h.state()).await.unwrap();
    }

    /// The id of acme/shop's first trigger.
    async fn trigger_id(&self) -> String {
        let listed: Value = self
            .server
            .get_json("/brain/acme/project/shop/triggers", Some(ACME))
            .await;
        listed["triggers"][0]["id"].as_str().unwrap().to_owned()
    }

    /// Resumes (`enabled`) or pauses the trigger `id` through the API.
    async fn switch(&self, id: &str, enabled: bool) -> reqwest::Result<reqwest::Response> {
        self.server
            .client
            .patch(self.server.url(&format!("/v1/workflow-triggers/{id}")))
            .bearer_auth(ACME)
            .json(&json!({ "enabled": enabled }))
            .send()
            .await
    }

    /// Moves the clock by `ms` and makes a pass.
    async fn advance(&self, ms: i64) {
        self.clock.advance(ms);
        self.pass().await;
    }

    /// The schedule's deliveries, oldest first.
    async fn deliveries(&self) -> Vec<Value> {
        let v: Value = self
            .server
            .get_json(
                "/brain/acme/project/shop/triggers/deliveries?trigger=nightly&limit=1000",
                Some(ACME),
            )
            .await;
        let mut all = v["deliveries"].as_array().unwrap().clone();
        all.reverse();
        all
    }

    /// `(tick offset from T0 in ms, status, reason)` of each delivery, oldest first.
    async fn ticks(&self, base: i64) -> Vec<(i64, String, String)> {
        self.deliveries()
            .await
            .iter()
            .map(|d| {
                (
                    d["tickMs"].as_i64().unwrap() - base,
                    d["status"].as_str().unwrap().to_owned(),
                    d["reason"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }

    /// The project's runs started by the schedule, oldest first.
    async fn runs(&self) -> Vec<Value> {
        let v: Value = self
            .server
            .get_json("/brain/acme/project/shop/workflows/runs", Some(ACME))
            .await;
        let mut runs: Vec<Value> = v
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["startedBy"] == "schedule:nightly")
            .cloned()
            .collect();
        runs.reverse();
        runs
    }

    async fn approve(&self, run: &str) {
        let item = format!("{run}-2");
        let (status, body) = http_common::code(
            self.server
                .post(
                    &format!("/v1/workflow-approvals/{item}/approve"),
                    Some(ACME),
                )
                .json(&json!({}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        self.server.wait_status("shop", run, &["DONE"]).await;
    }
}

fn accepted(n: i64) -> (i64, String, String) {
    (n, "accepted".into(), String::new())
}

fn skipped(n: i64, reason: &str) -> (i64, String, String) {
    (n, "skipped".into(), reason.into())
}

#[tokio::test]
async fn a_cron_with_seconds_fires_each_tick_once() {
    let f = Fixture::new(
        T0 + 3_000,
        "cron: \"*/10 * * * * *\"\nworkflow: quick\nparams: {scope: production}\n",
    )
    .await;
    f.advance(5_000).await; // 8 s: nothing due
    assert!(f.deliveries().await.is_empty());
    f.advance(2_000).await; // 10 s
    f.pass().await; // a second pass over the same instant fires nothing more
    f.advance(25_000).await; // 35 s: 20 and 30 are due
    assert_eq!(
        f.ticks(T0).await,
        vec![accepted(10_000), accepted(20_000), accepted(30_000)]
    );
    let runs = f.runs().await;
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0]["params"], json!({"scope": "production"}));
    let ids: Vec<String> = f
        .deliveries()
        .await
        .iter()
        .map(|d| d["runId"].as_str().unwrap().to_owned())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 3, "one run per tick: {ids:?}");
}

/// The wall clock ran a day ahead (the schedule fired that day's ticks) and is set right: the
/// schedule goes on at the true times instead of staying silent for the day. A step back of
/// a few seconds is waited out: no tick fires twice for it.
#[tokio::test]
async fn a_clock_set_back_does_not_silence_the_schedule() {
    const MIN: i64 = 60_000;
    const DAY: i64 = 24 * 60 * MIN;
    let f = Fixture::new(T0 + 1_000, "cron: \"0 * * * * *\"\nworkflow: quick\n").await;
    f.advance(MIN).await;
    assert_eq!(f.ticks(T0).await, vec![accepted(MIN)]);
    // A few seconds back and forth again: nothing twice.
    f.clock.set(T0 + MIN - 5_000);
    f.pass().await;
    f.clock.set(T0 + MIN + 2_000);
    f.pass().await;
    assert_eq!(f.ticks(T0).await, vec![accepted(MIN)]);

    f.clock.set(T0 + DAY + 1_000);
    // The day's ticks were missed: the last ones fire, the first hundred are recorded as
    // skipped.
    f.pass().await;
    assert_eq!(f.ticks(T0).await.last().unwrap(), &accepted(DAY));
    f.clock.set(T0 + MIN + 1_000);
    f.pass().await;
    // The next tick fires at its true time, and its record says so (not the skip recorded
    // while the clock ran ahead).
    f.advance(MIN).await;
    let fired: Vec<i64> = f
        .ticks(T0)
        .await
        .into_iter()
        .filter(|t| t.1 == "accepted")
        .map(|t| t.0)
        .collect();
    assert_eq!(fired, [MIN, 2 * MIN, DAY - MIN, DAY]);
    assert_eq!(f.runs().await.len(), 4);
}

#[tokio::test]
async fn run_as_becomes_started_by_and_a_five_field_cron_is_minute_first() {
    let f = Fixture::new(T0, "cron: \"*/5 * * * *\"\nworkflow: quick\nrunAs: ops\n").await;
    f.advance(299_000).await;
    assert!(f.deliveries().await.is_empty());
    f.advance(1_000).await; // 00:05:00
    assert_eq!(f.ticks(T0).await, vec![accepted(300_000)]);
    let v: Value = f
        .server
        .get_json("/brain/acme/project/shop/workflows/runs", Some(ACME))
        .await;
    assert_eq!(v[0]["startedBy"], "ops");
}

#[tokio::test]
async fn overlap_skip_leaves_out_ticks_while_the_last_run_is_going() {
    let f = Fixture::new(T0, "cron: \"*/10 * * * * *\"\nworkflow: approve\n").await;
    f.advance(10_000).await;
    f.advance(10_000).await;
    assert_eq!(
        f.ticks(T0).await,
        vec![accepted(10_000), skipped(20_000, "overlap")]
    );
    let first = f.runs().await[0]["workflowRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    f.approve(&first).await;
    f.advance(10_000).await;
    assert_eq!(f.ticks(T0).await.last().unwrap(), &accepted(30_000));
    assert_eq!(f.runs().await.len(), 2);
}

#[tokio::test]
async fn overlap_buffer_one_starts_one_waiting_tick_when_the_last_run_ends() {
    let f = Fixture::new(
        T0,
        "cron: \"*/10 * * * * *\"\nworkflow: approve\noverlap: buffer_one\n",
    )
    .await;
    f.advance(10_000).await; // runs
    f.advance(10_000).await; // buffered
    f.advance(10_000).await; // buffer full: skipped
    assert_eq!(
        f.ticks(T0).await,
        vec![accepted(10_000), skipped(30_000, "overlap")]
    );
    let first = f.runs().await[0]["workflowRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    f.approve(&first).await;
    f.advance(1_000).await; // the buffered tick starts now
    assert_eq!(
        f.ticks(T0).await,
        vec![
            accepted(10_000),
            accepted(20_000),
            skipped(30_000, "overlap")
        ]
    );
    assert_eq!(f.runs().await.len(), 2);
}

/// A tick `buffer_one` kept does not vanish when the schedule is paused before it starts: it
/// is on record as skipped, and the schedule's next tick after the resume is its own.
#[tokio::test]
async fn a_buffered_tick_dropped_by_a_pause_is_recorded_as_skipped() {
    let f = Fixture::new(
        T0,
        "cron: \"*/10 * * * * *\"\nworkflow: approve\noverlap: buffer_one\n",
    )
    .await;
    f.advance(10_000).await; // runs
    f.advance(10_000).await; // buffered
    let id = f.trigger_id().await;
    let patch = |enabled: bool| f.switch(&id, enabled);
    assert!(patch(false).await.unwrap().status().is_success());
    f.advance(1_000).await;
    assert_eq!(
        f.ticks(T0).await,
        vec![accepted(10_000), skipped(20_000, "trigger_disabled")]
    );
    assert!(patch(true).await.unwrap().status().is_success());
    let first = f.runs().await[0]["workflowRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    f.approve(&first).await;
    f.advance(1_000).await;
    assert_eq!(f.runs().await.len(), 1, "the dropped tick never starts");
}

#[tokio::test]
async fn a_buffered_tick_of_a_removed_schedule_is_recorded_as_skipped() {
    let f = Fixture::new(
        T0,
        "cron: \"*/10 * * * * *\"\nworkflow: approve\noverlap: buffer_one\n",
    )
    .await;
    f.advance(10_000).await; // runs
    f.advance(10_000).await; // buffered
    std::fs::remove_file(
        f.server
            .root
            .join("acme/shop/_vance/scheduler/nightly.yaml"),
    )
    .unwrap();
    let h = f.server.handle.as_ref().unwrap();
    h.triggers().resync_all(h.state()).unwrap();
    f.advance(1_000).await;
    assert_eq!(
        f.ticks(T0).await,
        vec![accepted(10_000), skipped(20_000, "trigger_deleted")]
    );
}

#[tokio::test]
async fn overlap_allow_all_starts_every_tick() {
    let f = Fixture::new(
        T0,
        "cron: \"*/10 * * * * *\"\nworkflow: approve\noverlap: allow_all\n",
    )
    .await;
    f.advance(10_000).await;
    f.advance(10_000).await;
    assert_eq!(f.ticks(T0).await, vec![accepted(10_000), accepted(20_000)]);
    for run in f.runs().await {
        assert_eq!(run["status"], "WAITING");
    }
}

#[tokio::test]
async fn overlap_cancel_other_cancels_the_last_run_and_starts_the_new_tick() {
    let f = Fixture::new(
        T0,
        "cron: \"*/10 * * * * *\"\nworkflow: approve\noverlap: cancel_other\n",
    )
    .await;
    f.advance(10_000).await;
    let first = f.runs().await[0]["workflowRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    f.advance(10_000).await;
    assert_eq!(f.ticks(T0).await, vec![accepted(10_000), accepted(20_000)]);
    f.server.wait_status("shop", &first, &["CANCELLED"]).await;
    let runs = f.runs().await;
    assert_eq!(runs[1]["status"], "WAITING");
}

#[tokio::test]
async fn catch_up_fires_the_ticks_inside_the_window_in_order_and_records_the_older_as_skipped() {
    let f = Fixture::new(
        T0,
        "cron: \"*/10 * * * * *\"\nworkflow: quick\ncatchupWindow: 30s\noverlap: allow_all\n",
    )
    .await;
    // No pass for 95 s: as if no process ran.
    f.advance(95_000).await;
    let mut want: Vec<(i64, String, String)> = (1..=6)
        .map(|n| skipped(n * 10_000, "outside_catchup_window"))
        .collect();
    want.extend([accepted(70_000), accepted(80_000), accepted(90_000)]);
    assert_eq!(f.ticks(T0).await, want);
    assert_eq!(f.runs().await.len(), 3);
}

/// A tick reached later than `catchupWindow` is missed even when it is the only one due (a
/// daily job whose server was down for hours does not start hours late): recorded as skipped.
#[tokio::test]
async fn a_tick_older_than_the_window_is_skipped_even_alone() {
    let f = Fixture::new(
        T0,
        "at: \"2026-03-01T00:00:10Z\"\nworkflow: quick\ncatchupWindow: 5s\n",
    )
    .await;
    // No pass for 30 s: as if no process ran.
    f.advance(30_000).await;
    assert_eq!(
        f.ticks(T0).await,
        vec![skipped(10_000, "outside_catchup_window")]
    );
    assert!(f.runs().await.is_empty());
}

/// The next fire times listed while no scheduler has run for a while are the ones it will
/// fire: ticks past the catch-up window are not listed (they will be skipped), and a schedule
/// rewritten to other times starts from now.
#[tokio::test]
async fn next_fire_times_are_those_the_scheduler_will_fire() {
    let f = Fixture::new(
        T0,
        "cron: \"*/10 * * * * *\"\nworkflow: quick\ncatchupWindow: 30s\n",
    )
    .await;
    async fn next(f: &Fixture) -> i64 {
        let listed: Value = f
            .server
            .get_json("/brain/acme/project/shop/triggers", Some(ACME))
            .await;
        listed["triggers"][0]["nextFireMs"].as_i64().unwrap()
    }
    assert_eq!(next(&f).await, T0 + 10_000);
    // 95 s without a pass: the ticks at 10–60 s are past the window (and a second of slack).
    f.clock.advance(95_000);
    assert_eq!(next(&f).await, T0 + 70_000);
    // Rewritten to other times while no pass ran: from now on.
    write(
        &f.server
            .root
            .join("acme/shop/_vance/scheduler/nightly.yaml"),
        "cron: \"*/7 * * * * *\"\nworkflow: quick\n",
    );
    let h = f.server.handle.as_ref().unwrap();
    h.triggers().resync_all(h.state()).unwrap();
    assert_eq!(next(&f).await, T0 + 102_000, "second 42 of the minute");
}

#[tokio::test]
async fn a_one_shot_at_fires_once_at_its_instant() {
    let f = Fixture::new(
        T0,
        "at: \"2026-03-01T01:00:00+01:00\"\nworkflow: quick\n", // = T0
    )
    .await;
    let f2 = Fixture::new(T0, "at: \"2026-03-01T00:01:00Z\"\nworkflow: quick\n").await;
    drop(f);
    f2.advance(30_000).await;
    assert!(f2.deliveries().await.is_empty());
    let listed: Value = f2
        .server
        .get_json("/brain/acme/project/shop/triggers", Some(ACME))
        .await;
    assert_eq!(listed["triggers"][0]["nextFireAt"], "2026-03-01T00:01:00Z");
    f2.advance(30_000).await;
    f2.advance(3_600_000).await;
    assert_eq!(f2.ticks(T0).await, vec![accepted(60_000)]);
    let listed: Value = f2
        .server
        .get_json("/brain/acme/project/shop/triggers", Some(ACME))
        .await;
    assert_eq!(listed["triggers"][0]["nextFireAt"], Value::Null);
}

#[tokio::test]
async fn a_schedule_rewritten_to_other_times_does_not_fire_their_ticks_before_the_write() {
    let f = Fixture::new(T0 + 3_000, "cron: \"0 0 6 * * *\"\nworkflow: quick\n").await;
    f.advance(17_000).await; // 20 s: nothing due at 06:00 yet
    // Every 5 s from now on: 5, 10, 15 and 20 s lie before the write and are not its ticks.
    write(
        &f.server
            .root
            .join("acme/shop/_vance/scheduler/nightly.yaml"),
        "cron: \"*/5 * * * * *\"\nworkflow: quick\n",
    );
    let h = f.server.handle.as_ref().unwrap();
    h.triggers().resync_all(h.state()).unwrap();
    f.pass().await;
    assert!(f.deliveries().await.is_empty(), "{:?}", f.ticks(T0).await);
    f.advance(5_000).await; // 25 s
    assert_eq!(f.ticks(T0).await, vec![accepted(25_000)]);
    // A rewrite that keeps the times (another parameter) keeps the schedule's place.
    write(
        &f.server
            .root
            .join("acme/shop/_vance/scheduler/nightly.yaml"),
        "cron: \"*/5 * * * * *\"\nworkflow: quick\nparams: {why: rewritten}\n",
    );
    h.triggers().resync_all(h.state()).unwrap();
    f.clock.advance(10_000); // 35 s, 30 and 35 due, seen by the same pass as the rewrite
    f.pass().await;
    assert_eq!(
        f.ticks(T0).await,
        vec![accepted(25_000), accepted(30_000), accepted(35_000)]
    );
}

#[tokio::test]
async fn pause_and_resume_through_the_api_skip_what_was_missed_meanwhile() {
    let f = Fixture::new(T0, "cron: \"*/10 * * * * *\"\nworkflow: quick\n").await;
    let id = f.trigger_id().await;
    let patch = |enabled: bool| f.switch(&id, enabled);
    let paused: Value = patch(false).await.unwrap().json().await.unwrap();
    assert_eq!(paused["paused"], true);
    assert_eq!(paused["active"], false);
    f.advance(35_000).await;
    assert!(
        f.deliveries().await.is_empty(),
        "a paused schedule fires nothing"
    );
    let resumed: Value = patch(true).await.unwrap().json().await.unwrap();
    assert_eq!(resumed["active"], true);
    f.advance(1_000).await; // 36 s: 10, 20 and 30 were missed while paused
    assert!(f.deliveries().await.is_empty(), "no catch-up after a pause");
    f.advance(4_000).await; // 40 s
    assert_eq!(f.ticks(T0).await, vec![accepted(40_000)]);
    // Another tenant's token cannot touch it.
    let (status, _) = http_common::code(
        f.server
            .client
            .patch(f.server.url(&format!("/v1/workflow-triggers/{id}")))
            .bearer_auth(http_common::GLOBEX)
            .json(&json!({ "enabled": false }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404);
}

/// 2026-03-28T12:00:00Z and 2026-10-24T12:00:00Z.
const BEFORE_SPRING: i64 = 1_774_699_200_000;
const BEFORE_FALL: i64 = 1_792_843_200_000;

#[tokio::test]
async fn a_wall_clock_time_skipped_by_spring_forward_fires_once_at_the_shift() {
    let f = Fixture::new(
        BEFORE_SPRING,
        // Passes hours apart: a window of a day keeps the ticks they reach late.
        "cron: \"0 30 2 * * *\"\ntimezone: Europe/Berlin\nworkflow: quick\ncatchupWindow: 1d\n",
    )
    .await;
    // Walk through the night hour by hour.
    for _ in 0..24 {
        f.advance(3_600_000).await;
    }
    // 02:30 did not exist on 2026-03-29: it fires at 03:00 CEST = 01:00Z.
    assert_eq!(f.ticks(0).await, vec![accepted(1_774_746_000_000)]);
    f.advance(24 * 3_600_000).await;
    // The next day 02:30 CEST = 00:30Z.
    assert_eq!(
        f.ticks(0).await.last().unwrap(),
        &accepted(1_774_830_600_000)
    );
}

#[tokio::test]
async fn a_wall_clock_time_repeated_by_fall_back_fires_once() {
    let f = Fixture::new(
        BEFORE_FALL,
        // Passes an hour apart: a window of two hours keeps the ticks they reach late.
        "cron: \"0 30 2 * * *\"\ntimezone: Europe/Berlin\nworkflow: quick\ncatchupWindow: 2h\n",
    )
    .await;
    for _ in 0..24 {
        f.advance(3_600_000).await;
    }
    // 02:30 came twice on 2026-10-25 (00:30Z in CEST, 01:30Z in CET): it fired at the first.
    assert_eq!(f.ticks(0).await, vec![accepted(1_792_888_200_000)]);
}
