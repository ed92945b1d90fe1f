//! Scheduler documents: what they fire at (seconds, five fields, daylight saving in two zones,
//! one-shots), catching up after a pause, jitter, and every validation error as the CLI
//! prints it.

use magrathea_yaml::scheduler::{Overlap, Schedule, load_schedule};

fn ms(text: &str) -> i64 {
    text.parse::<jiff::Timestamp>()
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .as_millisecond()
}

fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).unwrap().to_string()
}

fn schedule(body: &str) -> Schedule {
    load_schedule("s.yaml", "nightly", &format!("workflow: audit\n{body}"))
        .unwrap_or_else(|d| panic!("{d}"))
}

fn cron(pattern: &str, zone: &str) -> Schedule {
    schedule(&format!("cron: \"{pattern}\"\ntimezone: {zone}\n"))
}

/// The ticks in `(from, to]` as ISO instants.
fn ticks(s: &Schedule, from: &str, to: &str) -> Vec<String> {
    s.ticks_between(ms(from), ms(to), 1000)
        .into_iter()
        .map(iso)
        .collect()
}

// ---- the document -------------------------------------------------------------------

#[test]
fn the_reference_example_loads_with_its_defaults() {
    let text = "description: \"Start Daily Audit Workflow at 06:00\"\ncron: \"0 0 6 * * *\"\n\
                workflow: daily-audit                  # instead of recipe:\nparams:\n  \
                scope: \"production\"\nrunAs: \"ops\"\n";
    let s = load_schedule("daily-audit.yaml", "daily-audit", text).unwrap();
    assert_eq!(s.name(), "daily-audit");
    assert_eq!(s.description(), Some("Start Daily Audit Workflow at 06:00"));
    assert_eq!(s.cron(), Some("0 0 6 * * *"));
    assert_eq!(s.at_ms(), None);
    assert_eq!(s.workflow(), "daily-audit");
    assert_eq!(s.params()["scope"], "production");
    assert_eq!(s.run_as(), "ops");
    assert_eq!(s.timezone(), "UTC");
    assert!(s.enabled());
    assert_eq!(s.overlap(), Overlap::Skip);
    assert_eq!(s.catchup_window().as_secs(), 60);
    assert_eq!(s.jitter().as_millis(), 0);
    assert_eq!(
        s.next_tick(ms("2026-05-01T07:00:00Z")),
        Some(ms("2026-05-02T06:00:00Z"))
    );
}

#[test]
fn every_field_is_read() {
    let s = schedule(
        "cron: \"*/5 * * * *\"\ntimezone: Europe/Berlin\nenabled: false\noverlap: cancel_other\n\
         catchupWindow: PT10M\njitter: 30s\n",
    );
    assert_eq!(s.timezone(), "Europe/Berlin");
    assert!(!s.enabled());
    assert_eq!(s.overlap(), Overlap::CancelOther);
    assert_eq!(s.catchup_window().as_secs(), 600);
    assert_eq!(s.jitter().as_secs(), 30);
    assert_eq!(
        s.run_as(),
        "schedule:nightly",
        "runAs defaults to the schedule"
    );
    for (word, policy) in Overlap::ALL {
        let s = schedule(&format!("cron: \"* * * * *\"\noverlap: {word}\n"));
        assert_eq!(s.overlap(), policy);
        assert_eq!(policy.to_string(), word);
    }
}

// ---- cron ticks ---------------------------------------------------------------------

#[test]
fn a_six_field_cron_fires_on_its_seconds() {
    let s = cron("*/20 * * * * *", "UTC");
    assert_eq!(
        ticks(&s, "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"),
        [
            "2026-01-01T00:00:20Z",
            "2026-01-01T00:00:40Z",
            "2026-01-01T00:01:00Z"
        ]
    );
    let daily = cron("30 0 6 * * *", "UTC");
    assert_eq!(
        daily.next_tick(ms("2026-01-01T06:00:30Z")),
        Some(ms("2026-01-02T06:00:30Z")),
        "strictly after"
    );
    assert_eq!(
        daily.next_tick(ms("2026-01-01T06:00:29.999Z")),
        Some(ms("2026-01-01T06:00:30Z"))
    );
}

#[test]
fn a_five_field_cron_fires_on_the_minute() {
    let s = cron("15 */6 * * 1-5", "UTC");
    // 2026-01-02 is a Friday: the Saturday and Sunday have no ticks.
    assert_eq!(
        ticks(&s, "2026-01-02T13:00:00Z", "2026-01-05T07:00:00Z"),
        [
            "2026-01-02T18:15:00Z",
            "2026-01-05T00:15:00Z",
            "2026-01-05T06:15:00Z"
        ]
    );
}

#[test]
fn a_cron_reads_wall_clock_time_in_its_zone() {
    let s = cron("0 0 6 * * *", "Europe/Berlin");
    assert_eq!(
        s.next_tick(ms("2026-01-15T00:00:00Z")),
        Some(ms("2026-01-15T05:00:00Z")),
        "06:00 CET"
    );
    assert_eq!(
        s.next_tick(ms("2026-07-15T00:00:00Z")),
        Some(ms("2026-07-15T04:00:00Z")),
        "06:00 CEST"
    );
}

#[test]
fn berlin_spring_gap_fires_a_daily_job_once_at_the_shift() {
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST at 01:00Z; 02:30 does not exist that day.
    let s = cron("0 30 2 * * *", "Europe/Berlin");
    assert_eq!(
        ticks(&s, "2026-03-27T12:00:00Z", "2026-03-30T12:00:00Z"),
        [
            "2026-03-28T01:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:30:00Z"
        ]
    );
}

#[test]
fn berlin_autumn_fold_fires_a_daily_job_at_the_first_occurrence() {
    // 2026-10-25: 03:00 CEST falls back to 02:00 CET at 01:00Z; 02:30 happens twice.
    let s = cron("0 30 2 * * *", "Europe/Berlin");
    assert_eq!(
        ticks(&s, "2026-10-23T12:00:00Z", "2026-10-26T12:00:00Z"),
        [
            "2026-10-24T00:30:00Z",
            "2026-10-25T00:30:00Z",
            "2026-10-26T01:30:00Z"
        ]
    );
    assert_eq!(
        s.next_tick(ms("2026-10-25T00:30:00Z")),
        Some(ms("2026-10-26T01:30:00Z")),
        "the second 02:30 does not fire"
    );
}

#[test]
fn berlin_every_fifteen_minutes_across_both_changes() {
    let s = cron("*/15 * * * *", "Europe/Berlin");
    // Spring: 02:00, 02:15, 02:30, 02:45 do not exist and fire together with 03:00 CEST.
    assert_eq!(
        ticks(&s, "2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z"),
        [
            "2026-03-29T00:45:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-29T01:15:00Z",
            "2026-03-29T01:30:00Z"
        ]
    );
    // Autumn: the repeated hour 02:00–02:59 fires in its first (CEST) pass only.
    assert_eq!(
        ticks(&s, "2026-10-24T23:30:00Z", "2026-10-25T02:15:00Z"),
        [
            "2026-10-24T23:45:00Z",
            "2026-10-25T00:00:00Z",
            "2026-10-25T00:15:00Z",
            "2026-10-25T00:30:00Z",
            "2026-10-25T00:45:00Z",
            "2026-10-25T02:00:00Z",
            "2026-10-25T02:15:00Z"
        ]
    );
    assert_eq!(
        s.next_tick(ms("2026-10-25T01:20:00Z")),
        Some(ms("2026-10-25T02:00:00Z")),
        "asked from inside the second pass, the next tick is 03:00 CET"
    );
}

#[test]
fn new_york_spring_gap_and_autumn_fold() {
    // 2026-03-08: 02:00 EST jumps to 03:00 EDT at 07:00Z.
    let gap = cron("30 2 * * *", "America/New_York");
    assert_eq!(
        ticks(&gap, "2026-03-07T00:00:00Z", "2026-03-09T12:00:00Z"),
        [
            "2026-03-07T07:30:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-09T06:30:00Z"
        ]
    );
    // 2026-11-01: 02:00 EDT falls back to 01:00 EST at 06:00Z; 01:30 happens twice.
    let fold = cron("30 1 * * *", "America/New_York");
    assert_eq!(
        ticks(&fold, "2026-10-31T00:00:00Z", "2026-11-02T12:00:00Z"),
        [
            "2026-10-31T05:30:00Z",
            "2026-11-01T05:30:00Z",
            "2026-11-02T06:30:00Z"
        ]
    );
}

#[test]
fn new_york_every_fifteen_minutes_across_both_changes() {
    let s = cron("*/15 * * * *", "America/New_York");
    assert_eq!(
        ticks(&s, "2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z"),
        [
            "2026-03-08T06:45:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-08T07:15:00Z",
            "2026-03-08T07:30:00Z"
        ]
    );
    assert_eq!(
        ticks(&s, "2026-11-01T05:30:00Z", "2026-11-01T07:15:00Z"),
        [
            "2026-11-01T05:45:00Z",
            "2026-11-01T07:00:00Z",
            "2026-11-01T07:15:00Z"
        ]
    );
}

#[test]
fn seconds_in_a_gap_fire_once_together() {
    // Every 20 s from 02:00 to 02:59 Berlin: on 2026-03-29 all of that hour is one tick.
    let s = cron("*/20 * 2 * * *", "Europe/Berlin");
    assert_eq!(
        ticks(&s, "2026-03-28T12:00:00Z", "2026-03-30T00:00:30Z"),
        [
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:00:00Z",
            "2026-03-30T00:00:20Z"
        ]
    );
}

#[test]
fn ticks_between_stops_at_max() {
    let s = cron("* * * * * *", "UTC");
    let t = ms("2026-01-01T00:00:00Z");
    assert_eq!(
        s.ticks_between(t, t + 3_600_000, 3),
        [t + 1000, t + 2000, t + 3000]
    );
    assert!(s.ticks_between(t, t, 10).is_empty(), "an empty span");
}

// ---- one-shot at: -------------------------------------------------------------------

#[test]
fn at_fires_once_at_its_instant() {
    let s = schedule("at: \"2026-12-24T18:00:00+01:00\"\n");
    let at = ms("2026-12-24T17:00:00Z");
    assert_eq!(s.at_ms(), Some(at));
    assert_eq!(s.cron(), None);
    assert_eq!(s.next_tick(at - 1), Some(at), "before");
    assert_eq!(s.next_tick(at), None, "at the instant it is past");
    assert_eq!(s.next_tick(at + 86_400_000), None, "after");
    assert_eq!(s.ticks_between(at - 1, at, 10), [at]);
    // Reached within the window (60 s by default) it fires; an hour late it was missed.
    assert_eq!(s.catch_up(at - 1, at + 30_000, 10).fire, [at]);
    let late = s.catch_up(at - 1, at + 3_600_000, 10);
    assert_eq!((late.fire.len(), late.skipped.clone()), (0, vec![at]));
    assert_eq!(s.catch_up(at, at + 3_600_000, 10), Default::default());
    // Unquoted, YAML 1.2 reads the instant as a string too.
    let plain = schedule("at: 2026-12-24T17:00:00Z\n");
    assert_eq!(plain.at_ms(), Some(at));
}

// ---- catch-up -----------------------------------------------------------------------

fn minutely(window: &str) -> Schedule {
    schedule(&format!("cron: \"* * * * *\"\ncatchupWindow: {window}\n"))
}

#[test]
fn catch_up_inside_the_window_fires_every_missed_tick_in_order() {
    let s = minutely("10m");
    let t = ms("2026-06-01T12:00:00Z");
    let c = s.catch_up(t, t + 3 * 60_000 + 5_000, 100);
    assert_eq!(c.fire, [t + 60_000, t + 120_000, t + 180_000]);
    assert!(c.skipped.is_empty() && !c.skipped_more && !c.fire_more);
    assert_eq!(c.next_cursor(t), t + 180_000);
}

#[test]
fn catch_up_outside_the_window_skips_every_missed_tick() {
    let s = minutely("0s");
    let t = ms("2026-06-01T12:00:00Z");
    let c = s.catch_up(t, t + 3 * 60_000 + 5_000, 100);
    assert!(c.fire.is_empty(), "{:?}", c.fire);
    assert_eq!(c.skipped, [t + 60_000, t + 120_000, t + 180_000]);
    assert!(!c.skipped_more);
    // The scheduler's own delay does not make a tick missed: reached within a second, even a
    // zero window fires it.
    let c = s.catch_up(t, t + 60_000 + 900, 100);
    assert_eq!((c.fire, c.skipped), (vec![t + 60_000], vec![]));
}

#[test]
fn a_tick_waiting_for_its_jitter_is_not_missed() {
    let s = schedule("cron: \"*/2 * * * * *\"\ncatchupWindow: 3s\njitter: 9s\n");
    let t = ms("2026-06-01T12:00:00Z");
    // 12 s on: every tick since is at most 9 s of jitter + 3 s of window + 1 s old.
    let c = s.catch_up(t, t + 12_000, 100);
    assert!(c.skipped.is_empty(), "{:?}", c.skipped);
    assert_eq!(c.fire.len(), 6);
    // 14 s of window and jitter past a tick, it was missed.
    let c = s.catch_up(t, t + 16_000, 100);
    assert_eq!(c.skipped, [t + 2_000]);
}

#[test]
fn catch_up_straddling_the_window_splits_at_its_start() {
    let s = minutely("2m");
    let t = ms("2026-06-01T12:00:00Z");
    let now = t + 5 * 60_000;
    let c = s.catch_up(t, now, 100);
    assert_eq!(c.skipped, [t + 60_000, t + 120_000]);
    assert_eq!(
        c.fire,
        [t + 180_000, t + 240_000, t + 300_000],
        "a tick exactly at the window's start still fires"
    );
}

#[test]
fn catch_up_after_a_year_of_per_second_ticks_is_bounded() {
    let s = schedule("cron: \"* * * * * *\"\ncatchupWindow: 3s\n");
    let t = ms("2025-06-01T00:00:00Z");
    let now = t + 365 * 86_400_000;
    let c = s.catch_up(t, now, 5);
    assert_eq!(
        c.skipped,
        [t + 1000, t + 2000, t + 3000, t + 4000, t + 5000]
    );
    assert!(c.skipped_more);
    // 3 s of window and a second of the scheduler's delay.
    assert_eq!(
        c.fire,
        [now - 4000, now - 3000, now - 2000, now - 1000, now]
    );
    assert!(!c.fire_more);
}

#[test]
fn catch_up_caps_the_ticks_to_fire_and_continues_from_the_cursor() {
    let s = minutely("1h");
    let t = ms("2026-06-01T12:00:00Z");
    let now = t + 10 * 60_000;
    let first = s.catch_up(t, now, 4);
    assert_eq!(
        first.fire,
        [t + 60_000, t + 120_000, t + 180_000, t + 240_000]
    );
    assert!(first.fire_more);
    let mut cursor = first.next_cursor(t);
    let mut fired = first.fire;
    loop {
        let next = s.catch_up(cursor, now, 4);
        fired.extend(&next.fire);
        cursor = next.next_cursor(cursor);
        if !next.fire_more {
            break;
        }
    }
    let expected: Vec<i64> = (1..=10).map(|i| t + i * 60_000).collect();
    assert_eq!(fired, expected, "each tick once, in order");
    assert_eq!(
        s.catch_up(cursor, now, 4),
        Default::default(),
        "nothing is due twice"
    );
}

#[test]
fn catch_up_with_no_tick_due_fires_nothing() {
    let s = cron("0 0 6 * * *", "UTC");
    let t = ms("2026-06-01T07:00:00Z");
    let c = s.catch_up(t, t + 3_600_000, 10);
    assert!(c.fire.is_empty() && c.skipped.is_empty());
    assert_eq!(c.next_cursor(t), t);
}

// ---- jitter -------------------------------------------------------------------------

#[test]
fn jitter_is_deterministic_per_tick_and_below_the_bound() {
    let s = schedule("cron: \"* * * * *\"\njitter: 30s\n");
    let t = ms("2026-06-01T12:00:00Z");
    let mut distinct = std::collections::BTreeSet::new();
    for i in 0..200 {
        let tick = t + i * 60_000;
        let j = s.jitter_ms("tenant/project/nightly", tick);
        assert!((0..30_000).contains(&j), "{j}");
        assert_eq!(j, s.jitter_ms("tenant/project/nightly", tick), "same tick");
        assert_eq!(j, s.clone().jitter_ms("tenant/project/nightly", tick));
        distinct.insert(j);
    }
    assert!(distinct.len() > 150, "spread out: {}", distinct.len());
    assert_ne!(
        s.jitter_ms("tenant/project/nightly", t),
        s.jitter_ms("tenant/project/weekly", t),
        "another schedule gets another delay"
    );
    let none = schedule("cron: \"* * * * *\"\n");
    assert_eq!(none.jitter_ms("k", t), 0);
}

// ---- validation ---------------------------------------------------------------------

fn errors(text: &str) -> Vec<String> {
    match load_schedule("_vance/scheduler/s.yaml", "s", text) {
        Ok(_) => panic!("expected errors for {text:?}"),
        Err(d) => d.iter().map(ToString::to_string).collect(),
    }
}

#[track_caller]
fn has(text: &str, expected: &str) {
    let all = errors(text);
    assert!(
        all.iter().any(|d| d == expected),
        "expected {expected:?} in {all:#?}"
    );
}

const P: &str = "_vance/scheduler/s.yaml";

/// A schedule's workflow is a name, as a `workflow_task`'s: a path is refused at its value.
#[test]
fn a_workflow_that_is_a_path_is_refused() {
    has(
        "workflow: ../x\ncron: \"* * * * *\"\n",
        &format!(
            "{P}:1:11: [MAG-Y026] 'workflow' is '../x', which is not a workflow's name: \
             expected the name of _vance/workflows/<name>.yaml (ASCII letters, digits, '.', '_', '-')"
        ),
    );
}

#[test]
fn an_unknown_field_is_named_with_the_closest() {
    has(
        "workflow: a\ncron: \"* * * * *\"\ntimeZone: UTC\n",
        &format!(
            "{P}:3:1: [MAG-Y005] unknown field 'timeZone' in the scheduler document: expected \
             one of [description, cron, at, workflow, recipe, params, runAs, timezone, \
             enabled, overlap, catchupWindow, jitter] (did you mean 'timezone'?)"
        ),
    );
}

#[test]
fn recipe_and_workflow_together_point_at_the_second() {
    has(
        "cron: \"* * * * *\"\nworkflow: a\nrecipe: r\n",
        &format!(
            "{P}:3:1: [MAG-SC001] 'recipe' and 'workflow' are mutually exclusive: expected \
             only 'workflow: <name>'"
        ),
    );
    has(
        "recipe: r\ncron: \"* * * * *\"\nworkflow: a\n",
        &format!(
            "{P}:3:1: [MAG-SC001] 'recipe' and 'workflow' are mutually exclusive: expected \
             only 'workflow: <name>'"
        ),
    );
}

#[test]
fn a_recipe_alone_is_not_supported() {
    has(
        "cron: \"* * * * *\"\nrecipe: r\n",
        &format!(
            "{P}:2:1: [MAG-SC002] recipe schedules are not supported by Magrathea; use workflow:"
        ),
    );
}

#[test]
fn no_workflow_is_an_error() {
    has(
        "cron: \"* * * * *\"\n",
        &format!(
            "{P}:1:1: [MAG-SC003] the scheduler document has no 'workflow': expected \
             'workflow: <name of the workflow to start>'"
        ),
    );
    has(
        "cron: \"* * * * *\"\nworkflow: \"\"\n",
        &format!("{P}:2:11: [MAG-Y007] 'workflow' is a string '': expected the name of a workflow"),
    );
    has(
        "cron: \"* * * * *\"\nworkflow: 12\n",
        &format!(
            "{P}:2:11: [MAG-Y007] 'workflow' of the scheduler document is an integer (12): \
             expected a string"
        ),
    );
}

#[test]
fn cron_and_at_together_point_at_at() {
    has(
        "workflow: a\ncron: \"* * * * *\"\nat: \"2026-01-01T00:00:00Z\"\n",
        &format!(
            "{P}:3:5: [MAG-SC004] 'cron' and 'at' are mutually exclusive: expected 'cron:' for \
             a repeating schedule or 'at:' for a single run"
        ),
    );
}

#[test]
fn neither_cron_nor_at_is_an_error() {
    has(
        "workflow: a\n",
        &format!(
            "{P}:1:1: [MAG-SC005] the scheduler document has neither 'cron' nor 'at': \
             expected 'cron: \"<pattern>\"' or 'at: <ISO-8601 instant>'"
        ),
    );
}

#[test]
fn a_bad_cron_says_why() {
    has(
        "workflow: a\ncron: \"0 6 * *\"\n",
        &format!(
            "{P}:2:7: [MAG-SC006] invalid cron expression '0 6 * *': it has 4 field(s): \
             expected 5 (minute hour day-of-month month day-of-week) or 6 (with seconds first)"
        ),
    );
    // The field at fault is named, and pointed at.
    has(
        "workflow: a\ncron: \"0 61 * * *\"\n",
        &format!(
            "{P}:2:10: [MAG-SC006] invalid cron expression '0 61 * * *': the hour field '61' is \
             refused: a number out of range; \
             expected 0-23, a list (1,2), a range (1-5), * or a step (*/5, steps from 1)"
        ),
    );
    has(
        "workflow: a\ncron: 70 0 6 * * *\n",
        &format!(
            "{P}:2:7: [MAG-SC006] invalid cron expression '70 0 6 * * *': the second field '70' \
             is refused: a number out of range; \
             expected 0-59, a list (1,2), a range (1-5), * or a step (*/5, steps from 1)"
        ),
    );
    has(
        "workflow: a\ncron: \"0 0 6 * * FOO\"\n",
        &format!(
            "{P}:2:18: [MAG-SC006] invalid cron expression '0 0 6 * * FOO': the day-of-week \
             field 'FOO' is refused: an illegal character 'F'; expected 0-7 (0 and 7 are Sunday) or SUN-SAT, a \
             list, a range, *, ?, L or # (MON#2)"
        ),
    );
}

#[test]
fn a_cron_that_never_fires_is_an_error() {
    has(
        "workflow: a\ncron: \"0 0 30 2 *\"\n",
        &format!(
            "{P}:2:7: [MAG-SC010] cron expression '0 0 30 2 *' matches no date: expected days \
             that exist in the months given"
        ),
    );
}

#[test]
fn an_unknown_zone_is_an_error() {
    has(
        "workflow: a\ncron: \"* * * * *\"\ntimezone: Europe/Berln\n",
        &format!(
            "{P}:3:11: [MAG-SC007] unknown time zone 'Europe/Berln': expected an IANA name \
             such as 'Europe/Berlin', 'America/New_York' or 'UTC'"
        ),
    );
}

#[test]
fn a_zone_with_at_is_an_error() {
    has(
        "workflow: a\nat: \"2026-01-01T00:00:00Z\"\ntimezone: UTC\n",
        &format!(
            "{P}:3:11: [MAG-SC009] 'timezone' applies to 'cron' only: 'at' carries its own \
             offset; expected no 'timezone' with 'at'"
        ),
    );
}

#[test]
fn a_bad_at_is_an_error() {
    for bad in ["2026-12-24T18:00:00", "tomorrow", "2026-13-01T00:00:00Z"] {
        let all = errors(&format!("workflow: a\nat: \"{bad}\"\n"));
        let prefix = format!(
            "{P}:2:5: [MAG-SC008] 'at' is '{bad}': expected an ISO-8601 instant with an offset \
             or Z, e.g. '2026-12-24T18:00:00+01:00' ("
        );
        assert!(all.iter().any(|d| d.starts_with(&prefix)), "{all:#?}");
    }
}

#[test]
fn a_bad_overlap_lists_the_policies() {
    has(
        "workflow: a\ncron: \"* * * * *\"\noverlap: alow_all\n",
        &format!(
            "{P}:3:10: [MAG-Y026] 'overlap' is a string 'alow_all': expected one of [skip, \
             buffer_one, allow_all, cancel_other] (did you mean 'allow_all'?)"
        ),
    );
    has(
        "workflow: a\ncron: \"* * * * *\"\noverlap: true\n",
        &format!(
            "{P}:3:10: [MAG-Y026] 'overlap' is a boolean (true): expected one of [skip, \
             buffer_one, allow_all, cancel_other]"
        ),
    );
}

#[test]
fn bad_durations_are_errors() {
    has(
        "workflow: a\ncron: \"* * * * *\"\ncatchupWindow: soon\n",
        &format!(
            "{P}:3:16: [MAG-Y017] 'catchupWindow': invalid duration 'soon': expected ISO-8601 \
             like 'PT5M30S' or 'P7D', or a shortcut like '7d', '4h', '30m', '45s', '250ms'"
        ),
    );
    has(
        "workflow: a\ncron: \"* * * * *\"\njitter: 5\n",
        &format!(
            "{P}:3:9: [MAG-Y007] 'jitter' is an integer (5): expected a duration such as '60s' \
             or 'PT5M'"
        ),
    );
}

#[test]
fn wrong_types_are_errors() {
    has(
        "workflow: a\ncron: \"* * * * *\"\nenabled: yes\n",
        &format!("{P}:3:10: [MAG-Y007] 'enabled' is a string 'yes': expected true or false"),
    );
    has(
        "workflow: a\ncron: \"* * * * *\"\nparams: [1]\n",
        &format!(
            "{P}:3:9: [MAG-Y007] 'params' is a list: expected a mapping of parameter name to \
             value"
        ),
    );
    has(
        "- a\n",
        &format!("{P}:1:1: [MAG-Y007] the document root is a list: expected a mapping"),
    );
}

#[test]
fn every_error_is_reported_at_once() {
    let all =
        errors("recipe: r\ncron: \"0 99 * * *\"\ntimezone: Mars/Base\noverlap: never\njitter: x\n");
    let codes: Vec<(&str, &str)> = all
        .iter()
        .map(|d| {
            let code = d.split('[').nth(1).and_then(|c| c.split(']').next());
            (
                d.split(": ").next().unwrap_or_default(),
                code.unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [
            ("_vance/scheduler/s.yaml:1:1", "MAG-SC002"),
            ("_vance/scheduler/s.yaml:2:10", "MAG-SC006"),
            ("_vance/scheduler/s.yaml:3:11", "MAG-SC007"),
            ("_vance/scheduler/s.yaml:4:10", "MAG-Y026"),
            ("_vance/scheduler/s.yaml:5:9", "MAG-Y017"),
        ],
        "{all:#?}"
    );
}

// ---- forward and backward agree across the changes ----------------------------------

/// Around each change, for every instant on a 10-minute grid: the next tick after it is the
/// first tick of the span that follows, and with a zero window catch-up fires exactly the last
/// tick of the span that precedes it (and skips the others).
#[test]
fn next_tick_and_catch_up_agree_with_enumeration_across_daylight_saving() {
    let cases = [
        ("Europe/Berlin", "2026-03-29T01:00:00Z"),
        ("Europe/Berlin", "2026-10-25T01:00:00Z"),
        ("America/New_York", "2026-03-08T07:00:00Z"),
        ("America/New_York", "2026-11-01T06:00:00Z"),
    ];
    for (zone, change) in cases {
        for pattern in [
            "*/15 * * * *",
            "0 30 2 * * *",
            "30 1 * * *",
            "*/20 * 2 * * *",
        ] {
            let s = cron(pattern, zone);
            let zero = schedule(&format!(
                "cron: \"{pattern}\"\ntimezone: {zone}\ncatchupWindow: 0s\n"
            ));
            let c = ms(change);
            let mut t = c - 4 * 3_600_000;
            while t <= c + 4 * 3_600_000 {
                let before = s.ticks_between(t - 86_400_000, t, 100_000);
                let after = s.ticks_between(t, t + 2 * 86_400_000, 1);
                assert_eq!(
                    s.next_tick(t),
                    after.first().copied(),
                    "{zone} {pattern} {}",
                    iso(t)
                );
                let caught = zero.catch_up(t - 86_400_000, t, 100_000);
                // A zero window fires what the scheduler reaches within its own delay.
                assert_eq!(
                    caught.fire,
                    before
                        .iter()
                        .copied()
                        .filter(|tick| *tick >= t - magrathea_yaml::scheduler::PASS_SLACK_MS)
                        .collect::<Vec<_>>(),
                    "{zone} {pattern} {}",
                    iso(t)
                );
                assert_eq!(
                    caught.skipped.len() + caught.fire.len(),
                    before.len(),
                    "{zone} {pattern} {}",
                    iso(t)
                );
                t += 600_000;
            }
        }
    }
}

/// A blank `runAs` is no name: the runs are the schedule's, as without one. A name that begins
/// as a trigger's own runs do (`hook:review`) is refused, so that a schedule's run never passes
/// for a hook's, an event's or another schedule's.
#[test]
fn run_as_is_a_name_of_its_own() {
    assert_eq!(
        schedule("cron: \"* * * * *\"\nrunAs: \"\"\n").run_as(),
        "schedule:nightly"
    );
    assert_eq!(
        schedule("cron: \"* * * * *\"\nrunAs: \"  \"\n").run_as(),
        "schedule:nightly"
    );
    assert_eq!(
        schedule("cron: \"* * * * *\"\nrunAs: schedule:nightly\n").run_as(),
        "schedule:nightly"
    );
    for name in [
        "hook:review",
        "event:github-pr",
        "webhook:stripe",
        "schedule:other",
        // A prefix in other case reads the same to a person.
        "Hook:review",
        "WEBHOOK:stripe",
    ] {
        let errors = errors(&format!(
            "workflow: audit\ncron: \"* * * * *\"\nrunAs: \"{name}\"\n"
        ));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("_vance/scheduler/s.yaml:3:8: [MAG-Y026] 'runAs' is"),
            "{errors:?}"
        );
    }
}
