//! The document's structure: `start`, `states`, task types, fields, transition targets.

use super::*;

#[test]
fn reference_example_loads_with_only_analysis_warnings() {
    let text = include_str!("../../fixtures/pr-review.yaml");
    let loaded = load_workflow("pr-review.yaml", text, &LoadOptions::default())
        .unwrap_or_else(|d| panic!("{d}"));
    // What static analysis finds in it is listed in tests/analysis.rs.
    assert!(
        loaded
            .warnings
            .iter()
            .all(|w| w.message.starts_with("[MAG-YA")),
        "{}",
        loaded.warnings
    );
    let doc = loaded.doc;
    assert_eq!(doc.start.value, "plan");
    assert_eq!(doc.states.len(), 9);
    let names: Vec<&str> = doc.states.keys().map(String::as_str).collect();
    assert_eq!(names[..3], ["plan", "run_checks", "route"]);
    assert_eq!(doc.version.as_deref(), Some("1"));
    assert_eq!(doc.bounds.and_then(|b| b.max_task_spawns), Some(100));
    let plan = &doc.states["plan"];
    assert_eq!(plan.on[0].outcome, "on".replace("on", "success"));
    assert_eq!(plan.store_as.as_deref(), Some("plan_output"));
    assert_eq!(plan.raw["params"]["schema"]["risk"]["enum"][0], "low");
    let rc = &doc.states["run_checks"];
    let retry = rc
        .retry
        .as_ref()
        .map(|r| (r.max_attempts, r.on.len(), r.backoff_seconds));
    assert_eq!(retry, Some((2, 2, 60.0)));
    assert_eq!(
        doc.parameters["reviewer"].default,
        Some(serde_json::json!("@maintainers"))
    );
}

#[test]
fn start_is_required_and_must_exist() {
    has(
        "states:\n  a:\n    type: terminal\n",
        "wf.yaml:1:1: [MAG-Y006] the workflow has no 'start': expected 'start: <name of the initial state>'",
    );
    has(
        "start: pln\nstates:\n  plan:\n    type: terminal\n",
        "wf.yaml:1:8: [MAG-Y008] start state 'pln' is not defined: expected one of the states [plan] (did you mean 'plan'?)",
    );
}

#[test]
fn states_required_and_non_empty() {
    has(
        "start: a\n",
        "wf.yaml:1:1: [MAG-Y006] the workflow has no 'states': expected a mapping of state name to state spec",
    );
    has(
        "start: a\nstates: {}\n",
        "wf.yaml:2:9: [MAG-Y009] 'states' is empty: expected at least one state",
    );
}

#[test]
fn a_state_is_named_by_its_key_as_written_and_a_key_naming_nothing_is_refused() {
    // `2.50` is the state `2.50`, not the number 2.5 written back as `2.5`.
    let text = "start: \"2.50\"\nstates:\n  2.50: { type: terminal }\n";
    let loaded =
        load_workflow("wf.yaml", text, &LoadOptions::default()).unwrap_or_else(|d| panic!("{d}"));
    assert!(loaded.doc.states.contains_key("2.50"));
    let text =
        doc("  a: { type: terminal }\n  ~: { type: terminal }\n  \"\": { type: terminal }\n");
    has(
        &text,
        "wf.yaml:4:3: [MAG-Y007] a state named by null (`~`, `null` or no key): expected a state \
         name (a string such as `review`)",
    );
    has(
        &text,
        "wf.yaml:5:3: [MAG-Y007] a state named by an empty string: expected a state name (a \
         string such as `review`)",
    );
}

/// A parameter is named as a state is: a key of null or an empty one names none (no caller
/// could give it, and `${params.null}` would read it).
#[test]
fn a_parameter_key_naming_nothing_is_refused() {
    let text = "start: a\nparameters:\n  null: { type: string, required: true }\n  \"\": { type: string }\n  ok: { type: string }\nstates:\n  a: { type: terminal }\n";
    has(
        text,
        "wf.yaml:3:3: [MAG-Y007] a parameter named by null (`~`, `null` or no key): expected a \
         parameter name (a string such as `pr_url`)",
    );
    has(
        text,
        "wf.yaml:4:3: [MAG-Y007] a parameter named by an empty string: expected a parameter \
         name (a string such as `pr_url`)",
    );
    assert_eq!(rendered(text).len(), 2, "{:#?}", rendered(text));
}

#[test]
fn unknown_transition_targets_with_did_you_mean() {
    let text = doc(
        "  a:\n    type: shell_task\n    run: x\n    on:\n      success: mrege\n    catch:\n      timeout: nowhere\n  merge:\n    type: terminal\n",
    );
    has(
        &text,
        "wf.yaml:7:16: [MAG-Y010] unknown transition target 'mrege': expected one of the states [a, merge] (did you mean 'merge'?)",
    );
    has(
        &text,
        "wf.yaml:9:16: [MAG-Y010] unknown transition target 'nowhere': expected one of the states [a, merge]",
    );
}

#[test]
fn all_errors_are_reported_at_once() {
    let text = doc(
        "  a:\n    type: shel_task\n  b:\n    type: shell_task\n    storAs: x\n    on:\n      success: c\n",
    );
    let d = diags(&text);
    let errors: Vec<String> = d.errors().map(|e| e.message.clone()).collect();
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors[0].starts_with("[MAG-Y004] unknown task type 'shel_task' in state 'a'"));
    assert!(errors[0].ends_with("(did you mean 'shell_task'?)"));
}

#[test]
fn a_rule_whose_condition_is_refused_still_has_its_target_checked() {
    // The target does not depend on the condition: one pass reports both.
    for condition in ["T(java.lang.System).exit(0)", "#state['x'] =="] {
        let text = doc(&format!(
            "  a:\n    type: condition_task\n    transitions:\n      - if: \"{condition}\"\n        to: ned\n      - else: end\n{END}"
        ));
        let all = rendered(&text);
        assert!(
            all.iter()
                .any(|d| d.contains("invalid condition in rule 1 of state 'a'")),
            "{all:#?}"
        );
        has(
            &text,
            "wf.yaml:7:13: [MAG-Y010] unknown transition target 'ned': expected one of the states [a, end] (did you mean 'end'?)",
        );
    }
}

/// A state whose type is unknown is left out, but what every state has is still read: its
/// routes' targets and error kinds are reported in the same pass; and a type written without
/// its `_task` is recognised.
#[test]
fn a_state_of_unknown_type_still_has_its_routes_checked() {
    let text = doc(
        "  a:\n    type: shell\n    on:\n      success: nowhere\n    catch:\n      tecnical_error: b\n  b:\n    type: terminal\n",
    );
    let all = rendered(&text);
    assert!(
        all.iter().any(|d| d.contains("unknown task type 'shell'")
            && d.ends_with("(did you mean 'shell_task'?)")),
        "{all:#?}"
    );
    assert!(
        all.iter()
            .any(|d| d.contains("[MAG-Y010] unknown transition target 'nowhere'")),
        "{all:#?}"
    );
    assert!(
        all.iter()
            .any(|d| d.contains("unknown error kind 'tecnical_error'")),
        "{all:#?}"
    );
}

/// Mistakes in the shape of a document say what was meant: an empty document, a type that is
/// not a word, a gate's inbox fields written on the state.
#[test]
fn an_empty_document_a_listed_type_and_inbox_fields_on_a_gate_say_what_was_meant() {
    for empty in ["", "# only a comment\n"] {
        has(
            empty,
            "wf.yaml:1:1: [MAG-Y007] the document is empty (or only comments): expected a workflow, a mapping with 'start:' and 'states:'",
        );
    }
    has(
        &doc("  a:\n    type: [terminal]\n"),
        "wf.yaml:4:11: [MAG-Y007] the type of state 'a' is a list: expected one of [agent_task, shell_task, script_task, tool_task, gate_task, timer_task, condition_task, workflow_task, parallel_task, foreach_task, terminal]",
    );
    has(
        &doc(
            "  a:\n    type: gate_task\n    kind: APPROVAL\n    on: { approved: b }\n  b: { type: terminal }\n",
        ),
        "wf.yaml:5:5: [MAG-Y005] unknown field 'kind' in state 'a' (gate_task): it belongs under 'inbox:' (`inbox: { kind: … }`)",
    );
}

/// Routes written at the indentation of an empty `on:` (or `catch:`, `retry:`), not below it,
/// are said to belong under it.
#[test]
fn routes_beside_an_empty_on_are_said_to_belong_under_it() {
    has(
        &doc(
            "  a:\n    type: timer_task\n    duration: 5m\n    on:\n    fired: b\n  b: { type: terminal }\n",
        ),
        "wf.yaml:7:5: [MAG-Y005] unknown field 'fired' in state 'a' (timer_task): it belongs under the empty 'on:' above it; indent it below 'on:' (`on: { fired: … }`)",
    );
    has(
        &doc(
            "  a:\n    type: shell_task\n    run: x\n    dirName: workspace\n    on: { success: b }\n    catch:\n    timeout: b\n  b: { type: terminal }\n",
        ),
        "wf.yaml:9:5: [MAG-Y005] unknown field 'timeout' in state 'a' (shell_task): it belongs under the empty 'catch:' above it; indent it below 'catch:' (`catch: { timeout: … }`)",
    );
}

#[test]
fn unknown_task_type_and_missing_type() {
    has(
        &doc("  a:\n    type: shel_task\n"),
        "wf.yaml:4:11: [MAG-Y004] unknown task type 'shel_task' in state 'a': expected one of [agent_task, shell_task, script_task, tool_task, gate_task, timer_task, condition_task, workflow_task, parallel_task, foreach_task, terminal] (did you mean 'shell_task'?)",
    );
    has(
        &doc("  a:\n    description: x\n"),
        "wf.yaml:4:5: [MAG-Y006] state 'a' has no 'type': expected one of [agent_task, shell_task, script_task, tool_task, gate_task, timer_task, condition_task, workflow_task, parallel_task, foreach_task, terminal]",
    );
    // `type` misspelt is named where it stands.
    has(
        &doc("  a:\n    tpye: terminal\n"),
        "wf.yaml:4:5: [MAG-Y006] state 'a' has no 'type' (did you mean 'type' for 'tpye'?): expected one of [agent_task, shell_task, script_task, tool_task, gate_task, timer_task, condition_task, workflow_task, parallel_task, foreach_task, terminal]",
    );
}

#[test]
fn unknown_fields_suggest_the_right_one() {
    let text = doc(&format!(
        "  a:\n    type: shell_task\n    run: x\n    storAs: out\n    on: {{ success: end }}\n{END}"
    ));
    has(
        &text,
        "wf.yaml:6:5: [MAG-Y005] unknown field 'storAs' in state 'a' (shell_task): expected one of [type, description, timeoutSeconds, storeAs, on, catch, retry, compensate, run, dirName, splice] (did you mean 'storeAs'?)",
    );
    has(
        "start: a\nstaets: {}\n",
        "wf.yaml:2:1: [MAG-Y005] unknown field 'staets' in the workflow document: expected one of [description, version, start, parameters, bounds, allowedTools, tags, defaults, onFailure, states] (did you mean 'states'?)",
    );
    // A terminal is offered only what a terminal takes (its routes are refused on their own).
    has(
        "start: t\nstates:\n  t:\n    type: terminal\n    reslt: 1\n",
        "wf.yaml:5:5: [MAG-Y005] unknown field 'reslt' in state 't' (terminal): expected one of [type, description, timeoutSeconds, storeAs, outcome, result] (did you mean 'result'?)",
    );
}

#[test]
fn required_fields_per_type() {
    let cases = [
        ("agent_task", "recipe"),
        ("shell_task", "run"),
        ("script_task", "path"),
        ("tool_task", "tool"),
        ("timer_task", "duration"),
        ("workflow_task", "workflow"),
    ];
    for (ty, field) in cases {
        let text = doc(&format!(
            "  a:\n    type: {ty}\n    on: {{ success: end }}\n{END}"
        ));
        has(
            &text,
            &format!(
                "wf.yaml:4:5: [MAG-Y006] state 'a' has no '{field}': expected a '{field}:' string field"
            ),
        );
    }
    // A missing tool is said once, not also as a tool the pool leaves out.
    let missing_tool = rendered(&doc(&format!(
        "  a:\n    type: tool_task\n    on: {{ success: end }}\n{END}"
    )));
    assert!(
        !missing_tool.iter().any(|d| d.contains("MAG-YA010")),
        "{missing_tool:?}"
    );
    has(
        &doc(&format!(
            "  a:\n    type: gate_task\n    on: {{ ok: end }}\n{END}"
        )),
        "wf.yaml:4:5: [MAG-Y006] state 'a' has no 'inbox': expected an 'inbox:' block with at least 'kind'",
    );
    has(
        &doc("  a:\n    type: condition_task\n"),
        "wf.yaml:4:5: [MAG-Y006] state 'a' has no 'transitions': expected a list of {if, to} rules ending with an optional {else: <state>}",
    );
    // An empty list routes nothing: every run of it would fail at the condition.
    has(
        &doc("  a:\n    type: condition_task\n    transitions: []\n"),
        "wf.yaml:5:18: [MAG-Y006] state 'a' has an empty 'transitions' list: expected at least one {if, to} rule or an {else: <state>}",
    );
    has(
        &doc("  a:\n    type: shell_task\n    run: 5\n"),
        "wf.yaml:5:10: [MAG-Y007] 'run' of state 'a' is an integer (5): expected a string",
    );
}

/// A state's key is read as written (`5:` declares the state `5`); a target or `start`
/// written as a number is told how to name it.
#[test]
fn a_number_where_a_state_name_goes_is_told_to_quote_it() {
    let text = "start: t\nstates:\n  t: {type: timer_task, duration: 1ms, on: {fired: 5}}\n  5: {type: terminal}\n";
    has(
        text,
        "wf.yaml:3:52: [MAG-Y007] the target of on.fired in state 't' is an integer (5): expected the name of a state (a state named 5 is written in quotes: '5')",
    );
    has(
        "start: 5\nstates:\n  5: {type: terminal}\n",
        "wf.yaml:1:8: [MAG-Y007] 'start' is an integer (5): expected the name of a state (a state named 5 is written in quotes: '5')",
    );
    let quoted = "start: t\nstates:\n  t: {type: timer_task, duration: 1ms, on: {fired: '5'}}\n  5: {type: terminal}\n";
    assert!(rendered(quoted).is_empty(), "{:#?}", rendered(quoted));
}

/// A `states:` whose every entry the loader refused (a list as a state's name) is not also
/// called empty: the refusal says what is wrong.
#[test]
fn states_whose_entries_were_refused_are_not_also_called_empty() {
    let all = rendered("start: a\nstates:\n  ? [a, b]\n  : {type: terminal}\n");
    assert!(
        all.iter()
            .any(|d| d.contains("[MAG-Y007]") && d.contains("mapping key")),
        "{all:#?}"
    );
    assert!(all.iter().all(|d| !d.contains("[MAG-Y009]")), "{all:#?}");
}

/// A state that takes another's mapping by a merge key (`<<: *a`) does not repeat, word for
/// word and at the same place, what is wrong with what it took: each finding is said once.
#[test]
fn a_merged_mapping_s_finding_is_said_once() {
    let text = "start: a\nstates:\n  a: &t\n    type: timer_task\n    duration: 5s\n    on:\n      fired: ghost\n  b:\n    <<: *t\n    duration: 1s\n";
    let all = rendered(text);
    let ghosts: Vec<_> = all.iter().filter(|d| d.contains("'ghost'")).collect();
    assert_eq!(ghosts.len(), 1, "{all:#?}");
    assert!(
        ghosts[0].starts_with("wf.yaml:7:14: [MAG-Y010]"),
        "{all:#?}"
    );
}
