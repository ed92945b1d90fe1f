//! The document fields of run deadlines and `onFailure: pause_for_approval`: what loads,
//! and what is refused with its code and line:column.

use magrathea_yaml::plan::OnFailure;
use magrathea_yaml::{Diagnostics, LoadOptions, load_workflow};

fn errors(text: &str) -> Vec<String> {
    match load_workflow("wf.yaml", text, &LoadOptions::default()) {
        Ok(l) => panic!("expected errors, loaded with warnings {:?}", l.warnings),
        Err(d) => render(&d),
    }
}

fn render(d: &Diagnostics) -> Vec<String> {
    d.iter().map(ToString::to_string).collect()
}

#[track_caller]
fn has(text: &str, expected: &str) {
    let all = errors(text);
    assert!(
        all.iter().any(|d| d == expected),
        "expected {expected:?} in {all:#?}"
    );
}

const STATES: &str = "start: a\nstates:\n  a:\n    type: timer_task\n    duration: 1s\n    on: { fired: end }\n  b: { type: terminal, outcome: failure }\n  end: { type: terminal }\n";

#[test]
fn run_timeout_ms_is_the_deadline_in_milliseconds() {
    let text = format!("bounds:\n  runTimeoutMs: 1500\n{STATES}");
    let loaded = load_workflow("wf.yaml", &text, &LoadOptions::default()).expect("loads");
    assert_eq!(loaded.plan.bounds.max_wallclock_seconds, Some(1.5));
}

#[test]
fn both_spellings_of_the_deadline_are_refused_where_the_second_is() {
    has(
        &format!("bounds:\n  maxWallclockSeconds: 2\n  runTimeoutMs: 1500\n{STATES}"),
        "wf.yaml:3:17: [MAG-Y037] bounds sets both 'maxWallclockSeconds' and 'runTimeoutMs' (the same deadline, in seconds and in milliseconds): keep one",
    );
    has(
        &format!("bounds:\n  runTimeoutMs: soon\n{STATES}"),
        "wf.yaml:2:17: [MAG-Y019] bounds.runTimeoutMs is a string 'soon': expected a non-negative number of milliseconds",
    );
}

#[test]
fn pause_for_approval_loads_as_a_word_and_as_a_block() {
    let text = format!("onFailure: pause_for_approval\n{STATES}");
    let plan = load_workflow("wf.yaml", &text, &LoadOptions::default())
        .expect("loads")
        .plan;
    assert_eq!(
        plan.on_failure,
        OnFailure::PauseForApproval {
            fallback: None,
            timeout: None
        }
    );
    let text = format!(
        "onFailure: {{ policy: pause_for_approval, fallback: b, timeoutSeconds: 60 }}\n{STATES}"
    );
    let plan = load_workflow("wf.yaml", &text, &LoadOptions::default())
        .expect("loads")
        .plan;
    let b = plan.state_named("b");
    assert_eq!(
        plan.on_failure,
        OnFailure::PauseForApproval {
            fallback: b,
            timeout: Some(std::time::Duration::from_secs(60))
        }
    );
}

#[test]
fn a_malformed_pause_for_approval_is_refused() {
    has(
        &format!("onFailure: {{ policy: pause_for_approval, timeoutSeconds: -1 }}\n{STATES}"),
        "wf.yaml:1:58: [MAG-Y038] 'onFailure.timeoutSeconds' is an integer (-1): expected a positive number of seconds",
    );
    has(
        &format!("onFailure: {{ policy: fallback, fallback: b, timeoutSeconds: 5 }}\n{STATES}"),
        "wf.yaml:1:61: [MAG-Y038] 'onFailure.timeoutSeconds' applies to 'policy: pause_for_approval' only: expected that policy, or no 'timeoutSeconds'",
    );
    has(
        &format!("onFailure: {{ policy: compensate, approvers: {{ users: [ann] }} }}\n{STATES}"),
        "wf.yaml:1:45: [MAG-Y038] 'onFailure.approvers' applies to 'policy: pause_for_approval' only: expected that policy, or no 'approvers'",
    );
    has(
        &format!("onFailure: {{ policy: pause_for_approval, approvers: {{}} }}\n{STATES}"),
        "wf.yaml:1:53: [MAG-Y026] 'onFailure.approvers' names nobody: expected 'users' or 'roles' with at least one entry",
    );
    let all = errors(&format!(
        "onFailure: {{ policy: pause_for_approval, fallback: nowhere }}\n{STATES}"
    ));
    assert!(
        all.iter()
            .any(|d| d.starts_with("wf.yaml:1:52: [MAG-Y010]") && d.contains("nowhere")),
        "{all:#?}"
    );
}

/// `fallback_step` is the Friday design's word for the `fallback` policy: both load alike, and
/// a word that is neither is refused with the words there are.
#[test]
fn fallback_step_is_read_as_fallback() {
    let plans: Vec<_> = ["fallback", "fallback_step", "Fallback_Step"]
        .iter()
        .map(|word| {
            let text = format!("onFailure: {{ policy: {word}, fallback: b }}\n{STATES}");
            load_workflow("wf.yaml", &text, &LoadOptions::default())
                .unwrap_or_else(|d| panic!("{word}: {:?}", render(&d)))
                .plan
        })
        .collect();
    let b = plans[0].state_named("b").expect("state b");
    for plan in &plans {
        assert_eq!(plan.on_failure, OnFailure::Fallback(b));
    }
    has(
        &format!("onFailure: {{ policy: fall_back, fallback: b }}\n{STATES}"),
        "wf.yaml:1:22: [MAG-Y026] 'onFailure' is a string 'fall_back': expected one of fail_fast, continue_on_error, fallback (or fallback_step), compensate or pause_for_approval (did you mean 'fallback'?)",
    );
    has(
        &format!("onFailure: fail-fast\n{STATES}"),
        "wf.yaml:1:12: [MAG-Y026] 'onFailure' is a string 'fail-fast': expected one of fail_fast, continue_on_error, fallback (or fallback_step), compensate or pause_for_approval (did you mean 'fail_fast'?)",
    );
}
