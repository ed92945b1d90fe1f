//! The values of fields: versions, retries, bounds, durations, parameters, templates,
//! gates, approvals and sub-workflows.

use super::*;

#[test]
fn a_numeric_version_keeps_its_text() {
    for (written, kept) in [
        ("1.10", "1.10"),
        ("2", "2"),
        ("1.0", "1.0"),
        ("\"1.10\"", "1.10"),
        ("0x10", "0x10"),
    ] {
        let text = format!("version: {written}\nstart: end\nstates:\n{END}");
        let loaded = load_workflow("wf.yaml", &text, &LoadOptions::default())
            .unwrap_or_else(|d| panic!("{d}"));
        assert_eq!(
            loaded.doc.version.as_deref(),
            Some(kept),
            "version: {written}"
        );
    }
    has(
        "version: [1]\nstart: end\nstates:\n  end:\n    type: terminal\n",
        "wf.yaml:1:10: [MAG-Y007] 'version' is a list: expected a string",
    );
}

#[test]
fn retry_shape() {
    let text = doc(&format!(
        "  a:\n    type: shell_task\n    run: x\n    on: {{ success: end }}\n    retry:\n      maxAttempts: 0\n      on: timeout\n      backoffSeconds: -1\n{END}"
    ));
    has(
        &text,
        "wf.yaml:8:20: [MAG-Y018] retry.maxAttempts of state 'a' is an integer (0): expected an integer >= 1",
    );
    has(
        &text,
        "wf.yaml:9:11: [MAG-Y018] retry.on of state 'a' is a string 'timeout': expected a list of error kinds",
    );
    has(
        &text,
        "wf.yaml:10:23: [MAG-Y018] retry.backoffSeconds of state 'a' is an integer (-1): expected a number >= 0",
    );
}

/// A placeholder naming a parameter or variable the document nearly declares is a warning with
/// the name meant; one with no close name is left alone (parameters pass through, §2.1).
#[test]
fn a_placeholder_of_a_nearly_declared_name_offers_it() {
    let text = "start: a\nparameters:\n  pr_url: { type: string }\nstates:\n  a:\n    type: terminal\n    storeAs: review\n    result: \"${params.pr_ur} ${state.reviw.x} ${params.other}\"\n";
    let all = rendered(text);
    assert!(
        all.contains(&"wf.yaml:8:14: [MAG-Y024] '${params.pr_ur}' names no parameter of the workflow, which resolves to an empty string: did you mean 'pr_url'?".to_owned()),
        "{all:#?}"
    );
    assert!(
        all.iter()
            .any(|d| d.contains("'${state.reviw}' names no variable (storeAs)")),
        "{all:#?}"
    );
    assert!(!all.iter().any(|d| d.contains("params.other")), "{all:#?}");
}

/// A retry with an empty `on:` retries nothing: said, as a retry without `on:` is.
#[test]
fn a_retry_of_no_error_kind_is_a_warning() {
    let text = doc(&format!(
        "  a:\n    type: shell_task\n    run: x\n    dirName: workspace\n    on: {{ success: end }}\n    catch: {{ business_error: end, technical_error: end }}\n    retry: {{ maxAttempts: 3, on: [] }}\n{END}"
    ));
    has(
        &text,
        "wf.yaml:9:34: [MAG-Y018] retry.on of state 'a' is empty: expected a list of error kinds; nothing will be retried",
    );
}

#[test]
fn bounds_timeout_store_as() {
    let text = format!(
        "start: a\nbounds:\n  maxTotalCostUsd: -1\n  maxTaskSpawns: 2.5\n  maxWallclockSeconds: soon\nstates:\n  a:\n    type: shell_task\n    run: x\n    timeoutSeconds: 0\n    storeAs: my.var\n    on: {{ success: end }}\n{END}"
    );
    has(
        &text,
        "wf.yaml:3:20: [MAG-Y019] bounds.maxTotalCostUsd is an integer (-1): expected a non-negative number",
    );
    has(
        &text,
        "wf.yaml:4:18: [MAG-Y019] bounds.maxTaskSpawns is a number (2.5): expected a non-negative integer",
    );
    has(
        &text,
        "wf.yaml:5:24: [MAG-Y019] bounds.maxWallclockSeconds is a string 'soon': expected a non-negative number",
    );
    has(
        &text,
        "wf.yaml:10:21: [MAG-Y020] timeoutSeconds of state 'a' is an integer (0): expected a positive number of seconds",
    );
    has(
        &text,
        "wf.yaml:11:14: [MAG-Y021] storeAs of state 'a' is a string 'my.var': expected a variable key of 1 to 256 bytes without '.', spaces, quotes, brackets, braces, '$' or '\\' (e.g. `review` or `check-output`)",
    );
}

/// `maxTaskSpawns: 0` is a valid bound, but one under which no task ever starts: a warning
/// at the value says what a run of it does.
#[test]
fn max_task_spawns_of_zero_is_a_warning() {
    let text = format!(
        "start: a\nbounds:\n  maxTaskSpawns: 0\nstates:\n  a:\n    type: shell_task\n    run: x\n    dirName: workspace\n    on: {{ success: end }}\n    catch: {{ technical_error: end, business_error: end, timeout: end }}\n{END}"
    );
    let loaded =
        load_workflow("wf.yaml", &text, &LoadOptions::default()).unwrap_or_else(|d| panic!("{d}"));
    let found: Vec<String> = loaded
        .warnings
        .iter()
        .filter(|w| w.message.starts_with("[MAG-Y019]"))
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        found,
        [
            "wf.yaml:3:18: [MAG-Y019] bounds.maxTaskSpawns is 0: no task may start, so a run fails 'bounds exhausted' before its first task; expected at least 1"
        ]
    );
    assert_eq!(loaded.plan.bounds.max_task_spawns, Some(0));
    // So is a deadline of 0, in either spelling.
    for key in ["maxWallclockSeconds", "runTimeoutMs"] {
        let text = format!("start: end\nbounds:\n  {key}: 0\nstates:\n{END}");
        let loaded = load_workflow("wf.yaml", &text, &LoadOptions::default())
            .unwrap_or_else(|d| panic!("{d}"));
        let found: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
        assert!(
            found.iter().any(|w| w.starts_with("wf.yaml:3:")
                && w.contains(&format!("[MAG-Y019] bounds.{key} is 0"))),
            "{found:?}"
        );
    }
}

/// Every duration of a document is at most 100 years (3,155,760,000 s): longer ones, however
/// written (an exponent, an integer past i64, `.inf`), are rejected with the limit in the
/// message, never taken as a `Duration` that overflows.
#[test]
fn durations_past_a_hundred_years_are_rejected_with_the_limit() {
    let text = format!(
        "start: a\nbounds:\n  maxWallclockSeconds: .inf\nstates:\n  a:\n    type: shell_task\n    run: x\n    timeoutSeconds: 1e20\n    on: {{ success: b }}\n    retry:\n      maxAttempts: 3\n      on: [timeout]\n      backoffSeconds: 1e300\n  b:\n    type: timer_task\n    duration: 36526d\n    timeoutSeconds: 99999999999999999999\n    on: {{ fired: c }}\n  c:\n    type: timer_task\n    duration: P1000000000000000000000W\n    on: {{ fired: end }}\n{END}"
    );
    has(
        &text,
        "wf.yaml:3:24: [MAG-Y019] bounds.maxWallclockSeconds is a number (.inf): expected at most 3155760000 seconds (100 years)",
    );
    has(
        &text,
        "wf.yaml:8:21: [MAG-Y020] timeoutSeconds of state 'a' is a number (1e20): expected at most 3155760000 seconds (100 years)",
    );
    has(
        &text,
        "wf.yaml:13:23: [MAG-Y018] retry.backoffSeconds of state 'a' is a number (1e300): expected at most 3155760000 seconds (100 years)",
    );
    has(
        &text,
        "wf.yaml:16:15: [MAG-Y017] invalid duration '36526d': longer than the limit of 100 years (3155760000 seconds) in state 'b'",
    );
    has(
        &text,
        "wf.yaml:17:21: [MAG-Y020] timeoutSeconds of state 'b' is a number (1e20): expected at most 3155760000 seconds (100 years)",
    );
    has(
        &text,
        "wf.yaml:21:15: [MAG-Y017] invalid duration 'P1000000000000000000000W': longer than the limit of 100 years (3155760000 seconds) in state 'c'",
    );
    assert_eq!(diags(&text).errors().count(), 6, "{}", diags(&text));
}

#[test]
fn durations_of_exactly_a_hundred_years_are_taken() {
    let text = format!(
        "start: a\nbounds:\n  maxWallclockSeconds: 3155760000\nstates:\n  a:\n    type: timer_task\n    duration: 36525d\n    timeoutSeconds: 3155760000\n    on: {{ fired: end }}\n    retry:\n      maxAttempts: 2\n      on: [timeout]\n      backoffSeconds: 3.15576e9\n{END}"
    );
    let loaded =
        load_workflow("wf.yaml", &text, &LoadOptions::default()).unwrap_or_else(|d| panic!("{d}"));
    // The only findings: a timer's timeoutSeconds has no effect (MAG-Y039), nor its retry on
    // a timeout it never ends with (MAG-YA001).
    assert!(
        loaded
            .warnings
            .iter()
            .all(|w| w.message.starts_with("[MAG-Y039]") || w.message.starts_with("[MAG-YA001]")),
        "{}",
        loaded.warnings
    );
    let a = &loaded.doc.states["a"];
    assert_eq!(a.timeout_seconds, Some(3_155_760_000.0));
    assert_eq!(a.retry.as_ref().map(|r| r.backoff_seconds), Some(3.15576e9));
}

#[test]
fn a_retry_of_more_attempts_than_a_run_can_make_is_kept() {
    for n in ["4294967295", "4294967296", "9223372036854775807"] {
        let text = format!(
            "start: a\nstates:\n  a:\n    type: shell_task\n    run: x\n    on: {{ success: end }}\n    retry:\n      maxAttempts: {n}\n      on: [business_error]\n{END}"
        );
        let loaded = load_workflow("wf.yaml", &text, &LoadOptions::default())
            .unwrap_or_else(|d| panic!("{d}"));
        let retry = loaded.doc.states["a"].retry.as_ref();
        assert_eq!(retry.map(|r| r.max_attempts), Some(u32::MAX), "{n}");
    }
}

#[test]
fn a_refused_number_is_quoted_as_written() {
    let text = format!(
        "start: a\nbounds:\n  maxTaskSpawns: 1e3\nstates:\n  a:\n    type: shell_task\n    run: x\n    dirName: workspace\n    on: {{ success: end }}\n    retry:\n      maxAttempts: 1.0\n      on: [business_error]\n{END}"
    );
    let all = rendered(&text);
    for said in [
        "a number (1e3)",
        "retry.maxAttempts of state 'a' is a number (1.0)",
    ] {
        assert!(all.iter().any(|d| d.contains(said)), "{said}: {all:#?}");
    }
}

/// A run's values are JSON, which has no infinite or NaN numbers: written in a state's data,
/// such a number is refused where it is, not turned into the text `inf`.
#[test]
fn a_number_json_cannot_hold_is_refused_in_a_states_data() {
    let text = "start: a\nstates:\n  a:\n    type: workflow_task\n    workflow: child\n    params: { n: .inf, list: [1, .nan] }\n    on: { success: end, failure: end }\n  end:\n    type: terminal\n    result: { big: 1e400, fine: 1.5 }\n".to_string();
    let all = rendered(&text);
    for said in [
        "wf.yaml:6:18: [MAG-Y026] 'params' of state 'a' holds the number .inf",
        "wf.yaml:6:34: [MAG-Y026] 'params' of state 'a' holds the number .nan",
        "wf.yaml:10:20: [MAG-Y026] 'result' of state 'end' holds the number 1e400",
    ] {
        assert!(all.iter().any(|d| d.starts_with(said)), "{said}: {all:#?}");
    }
    assert_eq!(
        all.iter()
            .filter(|d| d.contains("holds the number"))
            .count(),
        3,
        "{all:#?}"
    );
}

#[test]
fn negative_and_not_a_number_durations_are_rejected() {
    let text = format!(
        "start: a\nbounds:\n  maxWallclockSeconds: -.inf\nstates:\n  a:\n    type: shell_task\n    run: x\n    timeoutSeconds: .nan\n    on: {{ success: end }}\n    retry:\n      maxAttempts: 3\n      on: [timeout]\n      backoffSeconds: -1e300\n{END}"
    );
    has(
        &text,
        "wf.yaml:3:24: [MAG-Y019] bounds.maxWallclockSeconds is a number (-.inf): expected a non-negative number",
    );
    has(
        &text,
        "wf.yaml:8:21: [MAG-Y020] timeoutSeconds of state 'a' is a number (.nan): expected a positive number of seconds",
    );
    has(
        &text,
        "wf.yaml:13:23: [MAG-Y018] retry.backoffSeconds of state 'a' is a number (-1e300): expected a number >= 0",
    );
}

/// Another language's name for a parameter type, and a timer's duration written as a bare
/// number, say what was meant.
#[test]
fn a_type_named_as_elsewhere_and_a_duration_without_a_unit_say_what_was_meant() {
    let text = format!(
        "start: t\nparameters:\n  n: {{ type: int }}\n  m: {{ type: dict }}\nstates:\n  t:\n    type: timer_task\n    duration: 300\n    on: {{ fired: end }}\n{END}"
    );
    has(
        &text,
        "wf.yaml:3:14: [MAG-Y016] the type of parameter 'n' is a string 'int': expected one of [string, number, integer, boolean, object, array] (did you mean 'integer'?)",
    );
    has(
        &text,
        "wf.yaml:4:14: [MAG-Y016] the type of parameter 'm' is a string 'dict': expected one of [string, number, integer, boolean, object, array] (did you mean 'object'?)",
    );
    has(
        &text,
        "wf.yaml:8:15: [MAG-Y017] the duration of state 't' is a number (300) without a unit: expected a duration such as '300s', '5m', '2h' or 'PT1H'",
    );
    // A negative number is not offered back as a duration with a unit: '-5s' is none.
    has(
        &text.replace("duration: 300", "duration: -5"),
        "wf.yaml:8:15: [MAG-Y017] the duration of state 't' is a number (-5) without a unit: expected a duration of at least 0 such as '30s', '5m', '2h' or 'PT1H'",
    );
}

/// A long value is quoted by its start and its length: one short line, not thousands of
/// characters.
#[test]
fn a_long_value_is_quoted_by_its_start_and_length() {
    let long = "9".repeat(5000);
    let text = format!(
        "start: t\nstates:\n  t:\n    type: timer_task\n    duration: {long}s\n    on: {{ fired: end }}\n{END}"
    );
    let all = rendered(&text);
    let d = all
        .iter()
        .find(|d| d.contains("[MAG-Y017]"))
        .unwrap_or_else(|| panic!("{all:#?}"));
    assert!(d.len() < 300, "{d}");
    assert!(
        d.starts_with(&format!(
            "wf.yaml:5:15: [MAG-Y017] invalid duration '{}… (5001 characters)'",
            "9".repeat(60)
        )),
        "{d}"
    );
}

/// A long prose value, spaces and lines included, is quoted the same way: a document whose
/// root is a megabyte of text gets one short diagnostic, not the text again.
#[test]
fn a_long_prose_value_is_quoted_by_the_start_of_its_first_line() {
    let prose = "This workflow will run every night. ".repeat(20_000);
    let all = rendered(&prose);
    let d = all
        .iter()
        .find(|d| d.contains("[MAG-Y007]"))
        .unwrap_or_else(|| panic!("{all:#?}"));
    assert!(d.len() < 300, "{}", &d[..300]);
    assert_eq!(
        d,
        &format!(
            "wf.yaml:1:1: [MAG-Y007] the document root is a string '{}… ({} characters)': \
             expected a mapping",
            &prose[..60],
            prose.trim_end().chars().count()
        )
    );
    let lines = "start: a\nstates: |\n  first line\n  second line\n";
    has(
        lines,
        "wf.yaml:3:3: [MAG-Y007] 'states' is a string 'first line… (23 characters)': expected a mapping",
    );
}

/// `type:terminal` is one string to YAML (a key needs a space after its colon): the error
/// says so, where the value is a string that looks like a key and its value; a URL or a time
/// is not one.
#[test]
fn a_key_without_a_space_after_its_colon_is_pointed_out() {
    has(
        "start: s\nstates:\n  s:\n    type:terminal\n",
        "wf.yaml:4:5: [MAG-Y007] state 's' is a string 'type:terminal': expected a mapping; a key \
         needs a space after its ':' (`type: terminal`), or it is a string",
    );
    for other in ["http://example.com", "\"12:30\""] {
        let all = rendered(&format!("start: s\nstates:\n  s: {other}\n"));
        let d = all
            .iter()
            .find(|d| d.contains("[MAG-Y007]"))
            .unwrap_or_else(|| panic!("{all:#?}"));
        assert!(d.ends_with("expected a mapping"), "{d}");
    }
}

#[test]
fn parameter_schemas() {
    let text = format!("start: a\nparameters:\n  p1: {{ type: strng }}\n  p2: {{ type: integer, required: yes, default: \"x\" }}\n  p3: {{ required: true }}\nstates:\n{END}").replace("start: a", "start: end");
    has(
        &text,
        "wf.yaml:3:15: [MAG-Y016] the type of parameter 'p1' is a string 'strng': expected one of [string, number, integer, boolean, object, array] (did you mean 'string'?)",
    );
    has(
        &text,
        "wf.yaml:4:34: [MAG-Y016] 'required' of parameter 'p2' is a string 'yes': expected true or false",
    );
    has(
        &text,
        "wf.yaml:4:48: [MAG-Y016] default of parameter 'p2' is a string 'x': expected a value of type integer",
    );
    // A parameter without a type takes any value (the reference's pass-through).
    assert!(
        !diags(&text).to_string().contains("'p3'"),
        "{}",
        diags(&text)
    );
}

#[test]
fn an_infinite_default_is_no_json_value() {
    // YAML 1.2 reads `.inf` as a float (§2.3); JSON has none, so it never becomes text.
    let text = format!(
        "start: end\nparameters:\n  h: {{ type: string, default: .inf }}\n  n: {{ type: number, default: -.Inf }}\n  x: {{ default: .nan }}\nstates:\n{END}"
    );
    for (at, name, written) in [
        ("3:31", "h", ".inf"),
        ("4:31", "n", "-.Inf"),
        ("5:17", "x", ".nan"),
    ] {
        has(
            &text,
            &format!(
                "wf.yaml:{at}: [MAG-Y016] default of parameter '{name}' is {written}: expected a finite value (a run's parameters are JSON, which has no infinite or NaN numbers)"
            ),
        );
    }
}

#[test]
fn timer_durations() {
    let text = doc(&format!(
        "  a:\n    type: timer_task\n    duration: 7 days\n    on: {{ fired: end }}\n{END}"
    ));
    has(
        &text,
        "wf.yaml:5:15: [MAG-Y017] invalid duration '7 days': expected ISO-8601 like 'PT5M30S' or 'P7D', or a shortcut like '7d', '4h', '30m', '45s', '250ms' in state 'a'",
    );
    let ok = doc(&format!(
        "  a:\n    type: timer_task\n    duration: \"${{params.wait}}\"\n    on: {{ fired: end }}\n{END}"
    ));
    assert!(!diags(&ok).has_errors(), "{}", diags(&ok));
}

#[test]
fn likely_template_typos_are_warnings_pointing_into_the_string() {
    let text = doc(&format!(
        "  a:\n    type: tool_task\n    tool: t\n    params:\n      url: \"see ${{param.x}}\"\n      other: \"${{params.x\"\n      home: \"${{HOME}}/x ${{VAR:-1}} `${{js}}` $${{params.x}}\"\n    on: {{ success: end }}\n{END}"
    ));
    let d = diags(&text);
    assert!(!d.has_errors(), "{d}");
    has(
        &text,
        "wf.yaml:7:17: [MAG-Y024] '${param.x}' is left as text: only '${params.…}' and '${state.…}' are placeholders; did you mean '${params.x}'?",
    );
    has(
        &text,
        "wf.yaml:8:15: [MAG-Y024] unterminated placeholder: expected '}' (left as text)",
    );
    let templates = d.iter().filter(|d| d.code.as_str() == "MAG-Y024").count();
    assert_eq!(templates, 2, "{d}");
}

/// In a literal block (`run: |`, the usual form of a shell script), a folded one or a quoted
/// string over several lines, the warning points at the placeholder's own line and column,
/// not at the scalar's start.
#[test]
fn a_template_typo_in_a_literal_block_is_pointed_at_where_it_stands() {
    let text = doc(&format!(
        "  a:\n    type: shell_task\n    dirName: w\n    run: |\n      echo one\n\n      echo \"ab ${{param.x}}\"\n    on: {{ success: end }}\n{END}"
    ));
    has(
        &text,
        "wf.yaml:9:16: [MAG-Y024] '${param.x}' is left as text: only '${params.…}' and '${state.…}' are placeholders; did you mean '${params.x}'?",
    );
    // A folded block (`>`) joins its lines; the warning still points at the placeholder.
    let folded = doc(&format!(
        "  a:\n    type: shell_task\n    dirName: w\n    run: >\n      echo one\n      echo ${{param.x}}\n    on: {{ success: end }}\n{END}"
    ));
    assert!(
        rendered(&folded)
            .iter()
            .any(|d| d.starts_with("wf.yaml:8:12: [MAG-Y024]")),
        "{:#?}",
        rendered(&folded)
    );
    let quoted = doc(&format!(
        "  a:\n    type: shell_task\n    dirName: w\n    run: \"echo one\n      echo ${{param.x}}\"\n    on: {{ success: end }}\n{END}"
    ));
    assert!(
        rendered(&quoted)
            .iter()
            .any(|d| d.starts_with("wf.yaml:7:12: [MAG-Y024]")),
        "{:#?}",
        rendered(&quoted)
    );
}

#[test]
fn gate_inbox_rules() {
    let text = doc(&format!(
        "  a:\n    type: gate_task\n    inbox:\n      kind: DECISION\n      titel: x\n      criticality: urgent\n    on: {{ ok: end }}\n{END}"
    ));
    has(
        &text,
        "wf.yaml:6:7: [MAG-Y006] the inbox of state 'a' is a DECISION without options: expected a non-empty 'options' list",
    );
    has(
        &text,
        "wf.yaml:7:7: [MAG-Y005] unknown field 'titel' in the inbox of state 'a': expected one of [kind, title, body, assignedTo, criticality, tags, options, approvers, quorum, selfApproval, onReject] (did you mean 'title'?)",
    );
    has(
        &text,
        "wf.yaml:8:20: [MAG-Y026] 'criticality' of the inbox of state 'a' is a string 'urgent': expected one of [LOW, NORMAL, CRITICAL]",
    );
    // Options that are not strings are named as such, not as missing.
    let text = doc(&format!(
        "  a:\n    type: gate_task\n    inbox: {{ kind: DECISION, title: t, options: [true, 1] }}\n    on: {{ ok: end }}\n{END}"
    ));
    let d = diags(&text);
    assert!(
        d.iter()
            .any(|d| d.message.contains("is a boolean (true): expected a string")),
        "{d}"
    );
    assert!(
        !d.iter().any(|d| d.message.contains("without options")),
        "{d}"
    );
}

#[test]
fn duplicate_keys_are_errors() {
    has(
        "start: a\nstart: b\nstates: {}\n",
        "wf.yaml:2:1: [MAG-Y025] duplicate key 'start': expected each key once (first defined at 1:1)",
    );
}

/// Error kinds in `catch:` are read in any case and with dashes for underscores, so two
/// spellings of one kind are a duplicate: the second route could never be taken.
#[test]
fn two_spellings_of_one_error_kind_in_a_catch_are_a_duplicate() {
    has(
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: \"exit 1\"\n    dirName: workspace\n    \
         catch: { business_error: d, Business-Error: e }\n  d: { type: terminal }\n  e: { type: terminal }\n",
        "wf.yaml:7:33: [MAG-Y025] 'catch' of state 'a' names the error kind 'business_error' twice, as 'business_error' (at 7:14) and as 'Business-Error': expected each kind once",
    );
}

/// `${item}` and `${index}` have a value in a foreach_task's own `params:` only: anywhere
/// else (an inline branch's states, a parallel branch's params, another state) they are
/// flagged, and where they do have one they are not.
#[test]
fn item_placeholders_outside_a_foreach_s_params_are_flagged() {
    let text = "start: each\nstates:\n  each:\n    type: foreach_task\n    items: [1, 2]\n    \
                params: { it: \"${item}\", at: \"${index}\" }\n    start: s\n    states:\n      \
                s: { type: terminal, result: \"${item.name}\" }\n    on: { success: fan }\n  \
                fan:\n    type: parallel_task\n    branches:\n      one: { workflow: w, params: { \
                n: \"${index}\" } }\n    on: { success: end }\n  end: { type: terminal, result: \
                \"${item}\" }\n";
    let found: Vec<String> = rendered(text)
        .into_iter()
        .filter(|d| d.contains("has a value only in a foreach_task"))
        .collect();
    assert_eq!(found.len(), 3, "{found:#?}");
    for (line, word) in [(9, "${item}"), (14, "${index}"), (16, "${item}")] {
        assert!(
            found
                .iter()
                .any(|d| d.starts_with(&format!("wf.yaml:{line}:")) && d.contains(word)),
            "line {line}: {found:#?}"
        );
    }
}

/// A duplicate key does not hide the document's other mistakes: every one is reported at
/// once, the duplicate's later entry left out.
#[test]
fn a_duplicate_key_is_reported_with_the_other_mistakes() {
    let text = "start: a\nstates:\n  a: { type: terminal }\n  a: { type: terminal }\n  b: { type: shel_task }\n";
    has(
        text,
        "wf.yaml:4:3: [MAG-Y025] duplicate key 'a': expected each key once (first defined at 3:3)",
    );
    mentions(text, "unknown task type 'shel_task'");
}

#[test]
fn approval_rules_are_checked_where_they_are_written() {
    let gate = |inbox: &str| {
        doc(&format!(
            "  a:\n    type: gate_task\n    inbox:\n{inbox}    on:\n      approved: a\n"
        ))
    };
    let ok = gate(
        "      kind: APPROVAL\n      approvers: { users: [alice], roles: [ops] }\n      quorum: 2\n      selfApproval: false\n",
    );
    assert!(diags(&ok).errors().next().is_none(), "{:?}", rendered(&ok));
    has(
        &gate("      kind: DECISION\n      options: [a]\n      quorum: 2\n"),
        "wf.yaml:8:15: [MAG-Y026] the inbox of state 'a': approvers, quorum, selfApproval and onReject apply to APPROVAL inboxes only",
    );
    // Friday's `onReject`, in the inbox or beside it, once.
    let ok = gate("      kind: APPROVAL\n      onReject: reject_branch\n");
    assert!(diags(&ok).errors().next().is_none(), "{:?}", rendered(&ok));
    let beside = |on_reject: &str, kind: &str| {
        doc(&format!(
            "  a:\n    type: gate_task\n    onReject: {on_reject}\n    inbox:\n      kind: {kind}\n      options: [x]\n{}    on:\n      approved: a\n",
            if kind == "APPROVAL" {
                "      onReject: fail\n"
            } else {
                ""
            }
        ))
    };
    mentions(
        &gate("      kind: APPROVAL\n      onReject: explode\n"),
        "'onReject' of the inbox of state 'a' is a string 'explode': expected one of [fail, reject_branch]",
    );
    mentions(
        &beside("fail", "APPROVAL"),
        "state 'a' has 'onReject' twice, beside and in its inbox: expected one",
    );
    mentions(
        &beside("fail", "DECISION"),
        "'onReject' of state 'a' applies to APPROVAL inboxes only",
    );
    mentions(
        &gate("      kind: APPROVAL\n      quorum: 0\n"),
        "'quorum' of the inbox of state 'a' is an integer (0): expected a whole number of approvals from 1 to 100",
    );
    mentions(
        &gate("      kind: APPROVAL\n      approvers: {}\n"),
        "names nobody",
    );
    mentions(
        &gate("      kind: APPROVAL\n      selfApproval: nope\n"),
        "'selfApproval' of the inbox of state 'a'",
    );
}

/// Asserts that some diagnostic contains `part`, at a line and column.
#[track_caller]
fn mentions(text: &str, part: &str) {
    let all = rendered(text);
    assert!(
        all.iter()
            .any(|d| d.starts_with("wf.yaml:") && d.contains(part)),
        "expected {part:?} in {all:#?}"
    );
}

/// `timeoutSeconds` means nothing to a timer_task (it always ends `fired` after its duration)
/// or a condition_task (decided at once): a warning at the field says so, and the document
/// still loads. On the task types that can time out it draws no such warning.
#[test]
fn timeout_seconds_on_a_timer_or_condition_task_is_a_warning() {
    let text = doc(
        "  a:\n    type: timer_task\n    duration: 5m\n    timeoutSeconds: 60\n    on: { fired: b }\n  b:\n    type: condition_task\n    timeoutSeconds: 5\n    transitions:\n      - else: c\n  c:\n    type: shell_task\n    run: x\n    timeoutSeconds: 5\n    on: { success: end }\n    catch: { timeout: end, technical_error: end, business_error: end }\n",
    ) + END;
    let loaded =
        load_workflow("wf.yaml", &text, &LoadOptions::default()).unwrap_or_else(|d| panic!("{d}"));
    let inert: Vec<String> = loaded
        .warnings
        .iter()
        .filter(|w| w.message.starts_with("[MAG-Y039]"))
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        inert,
        [
            "wf.yaml:6:5: [MAG-Y039] timeoutSeconds of state 'a' has no effect on a timer_task, which always ends 'fired' once its 'duration' has passed (the wait is 'duration'): remove it",
            "wf.yaml:10:5: [MAG-Y039] timeoutSeconds of state 'b' has no effect on a condition_task, which is decided at once by its transitions: remove it",
        ]
    );
    assert!(
        loaded
            .warnings
            .iter()
            .all(|w| w.severity == Severity::Warning)
    );
}

/// `options` are "only for DECISION" (the reference): on an APPROVAL or FEEDBACK gate they
/// offer nothing, and a warning at the field says so; the document still loads.
#[test]
fn options_on_a_gate_that_is_no_decision_are_a_warning() {
    let gate = |kind: &str| {
        doc(&format!(
            "  a:\n    type: gate_task\n    inbox: {{ kind: {kind}, title: t, options: [ship, hold] }}\n    on: {{ timeout: end }}\n{END}"
        ))
    };
    let inert = |kind: &str| -> Vec<String> {
        let loaded = load_workflow("wf.yaml", &gate(kind), &LoadOptions::default())
            .unwrap_or_else(|d| panic!("{d}"));
        loaded
            .warnings
            .iter()
            .filter(|w| w.message.starts_with("[MAG-Y039]"))
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(
        inert("APPROVAL"),
        [
            "wf.yaml:5:49: [MAG-Y039] 'options' of the inbox of state 'a' have no effect on an APPROVAL gate, whose outcomes are approved and rejected: options are for kind: DECISION; remove them or set the kind"
        ]
    );
    assert_eq!(inert("FEEDBACK").len(), 1, "{:?}", inert("FEEDBACK"));
    assert_eq!(inert("DECISION"), Vec::<String>::new());
}

/// A DECISION's options are the outcomes `on:` routes: an empty one or one listed twice is a
/// mistake, said at the item.
#[test]
fn a_decisions_empty_or_repeated_option_is_refused_at_its_item() {
    let text = doc(
        "  a:\n    type: gate_task\n    inbox: { kind: DECISION, options: [retry, abort, retry, \"\"] }\n    on: { retry: end, abort: end, insufficient_info: end, undecidable: end }\n  end: { type: terminal }\n",
    );
    has(
        &text,
        "wf.yaml:5:54: [MAG-Y026] option 'retry' of the inbox of state 'a' is listed twice: expected each once",
    );
    has(
        &text,
        "wf.yaml:5:61: [MAG-Y026] an option of the inbox of state 'a' is empty: expected a word the decision can be answered with",
    );
}

/// An option named like an outcome the gate ends with by itself could not be told from it.
#[test]
fn a_decisions_option_named_like_its_own_outcome_is_refused() {
    let text = doc(
        "  a:\n    type: gate_task\n    inbox: { kind: DECISION, options: [go, cancelled, timeout] }\n    on: { go: end, insufficient_info: end, undecidable: end }\n  end: { type: terminal }\n",
    );
    has(
        &text,
        "wf.yaml:5:44: [MAG-Y026] option 'cancelled' of the inbox of state 'a' is an outcome the gate ends with by itself: expected another word, which on: routes apart from it",
    );
    assert!(
        rendered(&text)
            .iter()
            .any(|d| d.contains("option 'timeout' of the inbox")),
        "{:#?}",
        rendered(&text)
    );
}

/// A `workflow_task`'s `params:` are the sub-run's parameters: a list or a number is refused
/// where it is written; a mapping, nothing, or one `${…}` that gives a mapping is accepted.
#[test]
fn workflow_task_params_must_be_a_mapping() {
    let state = |params: &str| {
        doc(&format!(
            "  a:\n    type: workflow_task\n    workflow: child\n    params: {params}\n    on: {{ success: end, failure: end }}\n{END}"
        ))
    };
    for (bad, kind) in [
        ("[1, 2]", "a list"),
        ("3", "an integer (3)"),
        ("plain words", "a string 'plain words'"),
    ] {
        has(
            &state(bad),
            &format!(
                "wf.yaml:6:13: [MAG-Y007] the 'params' of state 'a' is {kind}: expected a mapping \
                 of the sub-workflow's parameters (or one ${{…}} that gives one)"
            ),
        );
    }
    for good in ["{ n: 1 }", "null", "\"${state.inputs}\""] {
        let errors: Vec<String> = diags(&state(good))
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(ToString::to_string)
            .collect();
        assert!(errors.is_empty(), "{good}: {errors:#?}");
    }
}

/// Workflow names are plain file names: a sub-workflow named with a path is refused when the
/// document loads, not when a run reaches the state.
#[test]
fn a_sub_workflow_named_with_a_path_is_an_error() {
    for name in ["../x", "a/b"] {
        let text = doc(&format!(
            "  a:\n    type: workflow_task\n    workflow: \"{name}\"\n    on: {{ success: end, failure: end }}\n{END}"
        ));
        has(
            &text,
            &format!(
                "wf.yaml:5:16: [MAG-Y026] 'workflow' of workflow_task 'a' is '{name}': expected \
                 the plain name of a workflow (a file name of _vance/workflows/ without '.yaml': \
                 ASCII letters, digits, '.', '_' and '-', no '..' or '/')"
            ),
        );
    }
    // A placeholder is resolved at run time.
    let templated = doc(&format!(
        "  a:\n    type: workflow_task\n    workflow: \"${{params.w}}\"\n    on: {{ success: end, failure: end }}\n{END}"
    ));
    assert!(rendered(&templated).iter().all(|d| !d.contains("MAG-Y026")));
}

/// A required field that is empty names nothing (`recipe: ""` would fail every run), and a
/// task's `params:` is a mapping of its parameters, as a sub-workflow's is.
#[test]
fn empty_required_fields_and_params_that_are_no_mapping_are_errors() {
    has(
        &doc(&format!(
            "  a:\n    type: agent_task\n    recipe: \"\"\n    on: {{ success: end }}\n{END}"
        )),
        "wf.yaml:5:13: [MAG-Y007] 'recipe' of state 'a' is empty: expected a non-empty string",
    );
    has(
        &doc(&format!(
            "  a:\n    type: tool_task\n    tool: \"  \"\n    on: {{ success: end }}\n{END}"
        )),
        "wf.yaml:5:11: [MAG-Y007] 'tool' of state 'a' is empty: expected a non-empty string",
    );
    // Said once: an empty duration is not also an invalid one.
    let timer = doc(&format!(
        "  a:\n    type: timer_task\n    duration: \"\"\n    on: {{ fired: end }}\n{END}"
    ));
    assert_eq!(
        rendered(&timer),
        ["wf.yaml:5:15: [MAG-Y007] 'duration' of state 'a' is empty: expected a non-empty string"]
    );
    let list = doc(&format!(
        "  a:\n    type: tool_task\n    tool: doc_read\n    params: [1]\n    on: {{ success: end }}\n{END}"
    ));
    assert!(
        rendered(&list).iter().any(|d| d
            .starts_with("wf.yaml:6:13: [MAG-Y007] the 'params' of state 'a'")
            && d.contains("expected a mapping of the tool's parameters")),
        "{:#?}",
        rendered(&list)
    );
    let text = doc(&format!(
        "  a:\n    type: agent_task\n    recipe: r\n    params: \"just text\"\n    on: {{ success: end }}\n{END}"
    ));
    assert!(
        rendered(&text)
            .iter()
            .any(|d| d.contains("[MAG-Y007] the 'params' of state 'a'")),
        "{:#?}",
        rendered(&text)
    );
    // One placeholder that gives a mapping is taken.
    let templated = doc(&format!(
        "  a:\n    type: tool_task\n    tool: doc_read\n    params: \"${{params.p}}\"\n    on: {{ success: end }}\n{END}"
    ));
    assert!(rendered(&templated).iter().all(|d| !d.contains("MAG-Y007")));
}

/// A whole number of attempts past what the reader holds as an integer is as good as the
/// largest (no run reaches it), not "a number" that is not an integer; a fraction still is not.
#[test]
fn a_huge_whole_number_of_attempts_is_accepted_and_a_fraction_is_not() {
    for huge in ["18446744073709551615", "99999999999999999999"] {
        let text = doc(&format!(
            "  a:\n    type: shell_task\n    run: x\n    dirName: workspace\n    on: {{ success: end }}\n    catch: {{ business_error: end, technical_error: end }}\n    retry: {{ maxAttempts: {huge}, on: [failure] }}\n{END}"
        ));
        let all = rendered(&text);
        assert!(
            !all.iter().any(|d| d.contains("maxAttempts")),
            "{huge}: {all:#?}"
        );
    }
    let text = doc(&format!(
        "  a:\n    type: shell_task\n    run: x\n    dirName: workspace\n    on: {{ success: end }}\n    retry: {{ maxAttempts: 2.5, on: [failure] }}\n{END}"
    ));
    has(
        &text,
        "wf.yaml:8:27: [MAG-Y018] retry.maxAttempts of state 'a' is a number (2.5): expected an integer >= 1",
    );
}

/// The timeouts of `defaults:` are timeouts: refused with the code of a state's timeout.
#[test]
fn a_bad_default_timeout_has_the_timeout_code() {
    let text = "start: a\ndefaults: {taskTimeoutSeconds: -1, gateTimeoutSeconds: 1e20}\nstates:\n  a:\n    type: terminal\n";
    has(
        text,
        "wf.yaml:2:32: [MAG-Y020] 'defaults.taskTimeoutSeconds' is an integer (-1): expected a positive number of seconds",
    );
    has(
        text,
        "wf.yaml:2:56: [MAG-Y020] defaults.gateTimeoutSeconds is a number (1e20): expected at most 3155760000 seconds (100 years)",
    );
}

/// A name holding a space-like character other than the space (a non-breaking space, a line
/// separator) is shown with it escaped and said to hold one: printed as it is, it reads as a
/// plain space or as nothing.
#[test]
fn a_space_like_character_in_a_name_is_shown_escaped_and_named() {
    let text = "start: a\nstates:\n  a: {type: terminal}\n\u{a0}\u{a0}b: {type: terminal}\n";
    has(
        text,
        "wf.yaml:4:1: [MAG-Y005] unknown field '\\u00a0\\u00a0b' (it holds a space-like character that YAML does not read as a space: write plain spaces) in the workflow document: expected one of [description, version, start, parameters, bounds, allowedTools, tags, defaults, onFailure, states]",
    );
    let text = "start: a\nstates:\n  a:\n    type: \"terminal\u{2028}\"\n";
    let all = rendered(text);
    assert!(
        all.iter().any(|d| d.starts_with("wf.yaml:4:11: [MAG-Y004] unknown task type 'terminal\\u2028' (it holds a space-like character")),
        "{all:#?}"
    );
}

/// A duration whose `${…}` is no placeholder (a misspelt `param.`, an unclosed brace) stays as
/// written, and is judged as a duration when the document is loaded, not on every run.
#[test]
fn a_duration_that_only_looks_templated_is_judged_as_written() {
    for (written, column) in [("${param.d}", 15), ("${params.d", 15)] {
        let text = format!(
            "start: t\nstates:\n  t:\n    type: timer_task\n    duration: \"{written}\"\n    on: {{ fired: end }}\n{END}"
        );
        has(
            &text,
            &format!(
                "wf.yaml:5:{column}: [MAG-Y017] invalid duration '{written}': expected ISO-8601 \
                 like 'PT5M30S' or 'P7D', or a shortcut like '7d', '4h', '30m', '45s', '250ms' in \
                 state 't'"
            ),
        );
    }
    // A real placeholder is judged when it resolves.
    let text = format!(
        "start: t\nparameters:\n  d: {{ type: string }}\nstates:\n  t:\n    type: timer_task\n    duration: \"${{params.d}}\"\n    on: {{ fired: end }}\n{END}"
    );
    assert!(
        !rendered(&text).iter().any(|d| d.contains("MAG-Y017")),
        "{:#?}",
        rendered(&text)
    );
}
