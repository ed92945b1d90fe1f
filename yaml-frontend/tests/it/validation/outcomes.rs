//! Terminals, ways out, reachability and the outcomes `on:`, `catch:` and `retry.on` name.

use super::*;

#[test]
fn terminal_has_no_transitions() {
    let text =
        doc("  a:\n    type: terminal\n    on:\n      success: a\n    catch:\n      timeout: a\n");
    has(
        &text,
        "wf.yaml:5:5: [MAG-Y013] terminal state 'a' has 'on:': expected no transitions or retry on a terminal state (it ends the run)",
    );
    has(
        &text,
        "wf.yaml:7:5: [MAG-Y013] terminal state 'a' has 'catch:': expected no transitions or retry on a terminal state (it ends the run)",
    );
    has(
        &doc("  a:\n    type: terminal\n    outcome: succes\n"),
        "wf.yaml:5:14: [MAG-Y026] 'outcome' of state 'a' is a string 'succes': expected one of [success, failure] (did you mean 'success'?)",
    );
}

#[test]
fn no_way_out_and_unreachable_are_warnings() {
    let text = doc(&format!(
        "  a:\n    type: shell_task\n    run: x\n    dirName: workspace\n{END}"
    ));
    let loaded = load_workflow("wf.yaml", &text, &LoadOptions::default());
    let warnings = loaded.map(|l| l.warnings).unwrap_or_else(|d| panic!("{d}"));
    let w: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(w, vec![
        "wf.yaml:1:8: [MAG-YA012] no terminal state is reached from start state 'a': a run never ends DONE, only by an outcome no transition routes (FAILED), a cancel or its bounds; expected a transition to a state of type terminal".to_owned(),
        "wf.yaml:3:3: [MAG-Y014] state 'a' (shell_task) has no 'on:' or 'catch:' transitions: expected a way out; the run will fail with \"no transition for outcome\"".to_owned(),
        "wf.yaml:7:3: [MAG-Y027] state 'end' is never reached from start state 'a': expected a transition to it".to_owned(),
    ]);
    assert!(warnings.iter().all(|d| d.severity == Severity::Warning));
}

/// A document whose `start` reaches no terminal state can never end DONE: a warning at its
/// `start`, as two timers that go back and forth have; a document that reaches one has none.
#[test]
fn a_start_that_reaches_no_terminal_is_a_warning() {
    let warnings = |text: &str| -> Vec<String> {
        load_workflow("wf.yaml", text, &LoadOptions::default())
            .unwrap_or_else(|d| panic!("{d}"))
            .warnings
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    let ping_pong = "start: a\nstates:\n  a: { type: timer_task, duration: 1h, on: { fired: b } }\n  b: { type: timer_task, duration: 1h, on: { fired: a } }\n";
    assert_eq!(
        warnings(ping_pong),
        [
            "wf.yaml:1:8: [MAG-YA012] no terminal state is reached from start state 'a': a run never ends DONE, only by an outcome no transition routes (FAILED), a cancel or its bounds; expected a transition to a state of type terminal"
        ]
    );
    let ends =
        ping_pong.replace("on: { fired: a }", "on: { fired: end }") + "  end: { type: terminal }\n";
    assert_eq!(warnings(&ends), Vec::<String>::new());
    // A terminal reached only through a fallback of `onFailure:` is reached all the same.
    let fallback = ping_pong.replace(
        "start: a\n",
        "start: a\nonFailure: { policy: fallback, fallback: end }\n",
    ) + "  end: { type: terminal }\n";
    assert!(
        !warnings(&fallback).iter().any(|w| w.contains("MAG-YA012")),
        "{:#?}",
        warnings(&fallback)
    );
}

/// §3.2: a shell_task without `dirName:` fails with technical_error when it runs; validation
/// says so before, as a warning (the document is valid, and `catch:` may route the failure).
#[test]
fn a_shell_task_without_a_workspace_is_a_warning() {
    let text = doc(&format!(
        "  a:\n    type: shell_task\n    run: x\n    on:\n      success: end\n{END}"
    ));
    let loaded =
        load_workflow("wf.yaml", &text, &LoadOptions::default()).unwrap_or_else(|d| panic!("{d}"));
    let w: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert!(
        w.iter().any(|w| w
            .starts_with("wf.yaml:4:5: [MAG-Y041] state 'a' (shell_task) has no 'dirName'")
            && w.contains("[MAG-SH001]")),
        "{w:#?}"
    );
    let with_dir = text.replace("    run: x\n", "    run: x\n    dirName: workspace\n");
    let loaded = load_workflow("wf.yaml", &with_dir, &LoadOptions::default())
        .unwrap_or_else(|d| panic!("{d}"));
    assert!(
        !loaded
            .warnings
            .iter()
            .any(|d| d.to_string().contains("MAG-Y041")),
        "{:?}",
        loaded.warnings
    );
}

/// §3.1: an agent_task's `schema:` that no reply can be checked against (the reference's
/// elided `{ ... }` copied as it is) is said by validation, as a warning: a run with a Jeltz
/// recipe would end technical_error. The reference's properties map, a full JSON Schema and
/// a schema made at run time are not warned of.
#[test]
fn an_agent_schema_no_reply_can_be_checked_against_is_a_warning() {
    let agent = |schema: &str| {
        doc(&format!(
            "  a:\n    type: agent_task\n    recipe: jeltz\n    params:\n      prompt: hi\n      \
             schema: {schema}\n    on:\n      success: end\n    catch:\n      \
             technical_error: end\n{END}"
        ))
    };
    let warnings = |schema: &str| -> Vec<String> {
        load_workflow("wf.yaml", &agent(schema), &LoadOptions::default())
            .unwrap_or_else(|d| panic!("{d}"))
            .warnings
            .iter()
            .map(ToString::to_string)
            .filter(|w| w.contains("MAG-Y043"))
            .collect()
    };
    let w = warnings("{ ... }");
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(
        w[0].starts_with("wf.yaml:8:15: [MAG-Y043] params.schema of state 'a': invalid `schema`")
            && w[0].contains("[MAG-AG004]"),
        "{w:#?}"
    );
    for fine in [
        "{ risk: { type: string, enum: [low, medium, high] }, focus_areas: { type: array, items: { type: string } } }",
        "{ type: object, properties: { ok: { type: boolean } } }",
        "\"${params.schema}\"",
    ] {
        assert_eq!(warnings(fine), Vec::<String>::new(), "{fine}");
    }
}

#[test]
fn a_refused_on_is_its_error_only_and_an_empty_one_has_no_way_out() {
    // The target list is the error; the state declared where it goes.
    let text = doc(&format!(
        "  a:\n    type: shell_task\n    run: x\n    on:\n      success: [end, end]\n{END}"
    ));
    let all = rendered(&text);
    assert!(
        all.iter().any(|d| d.contains("[MAG-Y007]")),
        "the list is refused: {all:#?}"
    );
    assert!(
        !all.iter().any(|d| d.contains("[MAG-Y014]")),
        "no second report of the same `on:`: {all:#?}"
    );
    // An `on:` left empty (null) is refused, and that is all that is said of it.
    let all = rendered(&doc(&format!(
        "  a:\n    type: shell_task\n    run: x\n    on:\n{END}"
    )));
    assert!(
        all.iter()
            .any(|d| d.contains("[MAG-Y007]") && d.contains("is null")),
        "the null is refused: {all:#?}"
    );
    assert!(
        !all.iter().any(|d| d.contains("[MAG-Y014]")),
        "no second report of the same `on:`: {all:#?}"
    );
    // `on: {}` goes nowhere.
    has(
        &doc(&format!(
            "  a:\n    type: shell_task\n    run: x\n    on: {{}}\n{END}"
        )),
        "wf.yaml:3:3: [MAG-Y014] state 'a' (shell_task) has no 'on:' or 'catch:' transitions: expected a way out; the run will fail with \"no transition for outcome\"",
    );
}

#[test]
fn error_kinds_normalized_and_unknown_rejected() {
    let text = doc(&format!(
        "  a:\n    type: shell_task\n    run: x\n    catch:\n      Technical-Error: end\n      tiemout: end\n    retry:\n      maxAttempts: 3\n      on: [TIMEOUT, oops]\n{END}"
    ));
    has(
        &text,
        "wf.yaml:8:7: [MAG-Y015] unknown error kind 'tiemout' in 'catch' of state 'a': expected one of [technical_error, business_error, agent_error, timeout, permission_error, human_rejected, cancelled, failure] (did you mean 'timeout'?)",
    );
    has(
        &text,
        "wf.yaml:11:21: [MAG-Y015] unknown error kind 'oops' in retry.on of state 'a': expected one of [technical_error, business_error, agent_error, timeout, permission_error, human_rejected, cancelled, failure]",
    );
    assert_eq!(diags(&text).errors().count(), 2);
}

#[test]
fn catch_failure_of_the_reference_workflow_task_example_loads() {
    let text = doc(&format!(
        "  a:\n    type: workflow_task\n    workflow: build-and-test\n    on:\n      success: end\n    catch:\n      failure: end\n{END}"
    ));
    let loaded =
        load_workflow("wf.yaml", &text, &LoadOptions::default()).unwrap_or_else(|d| panic!("{d}"));
    assert!(loaded.warnings.is_empty(), "{}", loaded.warnings);
    let catch = &loaded.doc.states["a"].catch;
    assert_eq!(catch[0].kind, ErrorKind::Failure);
}

#[test]
fn rejected_is_human_rejected_in_catch_and_retry_on() {
    let text = doc(&format!(
        "  a:\n    type: gate_task\n    inbox: {{ kind: APPROVAL, title: t }}\n    retry:\n      maxAttempts: 2\n      on: [Rejected, human-rejected]\n    on:\n      approved: end\n    catch:\n      REJECTED: end\n{END}"
    ));
    let loaded =
        load_workflow("wf.yaml", &text, &LoadOptions::default()).unwrap_or_else(|d| panic!("{d}"));
    let a = &loaded.doc.states["a"];
    assert_eq!(a.catch[0].kind, ErrorKind::HumanRejected);
    let retry = a.retry.as_ref().unwrap();
    assert_eq!(
        retry.on,
        [ErrorKind::HumanRejected, ErrorKind::HumanRejected]
    );
}
