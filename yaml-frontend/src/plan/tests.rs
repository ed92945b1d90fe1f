use std::time::Duration;

use serde_json::json;

use super::*;
use crate::{LoadOptions, load_workflow};

fn plan(yaml: &str) -> Plan {
    let loaded =
        load_workflow("wf.yaml", yaml, &LoadOptions::default()).unwrap_or_else(|d| panic!("{d:?}"));
    Plan::compile(&loaded.doc)
}

const DOC: &str = r##"
start: check
parameters:
  n: { type: integer, required: true }
states:
  check:
    type: condition_task
    transitions:
      - if: "#params['n'] > 2"
        to: build
      - else: wait
  wait:
    type: timer_task
    duration: "${params.pause}"
    on: { fired: build }
  build:
    type: shell_task
    run: "make -j\"$MAGRATHEA_PARAM_N\""
    dirName: workspace
    timeoutSeconds: 30
    storeAs: built
    on: { success: review }
    catch: { timeout: done }
    retry: { maxAttempts: 3, on: [technical_error], backoffSeconds: 2 }
  review:
    type: gate_task
    inbox: { kind: DECISION, title: "Ship ${params.n}?", options: [ship, hold] }
    on: { ship: done, hold: done }
  done:
    type: terminal
    result: { n: "${params.n}", out: "${state.built}" }
"##;

#[test]
fn targets_are_indices_and_conditions_are_parsed_once() {
    let p = plan(DOC);
    assert_eq!(p.states[p.start].name, "check");
    let Step::Condition { rules, otherwise } = &p.states[0].step else {
        panic!("condition expected");
    };
    assert_eq!(rules.len(), 1);
    assert_eq!(p.states[rules[0].1].name, "build");
    assert_eq!(otherwise.map(|o| p.states[o].name.as_str()), Some("wait"));
    assert_eq!(
        rules[0].0.evaluate(&json!({}), &json!({"n": 3})).ok(),
        Some(true)
    );
}

#[test]
fn external_steps_carry_only_their_task_fields() {
    let p = plan(DOC);
    let build = &p.states[p.state_named("build").unwrap_or_default()];
    let Step::External { spec, .. } = &build.step else {
        panic!("external expected");
    };
    let input = spec.resolve(&json!({"n": 4}), &json!({}));
    assert_eq!(
        input,
        json!({"run": "make -j\"$MAGRATHEA_PARAM_N\"", "dirName": "workspace", "timeoutSeconds": 30})
    );
    assert_eq!(build.timeout, Some(Duration::from_secs(30)));
    let retry = build.retry.clone().unwrap_or_else(|| panic!("retry"));
    assert_eq!(retry.backoff, Duration::from_secs(2));
    assert!(build.retries("technical_error"));
    assert!(!build.retries("timeout"));
    assert_eq!(
        build.route("timeout").map(|s| p.states[s].name.as_str()),
        Some("done")
    );
    assert_eq!(build.route("business_error"), None);
}

#[test]
fn timers_gates_and_results_are_typed() {
    let p = plan(DOC);
    assert!(matches!(
        p.states[1].step,
        Step::Timer(TimerDuration::Templated(_))
    ));
    let Step::Gate(g) = &p.states[3].step else {
        panic!("gate expected");
    };
    assert_eq!(g.kind, InboxKind::Decision);
    assert_eq!(
        g.title
            .as_ref()
            .map(|t| t.render(&json!({"n": 2}), &json!({}))),
        Some("Ship 2?".to_string())
    );
    let Step::Terminal {
        result: Some(r), ..
    } = &p.states[4].step
    else {
        panic!("terminal expected");
    };
    assert_eq!(
        r.resolve(&json!({"n": 7}), &json!({"built": {"ok": true}})),
        json!({"n": 7, "out": {"ok": true}})
    );
}

#[test]
fn the_graph_is_drawn_from_the_plan() {
    let g = plan(DOC).graph();
    assert_eq!(g.start, "check");
    let labels: Vec<String> = g
        .edges
        .iter()
        .filter(|e| e.from == "check" || e.from == "build")
        .map(|e| format!("{}->{}:{}", e.from, e.to, e.label))
        .collect();
    assert_eq!(
        labels,
        [
            "check->build:if #params['n'] > 2",
            "check->wait:else",
            "build->review:success",
            "build->done:catch timeout",
        ]
    );
}

#[test]
fn defaults_give_timeouts_to_the_states_that_declare_none() {
    let p = plan(
        r#"
start: build
defaults:
  taskTimeoutSeconds: 600
  gateTimeoutSeconds: 3600
states:
  build:
    type: shell_task
    run: make
    on: { success: slow }
  slow:
    type: shell_task
    run: make all
    timeoutSeconds: 30
    on: { success: review }
  review:
    type: gate_task
    inbox: { kind: APPROVAL }
    on: { approved: done }
    catch: { timeout: done }
  done: { type: terminal }
"#,
    );
    let timeout = |name: &str| p.states[p.state_named(name).unwrap()].timeout;
    assert_eq!(timeout("build"), Some(Duration::from_secs(600)));
    assert_eq!(
        timeout("slow"),
        Some(Duration::from_secs(30)),
        "its own wins"
    );
    assert_eq!(timeout("review"), Some(Duration::from_secs(3600)));
    assert_eq!(timeout("done"), None);
    // The executor sees the default too.
    let Step::External { spec, .. } = &p.states[p.state_named("build").unwrap()].step else {
        panic!("a shell step");
    };
    let rendered = spec.resolve(&json!({}), &json!({}));
    assert_eq!(rendered["timeoutSeconds"], json!(600.0));
    // Without `defaults:` nothing changes.
    let bare = plan(
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: x\n    on: { success: b }\n  b: { type: terminal }\n",
    );
    assert_eq!(bare.states[0].timeout, None);
}

#[test]
fn mermaid_aliases_names_that_are_not_plain_words_and_escapes_what_ends_a_text() {
    let p = plan(
        r##"
start: run-checks
states:
  run-checks:
    type: condition_task
    transitions:
      - if: "#params['x'] == 'a;b' ? true : false"
        to: all done
      - else: end
  all done: { type: terminal }
  end: { type: terminal }
"##,
    );
    let text = StateGraph::from_plan(&p).to_mermaid();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    for expected in [
        "state \"run-checks\" as s0",
        "state \"all done\" as s1",
        "[*] --> s0",
        "s0 : run-checks (condition_task)",
        "s1 --> [*]",
        // Mermaid's own words are aliased too.
        "state \"end\" as s2",
        "s2 : end (terminal)",
        "s0 --> s1 : if #params['x'] == 'a#59;b' ? true #colon; false",
        "s0 --> s2 : else",
    ] {
        assert!(lines.contains(&expected), "{expected:?} not in\n{text}");
    }
    // An alias is never a plain state's name.
    let p = plan(
        "start: a-b\nstates:\n  a-b: { type: condition_task, transitions: [ { else: s0 } ] }\n  s0: { type: terminal }\n",
    );
    let text = StateGraph::from_plan(&p).to_mermaid();
    assert!(text.contains("state \"a-b\" as _s0\n"), "{text}");
    assert!(text.contains("_s0 --> s0 : else"), "{text}");
    // No bare id holds a character Mermaid's ids do not take.
    for line in &lines[1..] {
        if line.starts_with("state ") {
            continue;
        }
        let id = line.split([' ', ':']).next().unwrap();
        assert!(
            id == "[*]" || id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
    }
}
