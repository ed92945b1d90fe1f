//! Static analysis: each finding with its code, severity and line:column.

use magrathea_yaml::{Diagnostics, LoadOptions, Loaded, Severity, load_workflow};

fn load(text: &str) -> Result<Loaded, Diagnostics> {
    load_workflow("wf.yaml", text, &LoadOptions::default())
}

fn warnings(text: &str) -> Vec<String> {
    let loaded = load(text).unwrap_or_else(|d| panic!("expected a valid document:\n{d}"));
    assert!(
        loaded
            .warnings
            .iter()
            .all(|d| d.severity == Severity::Warning)
    );
    loaded.warnings.iter().map(ToString::to_string).collect()
}

fn errors(text: &str) -> Vec<String> {
    match load(text) {
        Ok(l) => panic!("expected errors, got a valid document ({})", l.warnings),
        Err(d) => d.errors().map(ToString::to_string).collect(),
    }
}

#[track_caller]
fn contains(all: &[String], expected: &str) {
    assert!(
        all.iter().any(|d| d == expected),
        "expected {expected:?} in {all:#?}"
    );
}

const END: &str = "  end:\n    type: terminal\n";

/// The reference's loader takes a transition that is never taken: the document loads (a run
/// fails "no transition for outcome" when the timer fires), with warnings that say why.
#[test]
fn a_transition_on_an_outcome_the_type_never_produces_is_a_warning() {
    let text = format!(
        "start: wait\nstates:\n  wait:\n    type: timer_task\n    duration: 5m\n    on:\n      success: end\n{END}"
    );
    let found = warnings(&text);
    contains(
        &found,
        "wf.yaml:7:7: [MAG-YA001] state 'wait' has 'on: success', but a timer_task never \
         ends that way: it ends with fired; the transition can never be taken",
    );
    assert!(
        found
            .iter()
            .any(|w| w.contains("[MAG-YA003]") && w.contains("fired")),
        "{found:#?}"
    );
}

/// `catch:` takes the seven kinds of §4.2 on any state: one the task never ends with is a
/// warning, and the document loads.
#[test]
fn a_catch_no_outcome_of_the_type_maps_to_is_a_warning() {
    let text = format!(
        "start: ask\nstates:\n  ask:\n    type: gate_task\n    inbox: {{ kind: APPROVAL }}\n    on: {{ approved: end, rejected: end, insufficient_info: end, undecidable: end }}\n    catch:\n      technical_error: end\n{END}"
    );
    assert_eq!(
        warnings(&text),
        [
            "wf.yaml:8:7: [MAG-YA001] state 'ask' has 'catch: technical_error', but an APPROVAL \
          gate_task never ends that way: it ends with approved, rejected, insufficient_info, \
          undecidable, timeout; the transition can never be taken"
        ]
    );
}

/// Options from a template may resolve to none, which ends the gate `technical_error`: a
/// route for it can be taken.
#[test]
fn templated_decision_options_may_end_technical_error() {
    let text = format!(
        "start: pick\nparameters:\n  choices: {{ type: array, default: [a, b] }}\nstates:\n  pick:\n    type: gate_task\n    inbox: {{ kind: DECISION, title: pick, options: \"${{params.choices}}\" }}\n    on: {{ a: end, b: end, insufficient_info: end, undecidable: end }}\n    catch:\n      technical_error: end\n{END}"
    );
    let found = warnings(&text);
    assert!(
        found.iter().all(|w| !w.contains("[MAG-YA001]")),
        "{found:#?}"
    );
    // Literal options never resolve to none.
    let literal = text.replace("\"${params.choices}\"", "[a, b]");
    contains(
        &warnings(&literal),
        "wf.yaml:10:7: [MAG-YA001] state 'pick' has 'catch: technical_error', but a DECISION \
         gate_task never ends that way: it ends with a, b, insufficient_info, undecidable, \
         timeout; the transition can never be taken",
    );
}

/// A retry on a kind the task never ends with never retries: a warning, as for `catch:`.
#[test]
fn a_retry_on_a_kind_the_task_never_ends_with_is_a_warning() {
    let text = format!(
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: ls\n    dirName: workspace\n    on: {{ success: end }}\n    catch: {{ business_error: end, technical_error: end, timeout: end }}\n    retry: {{ maxAttempts: 3, on: [business_error, agent_error] }}\n{END}"
    );
    assert_eq!(
        warnings(&text),
        [
            "wf.yaml:9:51: [MAG-YA001] state 'a' has 'retry.on: agent_error', but a shell_task \
             never ends that way: it ends with success, business_error, technical_error, \
             timeout; it is never retried"
        ]
    );
}

/// A misspelt outcome is an impossible one, and the message offers the outcome meant.
#[test]
fn a_misspelt_outcome_offers_the_one_meant() {
    let text = format!(
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: ls\n    dirName: workspace\n    on: {{ sucess: end }}\n{END}"
    );
    let w = warnings(&text);
    assert!(
        w.iter()
            .any(|m| m.contains("'on: sucess'") && m.ends_with("(did you mean 'success'?)")),
        "{w:#?}"
    );
}

#[test]
fn a_decision_gate_routes_only_its_options() {
    let text = format!(
        "start: pick\nstates:\n  pick:\n    type: gate_task\n    inbox:\n      kind: DECISION\n      options: [retry, abort]\n    on:\n      retry: end\n      abort: end\n      maybe: end\n      insufficient_info: end\n      undecidable: end\n{END}"
    );
    let w = warnings(&text);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(
        w[0].starts_with("wf.yaml:11:7: [MAG-YA001] state 'pick' has 'on: maybe'"),
        "{w:#?}"
    );
}

/// A `${…}` option is resolved when the gate opens, so any word may be the one chosen; the
/// literal options still route as written.
#[test]
fn a_decision_gate_with_a_templated_option_may_route_any_word() {
    let text = format!(
        "start: pick\nparameters:\n  opt: {{ type: string, default: go }}\nstates:\n  pick:\n    type: gate_task\n    inbox:\n      kind: DECISION\n      options: [\"${{params.opt}}\", stop]\n    on:\n      go: end\n      stop: end\n      insufficient_info: end\n      undecidable: end\n{END}"
    );
    assert_eq!(warnings(&text), Vec::<String>::new());
}

#[test]
fn on_failure_routes_every_failure_of_a_task_and_warns_where_none_can_happen() {
    // The reference's own example writes `on: failure` on an agent_task: it routes the
    // agent's failures, so nothing is left unrouted.
    let text = format!(
        "start: a\nstates:\n  a:\n    type: agent_task\n    recipe: ford\n    on:\n      success: b\n      failure: end\n  b:\n    type: timer_task\n    duration: 1s\n    on:\n      fired: end\n      failure: end\n{END}"
    );
    assert_eq!(
        warnings(&text),
        [
            "wf.yaml:14:7: [MAG-YA002] state 'b' has 'on: failure', which is never taken: only \
          a timer whose duration is a ${…} template can fail"
        ]
    );
}

#[test]
fn a_transition_its_state_never_takes_as_configured_is_a_warning() {
    let text = format!(
        "start: a\nstates:\n  a:\n    type: workflow_task\n    workflow: child\n    on: {{ success: b, failure: end }}\n    catch: {{ timeout: end }}\n  b:\n    type: condition_task\n    transitions:\n      - if: \"#params['x'] == 1\"\n        to: end\n      - else: end\n    on:\n      success: end\n{END}"
    );
    let w = warnings(&text);
    contains(
        &w,
        "wf.yaml:7:14: [MAG-YA002] state 'a' has 'catch: timeout', which is never taken: it has \
         no timeoutSeconds (nor a default in 'defaults:' or the settings), so a workflow_task \
         never times out",
    );
    contains(
        &w,
        "wf.yaml:15:7: [MAG-YA002] state 'b' has 'on: success', which is never taken: a \
         condition_task with 'else' always routes by its rules",
    );
    assert_eq!(w.len(), 2, "{w:#?}");
}

/// The resolver tries `on:` before `catch:`: a catch entry of an outcome `on:` routes
/// elsewhere is never taken, however its kind is written; one to the same state is harmless.
#[test]
fn a_catch_entry_an_on_entry_of_its_outcome_shadows_is_a_warning() {
    let text = format!(
        "start: a\nstates:\n  a:\n    type: shell_task\n    dirName: workspace\n    run: make\n    timeoutSeconds: 5\n    on: {{ success: end, timeout: later, failure: end }}\n    catch: {{ TIMEOUT: give_up, failure: end, technical_error: give_up }}\n  later:\n    type: timer_task\n    duration: PT1M\n    on: {{ fired: end }}\n  give_up:\n    type: terminal\n    result: failed\n{END}"
    );
    let w = warnings(&text);
    assert_eq!(
        w,
        [
            "wf.yaml:9:14: [MAG-YA011] state 'a' has 'catch: timeout' to 'give_up', which is \
             never taken: 'on: timeout' (at 8:25) routes the outcome to 'later' first"
        ],
        "the catch of `failure` goes where `on: failure` goes, and `technical_error` is \
         routed by the catch (`on:` names no such outcome)"
    );
}

/// `on:` matches the outcome as written (§4.1) and a gate's rejection is the outcome
/// `rejected`: `on: human_rejected` is never taken, and the `catch: human_rejected` beside it
/// (the alias of §4.2) is the route a rejection takes, not a shadowed one.
#[test]
fn a_catch_of_an_alias_beside_an_on_entry_of_the_alias_is_the_route_taken() {
    let text = format!(
        "start: g\nstates:\n  g:\n    type: gate_task\n    inbox: {{ kind: APPROVAL, title: ok }}\n    on: {{ approved: end, human_rejected: via_on, insufficient_info: end, undecidable: end }}\n    catch: {{ human_rejected: via_catch }}\n  via_on:\n    type: terminal\n  via_catch:\n    type: terminal\n{END}"
    );
    let w = warnings(&text);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(
        w[0].starts_with(
            "wf.yaml:6:26: [MAG-YA001] state 'g' has 'on: human_rejected', but an APPROVAL \
             gate_task never ends that way"
        ),
        "{w:#?}"
    );
    // `on: failure` takes every failure of a shell step first (the resolver's fallback), so a
    // `catch: failure` elsewhere is never taken.
    let shell = "start: s\nstates:\n  s:\n    type: shell_task\n    run: make\n    dirName: workspace\n    on: { success: a, failure: a }\n    catch: { failure: b }\n  a:\n    type: terminal\n  b:\n    type: terminal\n";
    assert_eq!(
        warnings(shell),
        [
            "wf.yaml:8:14: [MAG-YA011] state 's' has 'catch: failure' to 'b', which is never \
             taken: 'on: failure' (at 7:23) routes the outcome to 'a' first"
        ]
    );
    // `on: rejected` does take the rejection first: the catch of its kind is shadowed.
    let w = warnings(&text.replace("human_rejected: via_on", "rejected: via_on"));
    assert_eq!(
        w,
        [
            "wf.yaml:7:14: [MAG-YA011] state 'g' has 'catch: human_rejected' to 'via_catch', \
             which is never taken: 'on: rejected' (at 6:26) routes the outcome to 'via_on' first"
        ]
    );
}

/// A timeout route is taken when the document's `defaults:` give the state a timeout, and on a
/// shell_task without one, which the tenant's default shell timeout still stops.
#[test]
fn a_timeout_from_defaults_or_the_shell_default_is_a_route_taken() {
    let text = format!(
        "start: a\ndefaults: {{ taskTimeoutSeconds: 5, gateTimeoutSeconds: 60 }}\nstates:\n  a:\n    type: workflow_task\n    workflow: child\n    on: {{ success: g, failure: end }}\n    catch: {{ timeout: end }}\n  g:\n    type: gate_task\n    inbox: {{ kind: APPROVAL }}\n    on: {{ approved: s, rejected: end, insufficient_info: end, undecidable: end }}\n    catch: {{ timeout: end }}\n  s:\n    type: shell_task\n    run: make\n    dirName: workspace\n    on: {{ success: end }}\n    catch: {{ business_error: end, technical_error: end, timeout: end }}\n{END}"
    );
    assert_eq!(warnings(&text), Vec::<String>::new());
    // Without the defaults, the gate's `timeout` route is never taken; the shell's still is.
    let w = warnings(&text.replace(
        "defaults: { taskTimeoutSeconds: 5, gateTimeoutSeconds: 60 }\n",
        "",
    ));
    assert_eq!(w.len(), 2, "{w:#?}");
    assert!(w.iter().all(|w| w.contains("[MAG-YA002]")), "{w:#?}");
    assert!(w.iter().any(|w| w.contains("state 'a'")), "{w:#?}");
    assert!(w.iter().any(|w| w.contains("state 'g'")), "{w:#?}");
}

#[test]
fn outcomes_nothing_routes_are_named_in_one_warning() {
    let text = format!(
        "start: build\nstates:\n  build:\n    type: shell_task\n    run: make\n    dirName: workspace\n    timeoutSeconds: 60\n    retry: {{ maxAttempts: 3, on: [timeout] }}\n    on:\n      success: end\n    catch:\n      technical_error: end\n{END}"
    );
    assert_eq!(
        warnings(&text),
        [
            "wf.yaml:3:3: [MAG-YA003] a `business_error` or `timeout` of shell_task `build` would \
          fail the run: no 'on:' or 'catch:' routes them"
        ]
    );
    // Without its own timeoutSeconds a shell step still ends `timeout` at the settings'
    // default shell timeout (an hour unless set).
    let untimed = format!(
        "start: build\nstates:\n  build:\n    type: shell_task\n    run: make\n    dirName: workspace\n    on:\n      success: end\n    catch:\n      business_error: end\n      technical_error: end\n{END}"
    );
    assert_eq!(
        warnings(&untimed),
        [
            "wf.yaml:3:3: [MAG-YA003] a `timeout` of shell_task `build` would fail the run: no \
          'on:' or 'catch:' routes it"
        ]
    );
}

#[test]
fn an_on_failure_policy_that_takes_unrouted_outcomes_silences_the_would_fail_warning() {
    let states = format!(
        "start: build\nstates:\n  build:\n    type: shell_task\n    run: make\n    dirName: workspace\n    on:\n      success: end\n  cleanup:\n    type: shell_task\n    run: clean\n    dirName: workspace\n    on:\n      success: end\n{END}"
    );
    let unrouted_of = |text: &str| -> Vec<String> {
        warnings(text)
            .into_iter()
            .filter(|w| w.contains("[MAG-YA003]"))
            .collect()
    };
    // Fail fast (the default) and compensate fail the run: both states are warned of.
    for policy in ["", "onFailure: compensate\n"] {
        let w = unrouted_of(&format!("{policy}{states}"));
        assert_eq!(w.len(), 2, "{policy:?}: {w:#?}");
    }
    // A person decides, or the run continues to `on: success`: nothing is warned of.
    for policy in [
        "onFailure: pause_for_approval\n",
        "onFailure: continue_on_error\n",
    ] {
        let w = unrouted_of(&format!("{policy}{states}"));
        assert_eq!(w, Vec::<String>::new(), "{policy:?}");
    }
    // A fallback takes the other states' failures; the fallback state's own fail the run.
    let w = unrouted_of(&format!(
        "onFailure: {{ policy: fallback, fallback: cleanup }}\n{states}"
    ));
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(w[0].contains("`cleanup` would fail the run"), "{w:#?}");
}

#[test]
fn a_single_unrouted_timeout_reads_as_the_issue_says() {
    let text = format!(
        "start: build\nstates:\n  build:\n    type: gate_task\n    inbox: {{ kind: APPROVAL }}\n    timeoutSeconds: 60\n    on: {{ approved: end, rejected: end, insufficient_info: end, undecidable: end }}\n{END}"
    );
    assert_eq!(
        warnings(&text),
        [
            "wf.yaml:3:3: [MAG-YA003] a `timeout` of gate_task `build` would fail the run: \
          no 'on:' or 'catch:' routes it"
        ]
    );
}

/// The reference lists a script_task's and a tool_task's outcomes as success /
/// technical_error and a workflow_task's as success / failure: routing those routes their
/// timeouts too, so nothing is left unrouted. Without them, the timeout is named.
#[test]
fn a_timeout_is_routed_by_the_kind_it_stands_for_in_its_task_type() {
    let text = format!(
        "start: a\nstates:\n  a:\n    type: workflow_task\n    workflow: child\n    timeoutSeconds: 60\n    on: {{ success: b }}\n    catch: {{ failure: end }}\n  b:\n    type: script_task\n    path: s.js\n    timeoutSeconds: 5\n    on: {{ success: end }}\n    catch: {{ technical_error: end }}\n{END}"
    );
    assert_eq!(warnings(&text), Vec::<String>::new());
    let w = warnings(&text.replace("    catch: { failure: end }\n", ""));
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(
        w[0].contains("a `failure` or `timeout` of workflow_task `a`"),
        "{w:#?}"
    );
}

#[test]
fn catch_routes_by_error_kind_and_rejected_is_human_rejected() {
    let text = format!(
        "start: ask\nstates:\n  ask:\n    type: gate_task\n    inbox: {{ kind: APPROVAL }}\n    timeoutSeconds: 60\n    on: {{ approved: end, insufficient_info: end, undecidable: end }}\n    catch:\n      Human-Rejected: end\n      TIMEOUT: end\n{END}"
    );
    assert_eq!(warnings(&text), Vec::<String>::new());
}

#[test]
fn cancelled_is_never_asked_for_and_always_allowed() {
    let text = format!(
        "start: t\nstates:\n  t:\n    type: timer_task\n    duration: 1s\n    on: {{ fired: end, cancelled: end }}\n    catch: {{ cancelled: end }}\n{END}"
    );
    assert_eq!(warnings(&text), Vec::<String>::new());
}

#[test]
fn a_tool_task_may_report_any_error_kind_of_a_registered_task() {
    let text = format!(
        "allowedTools: [my_task]\nstart: t\nstates:\n  t:\n    type: tool_task\n    tool: my_task\n    on: {{ success: end }}\n    catch: {{ business_error: end, permission_error: end, technical_error: end }}\n{END}"
    );
    assert_eq!(warnings(&text), Vec::<String>::new());
}

#[test]
fn a_condition_without_else_may_fall_through() {
    let text = format!(
        "start: route\nstates:\n  route:\n    type: condition_task\n    transitions:\n      - if: \"#params['risk'] == 'low'\"\n        to: end\n{END}"
    );
    assert_eq!(
        warnings(&text),
        [
            "wf.yaml:3:3: [MAG-YA004] condition_task 'route' has no 'else' and its rules may all \
          be false: then the run fails with \"no transition for outcome 'success'\"; expected a \
          last rule '- else: <state>' (or 'on: success')"
        ]
    );
    // A rule that is always true, or `on: success`, closes the gap.
    let always = text.replace("\"#params['risk'] == 'low'\"", "\"true || false\"");
    assert_eq!(warnings(&always), Vec::<String>::new());
    let routed = format!(
        "{}    on: {{ success: end }}\n{END}",
        text.trim_end_matches(END)
    );
    assert_eq!(warnings(&routed), Vec::<String>::new());
}

#[test]
fn unreachable_states_are_warned_about() {
    let text = format!(
        "start: a\nstates:\n  a:\n    type: timer_task\n    duration: 1s\n    on: {{ fired: end }}\n  lost:\n    type: timer_task\n    duration: 1s\n    on: {{ fired: end }}\n{END}"
    );
    assert_eq!(
        warnings(&text),
        [
            "wf.yaml:7:3: [MAG-Y027] state 'lost' is never reached from start state 'a': expected \
          a transition to it"
        ]
    );
}

#[test]
fn a_loop_without_timer_gate_or_bound_can_run_forever() {
    let body = "states:\n  poll:\n    type: shell_task\n    run: check\n    dirName: workspace\n    on: { success: end }\n    catch: { business_error: poll, technical_error: fix, timeout: end }\n  fix:\n    type: script_task\n    path: fix.js\n    on: { success: poll }\n    catch: { technical_error: end, timeout: end }\n  end:\n    type: terminal\n";
    let text = format!("start: poll\n{body}");
    assert_eq!(
        warnings(&text),
        [
            "wf.yaml:3:3: [MAG-YA006] states 'poll', 'fix' form a loop with no timer_task or \
          gate_task on it, and the workflow sets no bounds: a run loops until its tenant's \
          default bounds stop it (10000 task spawns unless the tenant sets \
          bounds.maxTaskSpawns); expected bounds.maxTaskSpawns or bounds.maxWallclockSeconds, \
          or a timer or gate on the loop"
        ]
    );
    let bounded = format!("start: poll\nbounds: {{ maxTaskSpawns: 50 }}\n{body}");
    assert_eq!(warnings(&bounded), Vec::<String>::new());
    let cost_only = format!("start: poll\nbounds: {{ maxTotalCostUsd: 5 }}\n{body}");
    assert_eq!(warnings(&cost_only).len(), 1);
}

#[test]
fn a_state_that_goes_back_to_itself_is_a_loop_and_a_timer_breaks_it() {
    let text = format!(
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: x\n    dirName: workspace\n    on: {{ success: end }}\n    catch: {{ business_error: a, technical_error: end, timeout: end }}\n{END}"
    );
    let w = warnings(&text);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(
        w[0].starts_with("wf.yaml:3:3: [MAG-YA006] state 'a' goes back to itself"),
        "{w:#?}"
    );
    let waits = format!(
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: x\n    dirName: workspace\n    on: {{ success: end }}\n    catch: {{ business_error: wait, technical_error: end, timeout: end }}\n  wait:\n    type: timer_task\n    duration: 5m\n    on: {{ fired: a }}\n{END}"
    );
    assert_eq!(warnings(&waits), Vec::<String>::new());
}

#[test]
fn analysis_waits_for_a_valid_document() {
    // An unknown target is the error to fix first; no analysis findings pile on.
    let text = format!(
        "start: a\nstates:\n  a:\n    type: timer_task\n    duration: 1s\n    on: {{ fired: nowhere, success: end }}\n{END}"
    );
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].contains("[MAG-Y010]"), "{e:#?}");
}

#[test]
fn a_sub_workflow_that_does_not_exist_is_warned_about_through_the_lookup() {
    let text = format!(
        "start: a\nstates:\n  a:\n    type: workflow_task\n    workflow: build-and-test\n    on: {{ success: b, failure: end }}\n  b:\n    type: workflow_task\n    workflow: \"${{params.next}}\"\n    on: {{ success: end, failure: end }}\n{END}"
    );
    let loaded = load(&text).unwrap_or_else(|d| panic!("{d}"));
    let mut asked = Vec::new();
    let found = loaded.check_sub_workflows(|name| {
        asked.push(name.to_owned());
        false
    });
    // A templated name is resolved at run time and not looked up.
    assert_eq!(asked, ["build-and-test"]);
    let w: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert_eq!(
        w,
        [
            "wf.yaml:5:15: [MAG-YA005] workflow_task 'a' starts workflow 'build-and-test', which \
          is not a workflow of the project or its tenant: expected \
          _vance/workflows/build-and-test.yaml; the task would end with 'failure'"
        ]
    );
    assert!(found.iter().all(|d| d.severity == Severity::Warning));
    assert!(loaded.check_sub_workflows(|_| true).is_empty());
}

#[test]
fn the_reference_example_is_valid_and_its_gaps_are_warnings() {
    let text = include_str!("../fixtures/pr-review.yaml");
    let loaded = load_workflow("pr-review.yaml", text, &LoadOptions::default())
        .unwrap_or_else(|d| panic!("{d}"));
    let w: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        w,
        [
            "pr-review.yaml:26:3: [MAG-YA003] a `technical_error` or `timeout` of agent_task `plan` would fail the run: no 'on:' or 'catch:' routes them",
            "pr-review.yaml:41:3: [MAG-YA003] a `timeout` of shell_task `run_checks` would fail the run: no 'on:' or 'catch:' routes it",
            "pr-review.yaml:63:3: [MAG-YA003] an `insufficient_info` or `undecidable` of gate_task `human_review` would fail the run: no 'on:' routes them",
            "pr-review.yaml:101:3: [MAG-YA003] an `insufficient_info` or `undecidable` of gate_task `retry_or_abort` would fail the run: no 'on:' routes them",
        ]
    );
}

#[test]
fn the_shipped_example_routes_every_outcome() {
    let text = include_str!("../../../examples/_vance/workflows/pr-review.yaml");
    let loaded = load_workflow("pr-review.yaml", text, &LoadOptions::default())
        .unwrap_or_else(|d| panic!("{d}"));
    assert!(loaded.warnings.is_empty(), "{}", loaded.warnings);
}

/// A document with an error still has the transitions of its other states checked against
/// what their tasks end with, in the same pass; a state with an error of its own is not (it
/// was read only in part).
#[test]
fn a_documents_errors_do_not_hide_an_impossible_transition_elsewhere() {
    let text = "start: s\nstates:\n  s:\n    type: timer_task\n    duration: 5m\n    on: {fired: t, success: end}\n  t:\n    type: timer_task\n    duraton: 5m\n    on: {fired: end, success: end}\n  end:\n    type: terminal\n";
    let all: Vec<String> = magrathea_yaml::load_workflow("wf.yaml", text, &LoadOptions::default())
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        all.iter()
            .any(|d| d.starts_with("wf.yaml:6:20: [MAG-YA001] state 's' has 'on: success'")),
        "{all:#?}"
    );
    assert!(
        all.iter().any(|d| d.contains("unknown field 'duraton'")),
        "{all:#?}"
    );
    assert!(
        !all.iter()
            .any(|d| d.contains("state 't' has 'on: success'")),
        "{all:#?}"
    );
}

/// An error outside the states that cannot change what a task ends with (a parameter's type,
/// the bounds) does not hide the states' impossible transitions; one in `defaults:` does (a
/// default timeout adds `timeout` to what every task may end with).
#[test]
fn an_error_outside_the_states_hides_their_outcome_checks_only_when_it_may_change_them() {
    let states = "states:\n  s:\n    type: timer_task\n    duration: 5m\n    on: {fired: end, sucess: end}\n  end:\n    type: terminal\n";
    let diags = |head: &str| -> Vec<String> {
        magrathea_yaml::load_workflow(
            "wf.yaml",
            &format!("start: s\n{head}{states}"),
            &LoadOptions::default(),
        )
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect()
    };
    for head in [
        "parameters:\n  n: { type: int }\n",
        "bounds:\n  maxTaskSpawns: many\n",
    ] {
        let all = diags(head);
        assert!(
            all.iter()
                .any(|d| d.contains("[MAG-YA001] state 's' has 'on: sucess'")),
            "{head}: {all:#?}"
        );
    }
    let all = diags("defaults:\n  taskTimeoutSeconds: soon\n");
    assert!(!all.iter().any(|d| d.contains("'on: sucess'")), "{all:#?}");
}

/// A document with errors still has its unknown sub-workflows reported, with the errors,
/// so that one pass shows everything to fix; a valid one gets them among its warnings.
#[test]
fn unknown_sub_workflows_are_reported_with_the_documents_errors() {
    let text = "start: a\nstates:\n  a:\n    type: workflow_task\n    workflow: build-and-test\n    on: { success: nowhere }\n  b:\n    type: workflow_task\n    workflow: known\n    on: { success: done }\n  done: { type: terminal }\n";
    let all = magrathea_yaml::load_workflow_checked(
        "wf.yaml",
        text,
        &LoadOptions::default(),
        |n: &str| n == "known",
    )
    .unwrap_err();
    let all: Vec<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(
        all,
        [
            "wf.yaml:5:15: [MAG-YA005] workflow_task 'a' starts workflow 'build-and-test', which \
             is not a workflow of the project or its tenant: expected \
             _vance/workflows/build-and-test.yaml; the task would end with 'failure'",
            "wf.yaml:6:20: [MAG-Y010] unknown transition target 'nowhere': expected one of the \
             states [a, b, done]",
            // A state without errors of its own is checked against its outcomes in the same
            // pass.
            "wf.yaml:7:3: [MAG-YA003] a `failure` of workflow_task `b` would fail the run: no \
             'on:' or 'catch:' routes it",
        ]
    );

    let valid = text.replace("nowhere", "done");
    let loaded = magrathea_yaml::load_workflow_checked(
        "wf.yaml",
        &valid,
        &LoadOptions::default(),
        |n: &str| n == "known",
    )
    .unwrap_or_else(|d| panic!("{d}"));
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.message.starts_with("[MAG-YA005] workflow_task 'a'")),
        "{}",
        loaded.warnings
    );
}

/// A state that only undoes another (a `compensate:` target nothing else leads to) reports its
/// outcome among the compensations; its transitions are never followed, so having none draws
/// no warning. The same state entered by a transition as well needs its way out.
#[test]
fn a_compensation_only_state_needs_no_transitions() {
    let states = |extra: &str| {
        format!(
            "start: reserve\nonFailure: compensate\nstates:\n  reserve:\n    type: shell_task\n    dirName: workspace\n    run: \"true\"\n    compensate: release\n    on: {{ success: charge{extra} }}\n  charge:\n    type: shell_task\n    dirName: workspace\n    run: \"false\"\n    on: {{ success: end }}\n  release:\n    type: shell_task\n    dirName: workspace\n    run: \"true\"\n{END}"
        )
    };
    let about_release = |w: Vec<String>| -> Vec<String> {
        w.into_iter().filter(|w| w.contains("release")).collect()
    };
    assert_eq!(about_release(warnings(&states(""))), Vec::<String>::new());
    let entered = about_release(warnings(&states(", business_error: release")));
    assert_eq!(entered.len(), 1, "{entered:#?}");
    assert!(entered[0].contains("[MAG-Y014]"), "{entered:#?}");
}

/// A `tool_task` whose tool the workflow's own pool leaves out is refused by every run (the
/// cascade only narrows that pool): a warning at the tool's name, for a declared list and for
/// the default pool alike. A tool in the pool, or a templated name, is not.
#[test]
fn a_tool_the_workflows_own_pool_leaves_out_is_a_warning() {
    let doc = |allowed: &str, tool: &str| {
        format!(
            "{allowed}start: call\nstates:\n  call:\n    type: tool_task\n    tool: {tool}\n    on: {{ success: end }}\n    catch: {{ permission_error: end, technical_error: end, business_error: end, timeout: end }}\n{END}"
        )
    };
    contains(
        &warnings(&doc("", "github.merge_pr")),
        "wf.yaml:5:11: [MAG-YA010] tool_task `call` calls `github.merge_pr`, which \
         every run would refuse (permission_error, MAG-TL002): the workflow declares no \
         allowedTools:, so it may call only the default pool [web_search, doc_read, doc_list, \
         inbox_read]; name it under allowedTools:",
    );
    contains(
        &warnings(&doc("allowedTools: [web_search]\n", "doc_read")),
        "wf.yaml:6:11: [MAG-YA010] tool_task `call` calls `doc_read`, which every run \
         would refuse (permission_error, MAG-TL002): the workflow's allowedTools [web_search] \
         leave it out",
    );
    // A misspelt tool of the pool is named.
    contains(
        &warnings(&doc("", "web_serch")),
        "wf.yaml:5:11: [MAG-YA010] tool_task `call` calls `web_serch`, which \
         every run would refuse (permission_error, MAG-TL002): the workflow declares no \
         allowedTools:, so it may call only the default pool [web_search, doc_read, doc_list, \
         inbox_read]; name it under allowedTools: (did you mean 'web_search'?)",
    );
    contains(
        &warnings(&doc("allowedTools: [github.merge_pr]\n", "github.merge_rp")),
        "wf.yaml:6:11: [MAG-YA010] tool_task `call` calls `github.merge_rp`, which every run \
         would refuse (permission_error, MAG-TL002): the workflow's allowedTools \
         [github.merge_pr] leave it out (did you mean 'github.merge_pr'?)",
    );
    for (allowed, tool) in [
        ("", "doc_read"),
        ("allowedTools: [github.merge_pr]\n", "github.merge_pr"),
        ("", "\"${params.tool}\""),
    ] {
        let found = warnings(&doc(allowed, tool));
        assert!(
            found.iter().all(|w| !w.contains("MAG-YA010")),
            "{tool}: {found:#?}"
        );
    }
}

/// A fan-out whose sub-runs' results together pass the output bound ends `technical_error`
/// (MAG-BD003): a route for it can be taken, and is not said to be dead.
#[test]
fn a_fan_out_may_end_technical_error() {
    let text = format!(
        "start: each\nstates:\n  each:\n    type: foreach_task\n    items: [1, 2]\n    workflow: w\n    on: {{ success: end, failure: end, technical_error: end }}\n{END}"
    );
    let found = warnings(&text);
    assert!(
        found.iter().all(|w| !w.contains("[MAG-YA001]")),
        "{found:#?}"
    );
}
