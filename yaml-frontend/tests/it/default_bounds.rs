//! The tenant's default bounds (`bounds:` in `<tenant>/_tenant/_vance/settings.yaml`) on YAML
//! runs whose document declares none: frozen in the run's StartRecord when it starts, and
//! enforced from there.

use crate::common;

use common::Project;
use magrathea_core::{Record, RunStatus, RunView, StartRecord};
use serde_json::{Value, json};

/// A loop that never ends by itself: each pass spawns one timer task.
const SPIN: &str = r#"
start: tick
states:
  tick:
    type: timer_task
    duration: 1ms
    on:
      fired: tick
"#;

/// Seven timer tasks in a row, then done.
const SEVEN: &str = r#"
start: s1
states:
  s1: { type: timer_task, duration: 1ms, on: { fired: s2 } }
  s2: { type: timer_task, duration: 1ms, on: { fired: s3 } }
  s3: { type: timer_task, duration: 1ms, on: { fired: s4 } }
  s4: { type: timer_task, duration: 1ms, on: { fired: s5 } }
  s5: { type: timer_task, duration: 1ms, on: { fired: s6 } }
  s6: { type: timer_task, duration: 1ms, on: { fired: s7 } }
  s7: { type: timer_task, duration: 1ms, on: { fired: done } }
  done: { type: terminal, result: seven }
"#;

async fn project(tenant_settings: Option<&str>) -> Project {
    let p = Project::new(|r| r).await;
    if let Some(yaml) = tenant_settings {
        let dir = p.project.parent().unwrap().join("_tenant/_vance");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("settings.yaml"), yaml).unwrap();
    }
    p
}

fn start_record(p: &Project, view: &RunView) -> StartRecord {
    match p.records(view).into_iter().next() {
        Some(Record::Start(s)) => *s,
        other => panic!("the journal starts with {other:?}"),
    }
}

/// The tasks the run spawned: here, timers set.
fn spawns(p: &Project, view: &RunView) -> usize {
    p.records(view)
        .iter()
        .filter(|r| matches!(r, Record::TimerSet { .. }))
        .count()
}

#[tokio::test]
async fn a_loop_without_bounds_stops_at_the_tenant_default_and_names_the_setting() {
    let p = project(Some("bounds:\n  maxTaskSpawns: 5\n")).await;
    p.workflow("spin", SPIN);
    let v = p.run("spin", json!({})).await;
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    assert_eq!(
        v.reason.as_deref(),
        Some(
            "bounds exhausted: maxTaskSpawns 5 (the tenant's default, bounds.maxTaskSpawns in \
             acme/_tenant/_vance/settings.yaml; a document's own bounds.maxTaskSpawns replaces \
             it) reached before state 'tick'"
        )
    );
    assert_eq!(spawns(&p, &v), 5);
    assert_eq!(
        start_record(&p, &v).bounds,
        Some(json!({
            "maxTaskSpawns": 5,
            "maxTaskSpawnsSetting": "bounds.maxTaskSpawns in acme/_tenant/_vance/settings.yaml"
        }))
    );
}

#[tokio::test]
async fn without_tenant_settings_a_run_freezes_the_built_in_default_of_ten_thousand() {
    let p = project(None).await;
    p.workflow("seven", SEVEN);
    let v = p.run("seven", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let frozen = start_record(&p, &v).bounds.expect("a frozen default");
    assert_eq!(frozen["maxTaskSpawns"], 10_000);
}

#[tokio::test]
async fn a_document_bound_wins_over_the_tenant_default_both_ways() {
    let p = project(Some("bounds:\n  maxTaskSpawns: 5\n")).await;
    // Higher than the default: the document may run longer.
    p.workflow(
        "seven",
        &SEVEN.replace("start: s1", "start: s1\nbounds:\n  maxTaskSpawns: 8"),
    );
    let v = p.run("seven", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(start_record(&p, &v).bounds, None, "nothing frozen");
    // Lower than the default: the document's limit, in the document's words.
    p.workflow(
        "spin",
        &SPIN.replace("start: tick", "start: tick\nbounds:\n  maxTaskSpawns: 3"),
    );
    let v = p.run("spin", json!({})).await;
    assert_eq!(
        v.reason.as_deref(),
        Some("bounds exhausted: maxTaskSpawns 3 reached before state 'tick'")
    );
    assert_eq!(spawns(&p, &v), 3);
}

#[tokio::test]
async fn zero_in_the_tenant_settings_turns_the_default_off() {
    let p = project(Some("bounds:\n  maxTaskSpawns: 0\n")).await;
    p.workflow("seven", SEVEN);
    let v = p.run("seven", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(start_record(&p, &v).bounds, None);
}

#[tokio::test]
async fn a_project_entry_overrides_the_tenant_default() {
    let p = project(Some(
        "bounds:\n  maxTaskSpawns: 100\n  projects:\n    shop:\n      maxTaskSpawns: 4\n",
    ))
    .await;
    p.workflow("seven", SEVEN);
    let v = p.run("seven", json!({})).await;
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    assert!(
        v.reason
            .as_deref()
            .unwrap()
            .contains("maxTaskSpawns 4 (the tenant's default, bounds.projects.shop.maxTaskSpawns"),
        "{v:?}"
    );
    assert_eq!(spawns(&p, &v), 4);
}

#[tokio::test]
async fn a_sub_run_without_bounds_stops_at_the_tenant_default() {
    let p = project(Some("bounds:\n  maxTaskSpawns: 5\n")).await;
    p.workflow("spin", SPIN);
    p.workflow(
        "parent",
        r#"
start: child
states:
  child:
    type: workflow_task
    workflow: spin
    on:
      failure: failed
  failed:
    type: terminal
    outcome: failure
    result: "child failed"
"#,
    );
    let v = p.run("parent", json!({})).await;
    let child = p
        .records(&v)
        .iter()
        .find_map(|r| match r {
            Record::ChildStarted { child_run_id, .. } => Some(*child_run_id),
            _ => None,
        })
        .expect("the child started");
    let c = p.engine.wait(child).await.unwrap();
    assert_eq!(c.status, RunStatus::Failed, "{c:?}");
    assert!(
        c.reason
            .as_deref()
            .unwrap()
            .starts_with("bounds exhausted: maxTaskSpawns 5 (the tenant's default"),
        "{c:?}"
    );
    let frozen: Vec<Value> = p
        .engine
        .journal(child)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.record {
            Record::Start(s) => s.bounds,
            _ => None,
        })
        .collect();
    assert_eq!(frozen.len(), 1);
    assert_eq!(frozen[0]["maxTaskSpawns"], 5);
}

/// A shell step and a script step whose timeout is above the tenant's
/// `bounds.maxTaskTimeoutSeconds` (one day by default) end `technical_error` before they
/// start, routed like any such outcome; the tenant's administrator may raise the bound.
#[tokio::test]
async fn a_step_timeout_above_the_tenants_ceiling_does_not_start() {
    let doc = |secs: u64| {
        format!(
            "start: sh\nstates:\n  sh:\n    type: shell_task\n    dirName: workspace\n    run: \"echo ran >> ran.txt\"\n    timeoutSeconds: {secs}\n    storeAs: shell\n    on: {{ success: js }}\n    catch: {{ technical_error: js }}\n  js:\n    type: script_task\n    path: _vance/scripts/s.js\n    timeoutSeconds: {secs}\n    storeAs: script\n    on: {{ success: done }}\n    catch: {{ technical_error: done }}\n  done: {{ type: terminal }}\n"
        )
    };
    let refused = |v: &RunView, key: &str| {
        let error = v.vars[key]["error"].as_str().unwrap_or_default().to_owned();
        assert!(error.contains("[MAG-BD030]"), "{key}: {v:?}");
        error
    };
    let p = project(Some("execution:\n  shellTask: true\n  scriptTask: true\n")).await;
    std::fs::create_dir_all(p.project.join("_vance/scripts")).unwrap();
    std::fs::write(p.project.join("_vance/scripts/s.js"), "return 'ran';\n").unwrap();
    p.workflow("long", &doc(99_999_999));
    let v = p.run("long", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let shell = refused(&v, "shell");
    assert!(
        shell.contains("bounds.maxTaskTimeoutSeconds (86400 s)"),
        "{shell}"
    );
    refused(&v, "script");
    assert!(
        !p.project.join("ran.txt").exists(),
        "the shell step did not run"
    );

    // Within the default, and above it once the tenant raises the bound, the steps run.
    p.workflow("day", &doc(86_400));
    let v = p.run("day", json!({})).await;
    assert_eq!(v.vars["script"], "ran", "{v:?}");
    let tenant = p
        .project
        .parent()
        .unwrap()
        .join("_tenant/_vance/settings.yaml");
    std::fs::write(
        &tenant,
        "execution:\n  shellTask: true\n  scriptTask: true\nbounds:\n  maxTaskTimeoutSeconds: 100000000\n",
    )
    .unwrap();
    let v = p.run("long", json!({})).await;
    assert_eq!(v.vars["script"], "ran", "{v:?}");
    assert_eq!(
        std::fs::read_to_string(p.project.join("ran.txt")).unwrap(),
        "ran\nran\n"
    );
}
