//! The JSON Schemas in `schemas/` are generated from the document types, and every document of
//! the repository matches its schema.
//!
//! After changing a document type, regenerate the files with
//!
//! ```text
//! MAGRATHEA_BLESS=1 cargo test -p magrathea-yaml --test it schema::
//! ```
//!
//! and review the diff.

use std::path::{Path, PathBuf};

use magrathea_yaml::scheduler::load_schedule;
use magrathea_yaml::schema::{DOCUMENTS, schema, schemas};
use magrathea_yaml::{LoadOptions, load_workflow, parse_yaml};
use serde_json::Value;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate sits in the workspace")
        .to_path_buf()
}

#[test]
fn the_committed_schemas_match_the_document_types() {
    let dir = workspace_root().join("schemas");
    let bless = std::env::var_os("MAGRATHEA_BLESS").is_some_and(|v| v == "1");
    for (name, schema) in schemas() {
        let path = dir.join(format!("{name}.schema.json"));
        let generated = format!("{}\n", serde_json::to_string_pretty(&schema).unwrap());
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "schemas/{name}.schema.json differs from the document types; regenerate it with \
             MAGRATHEA_BLESS=1 cargo test -p magrathea-yaml --test it schema::"
        );
    }
    assert_eq!(schemas().len(), DOCUMENTS.len());
}

/// The schema a repository file falls under, by where it lives.
fn kind_of(path: &Path) -> Option<&'static str> {
    let p = path.to_string_lossy().replace('\\', "/");
    if p.contains("/_vance/workflows/") || p.contains("/yaml-frontend/tests/fixtures/") {
        Some("workflow")
    } else if p.ends_with("/_vance/settings.yaml") {
        Some("settings")
    } else if p.contains("/_vance/recipes/") {
        Some("recipe")
    } else if p.contains("/_vance/events/") {
        Some("event")
    } else if p.contains("/_vance/scheduler/") {
        Some("scheduler")
    } else if p.contains("/_vance/hooks/") {
        Some("hook")
    } else {
        None
    }
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                yaml_files(&path, out);
            }
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            out.push(path);
        }
    }
}

/// The document as JSON, read with the loader's YAML 1.2 rules.
fn as_json(label: &str, text: &str) -> Value {
    parse_yaml(label, text, &LoadOptions::default())
        .unwrap_or_else(|d| panic!("{d}"))
        .to_json()
}

/// The schema's complaints about `doc`, one line each.
fn problems(name: &str, doc: &Value) -> Vec<String> {
    let schema = schema(name).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn every_document_of_the_repository_matches_its_schema() {
    let mut files = Vec::new();
    yaml_files(&workspace_root(), &mut files);
    files.sort();
    let mut checked = 0;
    for path in &files {
        let Some(kind) = kind_of(path) else { continue };
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path).unwrap();
        let found = problems(kind, &as_json(&label, &text));
        assert!(found.is_empty(), "{label} ({kind}):\n{}", found.join("\n"));
        if kind == "workflow" {
            load_workflow(&label, &text, &LoadOptions::default()).unwrap_or_else(|d| panic!("{d}"));
        }
        if kind == "scheduler" {
            load_schedule(&label, "s", &text).unwrap_or_else(|d| panic!("{d}"));
        }
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} documents found: {files:?}");
}

/// A document that uses every task type and the spellings the loader accepts.
const EVERY_TYPE: &str = r##"
description: every task type
version: 2
start: plan
parameters:
  url: { type: string, required: true, description: the PR }
  n: { type: integer, default: 3, enum: [1, 3] }
bounds: { maxTotalCostUsd: 1.5, maxWallclockSeconds: 60, maxTaskSpawns: 10 }
allowedTools: [doc_read]
tags: [all]
states:
  plan:
    type: agent_task
    recipe: jeltz
    params: { prompt: "Plan ${params.url}", schema: { risk: { type: string } } }
    storeAs: plan
    timeoutSeconds: 60
    on: { success: build }
    catch: { Agent-Error: ask, technical_error: fail, TIMEOUT: fail }
  build:
    type: shell_task
    run: make
    dirName: workspace
    retry: { maxAttempts: 2, on: [technical_error, Timeout], backoffSeconds: 0.5 }
    on: { success: transform }
    catch: { business_error: fail, technical_error: fail, timeout: fail }
  transform:
    type: script_task
    source: Workspace
    path: t.js
    dirName: workspace
    on: { success: call }
    catch: { technical_error: fail, timeout: fail }
  call:
    type: tool_task
    tool: doc_read
    params: { path: a.md }
    on: { success: ask }
    catch: { permission_error: fail, technical_error: fail }
  ask:
    type: gate_task
    inbox:
      kind: decision
      title: "Go?"
      body: "${state.plan}"
      assignedTo: "@maintainers"
      criticality: critical
      tags: [x]
      options: [go, stop]
    timeoutSeconds: 600
    on: { go: wait, stop: fail, insufficient_info: fail, undecidable: fail }
    catch: { timeout: fail }
  wait:
    type: timer_task
    duration: 5m
    on: { fired: route }
  route:
    type: condition_task
    transitions:
      - if: "#state['plan']['risk'] == 'low'"
        to: sub
      - else: fail
  sub:
    type: workflow_task
    workflow: other
    params: { url: "${params.url}" }
    on: { success: done, failure: fail }
  done:
    type: terminal
    outcome: success
    result: { ok: true }
  fail:
    type: terminal
    outcome: Failure
"##;

#[test]
fn schema_and_loader_accept_the_same_spellings() {
    let loaded = load_workflow("every.yaml", EVERY_TYPE, &LoadOptions::default())
        .unwrap_or_else(|d| panic!("{d}"));
    assert!(loaded.warnings.is_empty(), "{}", loaded.warnings);
    let found = problems("workflow", &as_json("every.yaml", EVERY_TYPE));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn schema_refuses_the_shapes_the_loader_refuses() {
    let state = |body: &str| format!("start: a\nstates:\n  a:\n{body}  z: {{ type: terminal }}\n");
    let cases = [
        state("    type: terminal\n    colour: red\n"),
        state("    type: shell_task\n    on: { success: z }\n"),
        state("    type: timer_tsk\n    duration: 1s\n"),
        state("    type: shell_task\n    run: x\n    timeoutSeconds: 0\n    on: { success: z }\n"),
        state("    type: shell_task\n    run: x\n    catch: { oops: z }\n"),
        state("    type: gate_task\n    inbox: { kind: MAYBE }\n    on: { approved: z }\n"),
        state("    type: shell_task\n    run: x\n    storeAs: a.b\n    on: { success: z }\n"),
        state(
            "    type: shell_task\n    run: x\n    retry: { on: [timeout] }\n    on: { success: z }\n",
        ),
        state("    type: terminal\n    on: { success: z }\n"),
        state("    type: gate_task\n    inbox: { kind: Decision }\n    on: { go: z }\n"),
        state(
            "    type: gate_task\n    inbox: { kind: DECISION, options: [] }\n    on: { go: z }\n",
        ),
        state("    type: condition_task\n    transitions:\n      - if: \"true\"\n"),
        "start: a\nstates: {}\n".to_owned(),
        "states:\n  a: { type: terminal }\n".to_owned(),
        "start: a\nstats: {}\nstates:\n  a: { type: terminal }\n".to_owned(),
    ];
    for text in &cases {
        assert!(
            load_workflow("bad.yaml", text, &LoadOptions::default()).is_err(),
            "the loader accepts:\n{text}"
        );
        assert!(
            !problems("workflow", &as_json("bad.yaml", text)).is_empty(),
            "the schema accepts:\n{text}"
        );
    }
}

#[test]
fn settings_recipes_events_and_hooks_are_checked_by_their_schemas() {
    let ok = [
        (
            "settings",
            "lanes: { maxConcurrentTasks: 2 }\nworkspaces: { build: /srv/b }\nshell: { maxOutputBytes: 100 }\ntools: { allowed: [doc_read], denied: [] }\nevents: { github: { token: s3cret } }\n",
        ),
        (
            "recipe",
            "engine: jeltz\nprovider: openai\nmodel: m\napiKeyEnv: KEY\nprices: { inputPerMTokUsd: 0.1, outputPerMTokUsd: 0.2 }\nflavour: host-specific\n",
        ),
        (
            "event",
            "description: GitHub PR hook\nworkflow: pr-review\nmethods: [POST, get]\nauth: { tokenSetting: events.github.token }\nparams: { source: github }\n",
        ),
        (
            "event",
            "workflow: notify-failure\nsubscribe:\n  source: internal\n  event: workflow.run.failed\n  filter: \"#event['workflowName'] == 'deploy'\"\nparams: { channel: ops }\n",
        ),
        (
            "hook",
            "description: review\non: workflow.run.failed\nfilter: \"#event['workflowName'] == 'deploy'\"\nscript: _vance/hooks/review.js\ntimeoutSeconds: 10\nenabled: true\n",
        ),
    ];
    for (kind, text) in ok {
        let found = problems(kind, &as_json(kind, text));
        assert!(found.is_empty(), "{kind}: {}", found.join("\n"));
    }
    let bad = [
        ("settings", "tools: { deny: [shell] }\n"),
        ("settings", "lanes: { maxConcurrentTasks: many }\n"),
        ("recipe", "model: m\n"),
        ("recipe", "engine: jeltz\nprices: { inputPerMTok: 1 }\n"),
        ("event", "methods: [POST]\n"),
        ("event", "workflow: w\nmetods: [GET]\n"),
        (
            "event",
            "workflow: w\nsubscribe: { event: workflow.run.faild }\n",
        ),
        (
            "event",
            "workflow: w\nsubscribe: { event: workflow.run.failed, source: kafka }\n",
        ),
        (
            "event",
            "workflow: w\nsubscribe: { event: workflow.run.failed, when: x }\n",
        ),
        ("hook", "script: a.js\n"),
        ("hook", "on: workflow.run.failed\n"),
        ("hook", "on: workflow.run.failed\nscript: a.py\n"),
        (
            "hook",
            "on: workflow.run.failed\nscript: a.js\ntimeoutSeconds: 61\n",
        ),
        (
            "hook",
            "on: workflow.run.failed\nscript: a.js\nenabled: yes\n",
        ),
    ];
    for (kind, text) in bad {
        assert!(
            !problems(kind, &as_json(kind, text)).is_empty(),
            "{kind} schema accepts:\n{text}"
        );
    }
}

/// A schedule that sets every field.
const EVERY_SCHEDULE_FIELD: &str = r#"
description: "Start Daily Audit Workflow at 06:00"
cron: "0 0 6 * * *"
workflow: daily-audit
params: { scope: production }
runAs: ops
timezone: Europe/Berlin
enabled: true
overlap: buffer_one
catchupWindow: 5m
jitter: 10s
"#;

#[test]
fn schema_and_loader_accept_the_same_schedule() {
    load_schedule("s.yaml", "s", EVERY_SCHEDULE_FIELD).unwrap_or_else(|d| panic!("{d}"));
    let found = problems("scheduler", &as_json("s.yaml", EVERY_SCHEDULE_FIELD));
    assert!(found.is_empty(), "{}", found.join("\n"));
    let one_shot = "workflow: w\nat: \"2026-12-24T18:00:00+01:00\"\n";
    load_schedule("s.yaml", "s", one_shot).unwrap_or_else(|d| panic!("{d}"));
    assert!(problems("scheduler", &as_json("s.yaml", one_shot)).is_empty());
    let wrong = "workflow: w\ncron: \"* * * * *\"\noverlap: sometimes\nrecipe: r\n";
    assert!(load_schedule("s.yaml", "s", wrong).is_err());
    assert_eq!(problems("scheduler", &as_json("s.yaml", wrong)).len(), 2);
}

/// `rejected` is `human_rejected` to `catch:` and `retry.on` (issue 10), in the schema as in
/// the loader.
#[test]
fn the_schema_takes_the_rejected_alias_the_loader_takes() {
    let doc = "start: ask\nstates:\n  ask:\n    type: gate_task\n    inbox: { kind: APPROVAL }\n    retry: { maxAttempts: 2, on: [Rejected] }\n    on: { approved: done, insufficient_info: done, undecidable: done }\n    catch: { rejected: done }\n  done: { type: terminal }\n";
    load_workflow("alias.yaml", doc, &LoadOptions::default()).unwrap_or_else(|d| panic!("{d}"));
    let found = problems("workflow", &as_json("alias.yaml", doc));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A workflow of one state `a` (written as `body`) beside a terminal `z`, with `top` above.
fn one_state(top: &str, body: &str) -> String {
    format!("{top}start: a\nstates:\n  a:\n{body}  z: {{ type: terminal }}\n")
}

/// A workflow whose state `a` is a timer of `duration` (as YAML double-quoted text), with a
/// parameter `wait` for the templated ones.
fn timer(duration: &str) -> String {
    one_state(
        "parameters: { wait: { type: string, default: 1s } }\n",
        &format!("    type: timer_task\n    duration: \"{duration}\"\n    on: {{ fired: z }}\n"),
    )
}

/// Values at the edges of what the loader takes are taken by the schema too: an editor shows
/// no error on a document that runs.
#[test]
fn the_schema_takes_what_the_loader_takes_at_the_edges() {
    let mut docs: Vec<String> = [
        "P7D",
        "p1w2d",
        "PT5M30S",
        "PT0.5S",
        "P1DT2H",
        "1.5s",
        "250ms",
        "2w",
        " 5m ",
        "\\u00a05m\\u3000",
        "PT1H30M",
        "${params.wait}",
        "\\n${params.wait}\\n",
    ]
    .iter()
    .map(|d| timer(d))
    .collect();
    docs.push(one_state(
        "defaults: { taskTimeoutSeconds: 0.0005, gateTimeoutSeconds: 0.0005 }\n",
        "    type: terminal\n",
    ));
    docs.push(one_state(
        "bounds: { runTimeoutMs: 1500 }\n",
        "    type: terminal\n    storeAs: outcome\n",
    ));
    docs.push(one_state(
        "onFailure: { policy: Fallback_Step, fallback: z }\n",
        "    type: terminal\n",
    ));
    for text in &docs {
        load_workflow("edge.yaml", text, &LoadOptions::default())
            .unwrap_or_else(|d| panic!("{d}\n{text}"));
        let found = problems("workflow", &as_json("edge.yaml", text));
        assert!(found.is_empty(), "{}\n{text}", found.join("\n"));
    }
}

/// What the loader refuses for its value (not only its type) the schema refuses too, where a
/// schema can say it: an editor marks it before `validate` does.
#[test]
fn the_schema_refuses_the_values_the_loader_refuses() {
    let mut docs: Vec<String> = [
        "7D",
        "1h30m",
        "P1M",
        "PT",
        "P1DT",
        "-5s",
        "P",
        "soon",
        "PW",
        "\\u0665s",
        "\\uff15s",
        "\\x1c7d",
        "\\ufeff7d",
    ]
    .iter()
    .map(|d| timer(d))
    .collect();
    let terminal = "    type: terminal\n";
    docs.extend([
        one_state("defaults: { taskTimeoutSeconds: 4000000000 }\n", terminal),
        one_state("defaults: { gateTimeoutSeconds: 0 }\n", terminal),
        one_state(
            "bounds: { maxWallclockSeconds: 2, runTimeoutMs: 1500 }\n",
            terminal,
        ),
        one_state("bounds: { maxWallclockSeconds: 4000000000 }\n", terminal),
        one_state("onFailure: { policy: bogus }\n", terminal),
        one_state(
            "onFailure: { policy: pause_for_approval, timeoutSeconds: 0 }\n",
            terminal,
        ),
        one_state("", "    type: terminal\n    storeAs: a.b\n"),
        one_state("", "    type: agent_task\n    recipe: \"\"\n    on: { success: z }\n"),
        one_state("", "    type: shell_task\n    run: \"  \"\n    on: { success: z }\n"),
        one_state("", "    type: tool_task\n    tool: \"\"\n    on: { success: z }\n"),
        one_state(
            "",
            "    type: workflow_task\n    workflow: \"\"\n    on: { success: z }\n",
        ),
        one_state("", "    type: condition_task\n    transitions: []\n"),
        one_state(
            "",
            "    type: shell_task\n    run: x\n    timeoutSeconds: 4000000000\n    on: { success: z }\n",
        ),
        one_state(
            "",
            "    type: shell_task\n    run: x\n    retry: { maxAttempts: 2, on: [timeout], backoffSeconds: 4000000000 }\n    on: { success: z }\n",
        ),
    ]);
    for text in &docs {
        assert!(
            load_workflow("bad.yaml", text, &LoadOptions::default()).is_err(),
            "the loader accepts:\n{text}"
        );
        assert!(
            !problems("workflow", &as_json("bad.yaml", text)).is_empty(),
            "the schema accepts:\n{text}"
        );
    }
    for text in [
        "workflow: w\n",
        "workflow: w\ncron: \"* * * * *\"\nat: \"2026-12-24T18:00:00+01:00\"\n",
        "workflow: w\nat: \"2026-12-24T18:00:00+01:00\"\ntimezone: Europe/Berlin\n",
        "workflow: \"\"\ncron: \"* * * * *\"\n",
    ] {
        assert!(
            load_schedule("s.yaml", "s", text).is_err(),
            "the loader accepts:\n{text}"
        );
        assert!(
            !problems("scheduler", &as_json("s.yaml", text)).is_empty(),
            "the schema accepts:\n{text}"
        );
    }
    assert!(
        !problems("event", &as_json("e.yaml", "workflow: w\nmethods: []\n")).is_empty(),
        "an event takes at least one method"
    );
}
