//! Reference §2.4, as its authors meant it: a whole `${…}` keeps the value's JSON type, a
//! placeholder inside text becomes text, only `${params.…}` / `${state.…}` are placeholders,
//! and a `$` before a placeholder is text before its value — through real runs.

use crate::common;

use common::Project;
use magrathea_core::{Record, RunStatus};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn s2_4_typed_parameters_flow_into_a_sub_workflow_and_back() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "child",
        r#"
start: done
parameters:
  n: { type: integer, required: true }
  fast: { type: boolean, required: true }
  opts: { type: object, required: true }
  items: { type: array, required: true }
states:
  done:
    type: terminal
    result:
      n: "${params.n}"
      fast: "${params.fast}"
      depth: "${params.opts.depth}"
      second: "${params.items.1}"
      text: "n=${params.n} fast=${params.fast} opts=${params.opts}"
"#,
    );
    p.workflow(
        "parent",
        r#"
start: call
parameters:
  n: { type: integer, required: true }
  opts: { type: object, default: { depth: 2 } }
states:
  call:
    type: workflow_task
    workflow: child
    params:
      n: "${params.n}"
      fast: true
      opts: "${params.opts}"
      items: ["a", "${params.n}"]
    storeAs: sub
    on: { success: done }
  done:
    type: terminal
    result:
      fromChild: "${state.sub}"
      n: "${state.sub.n}"
      missing: "${state.nothing.here}"
"#,
    );
    let view = p.run("parent", json!({"n": 3})).await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    let child = json!({
        "n": 3,
        "fast": true,
        "depth": 2,
        "second": 3,
        "text": "n=3 fast=true opts={\"depth\":2}",
    });
    assert_eq!(
        view.result,
        Some(json!({"fromChild": child, "n": 3, "missing": ""}))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn s2_4_other_dollar_braces_stay_text_and_a_dollar_before_a_placeholder_is_text() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "sh",
        r#"
start: echo
parameters:
  who: { type: string, default: ann }
states:
  echo:
    type: shell_task
    run: "echo ${UNSET_IN_THIS_TEST:-fallback} ${params.who}"
    splice: quoted
    dirName: workspace
    storeAs: out
    on: { success: done }
  done:
    type: terminal
    result: "$${params.who}:${state.out.stdout}"
"#,
    );
    let view = p.run("sh", json!({})).await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert_eq!(view.result, Some(json!("$ann:fallback ann\n")));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_templated_timer_duration_is_journaled_with_its_reason() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "wait",
        r#"
start: pause
parameters:
  wait: { type: string, required: true }
states:
  pause:
    type: timer_task
    duration: "${params.wait}"
    on: { fired: done }
    catch: { technical_error: bad }
  done:
    type: terminal
  bad:
    type: terminal
    outcome: failure
"#,
    );
    let view = p.run("wait", json!({"wait": "soon"})).await;
    assert_eq!(view.status, RunStatus::Failed, "{view:?}");
    let why = p
        .records(&view)
        .into_iter()
        .find_map(|r| match r {
            Record::SideEffect { name, value, .. } if name == "timer_duration" => Some(value),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no timer_duration record"));
    let error = why["error"].as_str().unwrap_or_default();
    assert!(error.contains("'soon'"), "{error}");
    assert!(error.contains("MAG-Y017"), "{error}");
    // The timer's task step ends with the state's outcome and says why.
    let ended = p
        .records(&view)
        .into_iter()
        .find_map(|r| match r {
            Record::TaskResult { outcome, error, .. } => Some((outcome.to_string(), error)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no task result"));
    assert_eq!(ended.0, "technical_error");
    assert!(
        ended.1.as_deref().is_some_and(|e| e.contains("MAG-Y017")),
        "{ended:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_condition_journals_its_choice_not_the_runs_variables() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "branch",
        r##"
start: pick
parameters:
  n: { type: integer, required: true }
states:
  pick:
    type: condition_task
    transitions:
      - if: "#params['n'] > 2"
        to: big
      - else: small
  big:
    type: terminal
    result: big
  small:
    type: terminal
    result: small
"##,
    );
    let view = p.run("branch", json!({"n": 5})).await;
    assert_eq!(view.result, Some(json!("big")));
    let records = p.records(&view);
    // As the reference's lifecycle has it, the evaluation is a task step: started with the
    // state's rules, ended with the choice.
    let (input, choice) = match records
        .iter()
        .filter(|r| matches!(r, Record::TaskStarted { .. } | Record::TaskResult { .. }))
        .collect::<Vec<_>>()[..]
    {
        [
            Record::TaskStarted {
                task, name, input, ..
            },
            Record::TaskResult {
                outcome, output, ..
            },
        ] if task == "condition_task" && name == "pick" && outcome == "success" => {
            (input.clone(), output.clone())
        }
        _ => panic!("no condition_task step in {records:?}"),
    };
    // The rules, not the parameters and variables they read.
    assert_eq!(
        input,
        json!({"rules": [{"if": "#params['n'] > 2", "to": "big"}], "else": "small"})
    );
    assert_eq!(
        choice,
        json!({"matched": "#params['n'] > 2", "next": "big"})
    );

    let today = p.engine.journal(view.workflow_run_id).unwrap();
    p.engine
        .check_replay(today.clone())
        .expect("today's journal replays");
    // Runs journaled before recorded the choice as a `condition` side effect of the same step.
    let mut earlier: Vec<magrathea_core::Entry> = Vec::new();
    for mut e in today {
        match e.record {
            Record::TaskStarted { .. } => continue,
            Record::TaskResult { step, output, .. } => {
                e.record = Record::SideEffect {
                    step,
                    name: "condition".into(),
                    value: output,
                };
            }
            _ => {}
        }
        e.seq = earlier.len() as u64;
        earlier.push(e);
    }
    p.engine
        .check_replay(earlier)
        .expect("a journal with the choice as a side effect replays on its path");
}
