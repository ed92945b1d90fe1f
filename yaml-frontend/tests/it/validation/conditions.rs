//! `condition_task` rules and expressions.

use super::*;

#[test]
fn condition_rules() {
    let rules = "  a:\n    type: condition_task\n    transitions:\n      - else: end\n      - if: \"#params['x'] == 1\"\n        to: end\n      - else: end\n";
    let text = doc(&format!("{rules}{END}"));
    has(
        &text,
        "wf.yaml:6:9: [MAG-Y011] 'else' is rule 1 of 3 in state 'a': expected it to be the last rule",
    );
    has(
        &text,
        "wf.yaml:9:9: [MAG-Y011] a second 'else' in state 'a': expected at most one else rule",
    );
    // A second else is refused, and its target still checked: every error at once.
    let twice = doc(&format!(
        "  a:\n    type: condition_task\n    transitions:\n      - else: end\n      - else: nowhere\n{END}"
    ));
    has(
        &twice,
        "wf.yaml:7:9: [MAG-Y011] a second 'else' in state 'a': expected at most one else rule",
    );
    has(
        &twice,
        "wf.yaml:7:15: [MAG-Y010] unknown transition target 'nowhere': expected one of the states [a, end]",
    );
    // An else written under a rule's `if`/`to` is said at its own line, as a rule mixing
    // the two, and as the second else it is.
    let mixed = doc(&format!(
        "  a:\n    type: condition_task\n    transitions:\n      - else: end\n      - if: \"true\"\n        to: end\n        else: end\n{END}"
    ));
    has(
        &mixed,
        "wf.yaml:9:9: [MAG-Y012] rule 2 of state 'a' has 'else' beside 'if'/'to': expected a rule \
         {if: <condition>, to: <state>} or, as the last rule, {else: <state>} alone",
    );
    has(
        &mixed,
        "wf.yaml:9:9: [MAG-Y011] a second 'else' in state 'a': expected at most one else rule",
    );
    assert!(
        !rendered(&mixed).iter().any(|d| d.contains("unknown field")),
        "{:#?}",
        rendered(&mixed)
    );
    let missing = doc(&format!(
        "  a:\n    type: condition_task\n    transitions:\n      - if: \"true\"\n      - to: end\n{END}"
    ));
    has(
        &missing,
        "wf.yaml:6:9: [MAG-Y012] rule 1 of state 'a' has no 'to': expected a rule {if: <condition>, to: <state>} or {else: <state>}",
    );
    has(
        &missing,
        "wf.yaml:7:9: [MAG-Y012] rule 2 of state 'a' has no 'if': expected a rule {if: <condition>, to: <state>} or {else: <state>}",
    );
    let bad_target = doc(&format!(
        "  a:\n    type: condition_task\n    transitions:\n      - if: \"true\"\n        to: ned\n      - else: edn\n{END}"
    ));
    has(
        &bad_target,
        "wf.yaml:7:13: [MAG-Y010] unknown transition target 'ned': expected one of the states [a, end] (did you mean 'end'?)",
    );
    has(
        &bad_target,
        "wf.yaml:8:15: [MAG-Y010] unknown transition target 'edn': expected one of the states [a, end] (did you mean 'end'?)",
    );
}

#[test]
fn condition_errors_point_at_the_failing_character() {
    let text = doc(&format!(
        "  a:\n    type: condition_task\n    transitions:\n      - if: \"#state['x'].size() > 1\"\n        to: end\n      - if: T(java.lang.System)\n        to: end\n      - if: \"#state['x'] == \"\n        to: end\n{END}"
    ));
    has(
        &text,
        "wf.yaml:6:26: [MAG-Y023] invalid condition in rule 1 of state 'a': method calls are not allowed in conditions: 'size(...)'",
    );
    has(
        &text,
        "wf.yaml:8:13: [MAG-Y023] invalid condition in rule 2 of state 'a': type references T(...) are not allowed in conditions",
    );
    has(
        &text,
        "wf.yaml:10:28: [MAG-Y022] invalid condition in rule 3 of state 'a': expected a value, a variable or '(', found end of expression",
    );
}

/// A `${` that opens no placeholder in a condition is said once, by the condition's error,
/// not again as a template warning.
#[test]
fn an_unterminated_placeholder_in_a_condition_is_said_once() {
    let text = doc(&format!(
        "  a:\n    type: condition_task\n    transitions:\n      - if: \"${{state.x == 1\"\n        to: end\n      - else: end\n{END}"
    ));
    let at: Vec<String> = rendered(&text)
        .into_iter()
        .filter(|d| d.starts_with("wf.yaml:6:"))
        .collect();
    assert_eq!(
        at,
        [
            "wf.yaml:6:14: [MAG-Y022] invalid condition in rule 1 of state 'a': this `${` is not a placeholder: expected `${params.<key>}` or `${state.<key>}`"
        ],
    );
}

#[test]
fn a_condition_ending_too_soon_in_a_block_scalar_is_said_on_its_own_line() {
    let text = doc(&format!(
        "  a:\n    type: condition_task\n    transitions:\n      - if: |\n          #state['x'] == 'a'\n            && #state['y'] ==\n        to: end\n{END}"
    ));
    has(
        &text,
        "wf.yaml:8:30: [MAG-Y022] invalid condition in rule 1 of state 'a': expected a value, a variable or '(', found end of expression",
    );
}

/// Asserts that `text` reports each unknown condition variable `var` at `line`:`column`.
fn unknown_variables_at(text: &str, expected: &[(u32, u32, &str)]) {
    let found = rendered(text);
    for (line, column, var) in expected {
        assert!(
            found.iter().any(|d| d.starts_with(&format!(
                "wf.yaml:{line}:{column}: [MAG-Y023] invalid condition in rule"
            )) && d.contains(&format!("unknown variable '{var}'"))),
            "{var} at {line}:{column} in {found:#?}"
        );
    }
}

/// A condition written over several lines, folded (`>-`), plain or quoted, is pointed at
/// where the mistake stands, not at the start of the text.
#[test]
fn a_condition_over_several_lines_is_pointed_at_where_its_mistake_stands() {
    let text = doc(&format!(
        "  a:\n    type: condition_task\n    transitions:\n      - if: >-\n          #state['x'] == 'a'\n          && #foo['y'] == 2\n        to: end\n      - if: \"#state['x'] == 'a'\n          && #bar['y'] == 2\"\n        to: end\n{END}"
    ));
    unknown_variables_at(&text, &[(8, 14, "#foo"), (11, 14, "#bar")]);
}

#[test]
fn a_condition_with_escapes_in_its_quotes_is_still_pointed_at_exactly() {
    let text = doc(&format!(
        "  a:\n    type: condition_task\n    transitions:\n      - if: \"#state[\\\"x\\\"] == 'a' && #foo['y'] == 1\"\n        to: end\n      - if: '#state[''x''] == ''a'' && #bar[''y''] == 1'\n        to: end\n      - if: \"\\x23state['x'] == 'a' && #baz['y'] == 1\"\n        to: end\n{END}"
    ));
    unknown_variables_at(&text, &[(6, 38, "#foo"), (8, 40, "#bar"), (10, 39, "#baz")]);
}

#[test]
fn a_workflow_condition_reading_the_event_is_refused_where_it_reads_it() {
    let text = doc(&format!(
        "  a:\n    type: condition_task\n    transitions:\n      - if: \"#event['status'] == 'FAILED'\"\n        to: end\n      - else: end\n{END}"
    ));
    has(
        &text,
        "wf.yaml:6:14: [MAG-Y023] invalid condition in rule 1 of state 'a': '#event' exists only in event filters (`subscribe.filter:`, a hook's `filter:`); a workflow's conditions read #state, #params or #tasks",
    );
}

/// An empty `transitions:` is said once, as the error it is, without a warning that the state
/// has no `on:` or `catch:` (a condition routes by its rules, not by those).
#[test]
fn an_empty_rule_list_is_one_error_and_no_way_out_warning() {
    let text = doc(&format!(
        "  a:\n    type: condition_task\n    transitions: []\n{END}"
    ));
    let errors = match load_workflow("wf.yaml", &text, &LoadOptions::default()) {
        Ok(l) => panic!("loaded: {:?}", l.warnings),
        Err(d) => d.to_string(),
    };
    assert!(errors.contains("[MAG-Y006]"), "{errors}");
    assert!(!errors.contains("[MAG-Y014]"), "{errors}");
}

/// A condition with no `transitions:` at all is the same one error.
#[test]
fn a_missing_rule_list_is_one_error_and_no_way_out_warning() {
    let text = doc(&format!("  a:\n    type: condition_task\n{END}"));
    let errors = match load_workflow("wf.yaml", &text, &LoadOptions::default()) {
        Ok(l) => panic!("loaded: {:?}", l.warnings),
        Err(d) => d.to_string(),
    };
    assert!(errors.contains("[MAG-Y006]"), "{errors}");
    assert!(!errors.contains("[MAG-Y014]"), "{errors}");
}
