//! An answer that arrives after the gate's timeout (or the run's wall-clock bound) came due,
//! while no process was running the run: the reference's "timer fires first" race (§3.4, §9).
//! `magrathea run` leaves the run waiting; once the deadline has passed, `magrathea inbox
//! answer` loads the run, and the timeout must win over the answer that came after it.

use crate::cli_common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cli_common::{Project, code, json, stderr, stdout};
use serde_json::Value;

const GATE_TIMEOUT: &str = r#"
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "ship?" }
    timeoutSeconds: 1
    on: { approved: shipped, rejected: stopped }
    catch: { timeout: expired }
  shipped: { type: terminal, result: shipped }
  stopped: { type: terminal, result: stopped }
  expired: { type: terminal, result: expired }
"#;

const WALLCLOCK: &str = r#"
start: review
bounds: { maxWallclockSeconds: 1 }
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "ship?" }
    on: { approved: shipped, rejected: shipped }
  shipped: { type: terminal, result: shipped }
"#;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Starts `name`, which waits on its gate (exit 3), and returns the pending item's id.
fn waiting_item(p: &Project, name: &str) -> String {
    let started = p.cli(&["run", name, "--json"]);
    assert_eq!(code(&started), 3, "{}", stderr(&started));
    let list = p.cli(&["inbox", "list", "--json"]);
    let items = json(&list);
    assert_eq!(items.as_array().map(Vec::len), Some(1), "{items}");
    items[0]["id"].as_str().unwrap().to_owned()
}

/// Sleeps until `at_ms` (ms since the epoch) has passed.
fn sleep_past(at_ms: u64) {
    while now_ms() <= at_ms {
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn record_types(p: &Project, run: &str) -> Vec<String> {
    let out = p.cli(&["journal", run, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["type"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn a_gate_timeout_that_passed_before_the_answer_wins() {
    let p = Project::new();
    p.workflow("review", GATE_TIMEOUT);
    let opened = now_ms();
    let id = waiting_item(&p, "review");
    // The timeout is due a second after the gate opened; nothing runs the run meanwhile.
    sleep_past(opened + 1_500);

    // The listing says the item timed out instead of offering an answer that would be ignored.
    let listed = p.cli(&["inbox", "list"]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    assert!(
        stdout(&listed).contains("    timed out at "),
        "{}",
        stdout(&listed)
    );
    assert!(
        !stdout(&listed).contains("answer: magrathea inbox answer"),
        "{}",
        stdout(&listed)
    );
    // And so does its JSON, with the time it timed out.
    let listed = json(&p.cli(&["inbox", "list", "--json"]));
    assert_eq!(listed[0]["id"], id.as_str(), "{listed}");
    assert_eq!(listed[0]["status"], "TIMED_OUT", "{listed}");
    assert!(
        listed[0]["expiresAt"]
            .as_u64()
            .is_some_and(|at| at <= now_ms()),
        "{listed}"
    );
    // The run's own view says so too.
    let run = id.rsplit_once('-').unwrap().0;
    let shown = p.cli(&["runs", "show", run]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    assert!(
        stdout(&shown).contains("    timed out at ")
            && !stdout(&shown).contains("answer: magrathea inbox answer"),
        "{}",
        stdout(&shown)
    );

    let answered = p.cli(&["inbox", "answer", &id, "--approve", "--json"]);
    assert_eq!(code(&answered), 0, "{}", stderr(&answered));
    let run = json(&answered);
    assert_eq!(run["status"], "DONE", "{run}");
    assert_eq!(run["currentState"], "expired", "{run}");
    assert_eq!(run["result"], "expired", "{run}");
    assert!(
        stderr(&answered).contains("answer ignored"),
        "{}",
        stderr(&answered)
    );

    // The firing is journaled before the answer, which is kept as ignored.
    let types = record_types(&p, run["workflowRunId"].as_str().unwrap());
    let fired = types.iter().position(|t| t == "TimerFiredRecord");
    let ignored = types.iter().position(|t| t == "IgnoredRecord");
    assert!(
        fired.is_some() && ignored.is_some() && fired < ignored,
        "{types:?}"
    );
    assert!(
        !types.iter().any(|t| t == "GateAnsweredRecord"),
        "{types:?}"
    );
}

#[test]
fn an_answer_after_the_wall_clock_bound_fails_the_run() {
    let p = Project::new();
    p.workflow("review", WALLCLOCK);
    let started = now_ms();
    let id = waiting_item(&p, "review");
    sleep_past(started + 1_500);

    let answered = p.cli(&["inbox", "answer", &id, "--approve", "--json"]);
    assert_eq!(code(&answered), 1, "{}", stderr(&answered));
    let run = json(&answered);
    assert_eq!(run["status"], "FAILED", "{run}");
    let reason = run["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("bounds exhausted"), "{run}");
    assert_eq!(run["currentState"], "review", "{run}");
}

#[test]
fn an_answer_before_the_timeout_still_decides() {
    let p = Project::new();
    p.workflow(
        "review",
        GATE_TIMEOUT
            .replace("timeoutSeconds: 1", "timeoutSeconds: 3600")
            .as_str(),
    );
    let id = waiting_item(&p, "review");
    let answered = p.cli(&["inbox", "answer", &id, "--reject", "--json"]);
    assert_eq!(code(&answered), 0, "{}", stderr(&answered));
    let run = json(&answered);
    assert_eq!(run["currentState"], "stopped", "{run}");
}
