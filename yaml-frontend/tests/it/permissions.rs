//! The tool permission cascade (reference §10): allowed = tenant ∩ project ∩ workflow,
//! denied = tenant ∪ project and always wins, the default pool for workflows without
//! `allowedTools:`. Settings are the `tools:` section of `_vance/settings.yaml` of the
//! tenant (`<tenant>/_tenant/`) and the project.

use std::path::Path;
use std::time::Duration;

use magrathea_core::{Engine, Record, RunStatus, RunView, TaskOptions, TaskRegistration};
use magrathea_yaml::{DocumentSource, Scope, YamlRuntime};
use serde_json::{Value, json};

fn write(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

fn settings(root: &Path, tenant: Option<&str>, project: Option<&str>) {
    let t = root.join("acme/_tenant/_vance/settings.yaml");
    let p = root.join("acme/shop/_vance/settings.yaml");
    for (path, body) in [(t, tenant), (p, project)] {
        match body {
            Some(b) => write(&path, b),
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// `Ok` or the substring the refusal reason must contain.
type Expect = Result<(), &'static str>;

/// Case, tenant settings, project settings, workflow `allowedTools:`, tool, expectation.
type Row<'a> = (
    &'a str,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a [&'a str]>,
    &'a str,
    Expect,
);

#[test]
fn the_cascade_combines_tenant_project_and_workflow() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let rt = YamlRuntime::new(DocumentSource::new(root));
    let scope = Scope::new("acme", "shop");
    let http = Some(&["http_request"][..]);
    let http_doc = Some(&["http_request", "doc_read"][..]);
    let start_http = Some(&["workflow_start", "http_request"][..]);
    #[rustfmt::skip]
    let table: Vec<Row> = vec![
        ("default pool", None, None, None, "doc_read", Ok(())),
        ("default pool: all four", None, None, None, "web_search", Ok(())),
        ("outside the default pool", None, None, None, "http_request", Err("default tool pool")),
        ("workflow_start is not pooled", None, None, None, "workflow_start", Err("default tool pool")),
        ("workflow declares it", None, None, http, "http_request", Ok(())),
        ("workflow narrows the pool", None, None, http, "doc_read", Err("workflow's allowedTools")),
        ("tenant allows less", Some("tools: { allowed: [doc_read] }"), None, None, "doc_list",
            Err("tenant's tools.allowed")),
        ("tenant allows it", Some("tools: { allowed: [doc_read] }"), None, None, "doc_read", Ok(())),
        ("project narrows the tenant",
            Some("tools: { allowed: [doc_read, http_request] }"),
            Some("tools: { allowed: [http_request] }"), http_doc, "doc_read",
            Err("project's tools.allowed")),
        ("all three allow",
            Some("tools: { allowed: [doc_read, http_request] }"),
            Some("tools: { allowed: [http_request] }"), http_doc, "http_request", Ok(())),
        ("project cannot widen the tenant",
            Some("tools: { allowed: [doc_read] }"),
            Some("tools: { allowed: [doc_read, http_request] }"), http, "http_request",
            Err("tenant's tools.allowed")),
        ("workflow cannot widen the project", None,
            Some("tools: { allowed: [workflow_start] }"), start_http, "http_request",
            Err("project's tools.allowed")),
        ("tenant deny beats every allow",
            Some("tools: { allowed: [http_request], denied: [http_request] }"),
            Some("tools: { allowed: [http_request] }"), http, "http_request",
            Err("tenant's tools.denied")),
        ("project deny beats the default pool", None, Some("tools: { denied: [doc_read] }"),
            None, "doc_read", Err("project's tools.denied")),
        ("project deny beats the workflow", None, Some("tools:\n  denied: [http_request]\n"),
            http, "http_request", Err("project's tools.denied")),
        ("a deny of another tool", Some("tools: { denied: [doc_list] }"), None, None,
            "doc_read", Ok(())),
        ("empty allowed allows nothing", Some("tools: { allowed: [] }"), None, None,
            "doc_read", Err("tenant's tools.allowed")),
        ("other sections only", None,
            Some("lanes: { maxConcurrentTasks: 2 }\nworkspaces: { build: /tmp }\n"), http,
            "http_request", Ok(())),
        ("tools without allowed", Some("tools: { denied: [] }"), Some("tools: {}"), http,
            "http_request", Ok(())),
        ("unparsable settings fail closed", Some("tools: [unclosed"), None, None, "doc_read",
            Err("fail closed")),
        ("a typo in tools fails closed", None, Some("tools: { deny: [x] }"), None, "doc_read",
            Err("fail closed")),
    ];
    for (case, tenant, project, workflow, tool, expect) in table {
        settings(root, tenant, project);
        let workflow: Option<Vec<String>> =
            workflow.map(|w| w.iter().map(|s| s.to_string()).collect());
        let got = rt.tool_permission(&scope, workflow.as_deref(), tool);
        match (expect, &got) {
            (Ok(()), Ok(())) => {}
            (Err(needle), Err(reason)) => {
                assert!(
                    reason.contains(needle),
                    "{case}: `{reason}` lacks `{needle}`"
                )
            }
            _ => panic!("{case}: expected {expect:?}, got {got:?}"),
        }
    }
}

struct Project {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    runtime: YamlRuntime,
    engine: Engine,
    scope: Scope,
}

async fn project(docs: &[(&str, &str)]) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    for (name, body) in docs {
        write(
            &root.join(format!("acme/shop/_vance/workflows/{name}.yaml")),
            body,
        );
    }
    let runtime = YamlRuntime::new(DocumentSource::new(&root));
    let ping = TaskRegistration::new("ping", TaskOptions::default(), |_, _| async move {
        Ok(json!({ "pong": true }))
    });
    let engine = runtime
        .install(Engine::builder().in_memory().task(ping))
        .build()
        .await
        .unwrap();
    runtime.attach(&engine);
    Project {
        _dir: dir,
        root,
        runtime,
        engine,
        scope: Scope::new("acme", "shop"),
    }
}

impl Project {
    async fn run(&self, name: &str) -> RunView {
        let run = self
            .runtime
            .start(&self.engine, &self.scope, name, json!({}), "tester")
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(30), self.engine.wait_settled(run))
            .await
            .unwrap()
            .unwrap()
    }

    fn records(&self, view: &RunView) -> Vec<Record> {
        self.engine
            .journal(view.workflow_run_id)
            .unwrap()
            .into_iter()
            .map(|e| e.record)
            .collect()
    }
}

fn call(allowed: &str, tool: &str) -> String {
    format!(
        r#"
{allowed}
start: call
states:
  call:
    type: tool_task
    tool: {tool}
    params: {{ path: "." }}
    storeAs: out
    on:
      success: done
    catch:
      permission_error: refused
  done: {{ type: terminal, result: done }}
  refused: {{ type: terminal, outcome: failure, result: "${{state.out.error}}" }}
"#
    )
}

fn reason(view: &RunView) -> String {
    view.result
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_denied_tool_ends_in_permission_error_and_runs_nothing() {
    let p = project(&[
        ("listed", &call("allowedTools: [doc_list]", "doc_list")),
        ("pooled", &call("", "doc_list")),
        ("unpooled", &call("", "http_request")),
        ("narrowed", &call("allowedTools: [doc_read]", "doc_list")),
        ("task", &call("allowedTools: [ping]", "ping")),
        (
            "uncaught",
            "allowedTools: [doc_read]\nstart: c\nstates:\n  c:\n    type: tool_task\n    \
             tool: doc_list\n    on: { success: d }\n  d: { type: terminal }\n",
        ),
    ])
    .await;

    for name in ["listed", "pooled", "task"] {
        let v = p.run(name).await;
        assert_eq!(v.status, RunStatus::Done, "{name}: {v:?}");
    }
    for (name, needle) in [
        ("unpooled", "default tool pool"),
        ("narrowed", "workflow's allowedTools [doc_read]"),
    ] {
        let v = p.run(name).await;
        assert_eq!(v.status, RunStatus::Failed, "{name}: {v:?}");
        let r = reason(&v);
        assert!(
            r.contains("[MAG-TL002]") && r.contains(needle),
            "{name}: {r}"
        );
        // The decision is journaled as a side effect, then the state's task step (reference
        // §5: every task writes its start and its result) with the refusal as its result; the
        // tool itself never ran.
        let records = p.records(&v);
        let types: Vec<&str> = records.iter().map(Record::type_name).collect();
        let decided = types.iter().position(|t| *t == "SideEffectRecord");
        let started = types.iter().position(|t| *t == "TaskStartedRecord");
        assert!(decided.is_some() && decided < started, "{name}: {types:?}");
        let results: Vec<&Record> = records
            .iter()
            .filter(|r| r.type_name() == "TaskResultRecord")
            .collect();
        assert_eq!(results.len(), 1, "{name}: {types:?}");
        let Record::TaskResult {
            outcome, output, ..
        } = results[0]
        else {
            unreachable!()
        };
        assert_eq!(outcome.as_str(), "permission_error", "{name}");
        assert!(
            output["error"].as_str().is_some_and(|e| e.contains(needle)),
            "{name}: {output}"
        );
    }

    let v = p.run("uncaught").await;
    assert_eq!(v.status, RunStatus::Failed);
    assert_eq!(
        v.reason.as_deref(),
        Some("no transition for outcome 'permission_error'")
    );
    // The view says why beside the reason: the refused task's error.
    let cause = v
        .last_error
        .as_ref()
        .expect("the task failure behind the reason");
    assert_eq!(cause.outcome, "permission_error");
    assert!(cause.error.contains("not allowed"), "{cause:?}");

    // Settings deny what the workflow declares: the tenant's deny, then the project's
    // allow list; a registered task is refused the same way.
    write(
        &p.root.join("acme/_tenant/_vance/settings.yaml"),
        "tools:\n  denied: [doc_list]\n",
    );
    let v = p.run("listed").await;
    assert_eq!(v.status, RunStatus::Failed);
    assert!(reason(&v).contains("tenant's tools.denied"), "{v:?}");
    let v = p.run("pooled").await;
    assert!(reason(&v).contains("tenant's tools.denied"), "{v:?}");
    write(
        &p.root.join("acme/shop/_vance/settings.yaml"),
        "lanes: { maxConcurrentTasks: 1 }\ntools:\n  allowed: [doc_read]\n",
    );
    let v = p.run("task").await;
    assert_eq!(v.status, RunStatus::Failed);
    assert!(reason(&v).contains("project's tools.allowed"), "{v:?}");
}

/// Each refused attempt is a task step of its own attempt number (reference §5), so a `retry:`
/// on `permission_error` journals every attempt, and `bounds.maxTaskSpawns` (§9: "Number of
/// `TaskStartedRecord` entries … Retries count") stops a run that retries a refusal.
#[tokio::test]
async fn refused_attempts_are_numbered_task_steps_that_count_against_max_task_spawns() {
    let doc = |bounds: &str| {
        format!(
            "allowedTools: [doc_read]\n{bounds}start: c\nstates:\n  c:\n    type: tool_task\n    \
             tool: doc_list\n    retry: {{ maxAttempts: 3, on: [permission_error], \
             backoffSeconds: 0 }}\n    on: {{ success: d }}\n    catch: {{ permission_error: f }}\n  \
             d: {{ type: terminal }}\n  f: {{ type: terminal, outcome: failure }}\n"
        )
    };
    let p = project(&[
        ("retried", &doc("")),
        ("bounded", &doc("bounds: { maxTaskSpawns: 2 }\n")),
    ])
    .await;

    let v = p.run("retried").await;
    assert_eq!(v.current_state.as_deref(), Some("f"), "{v:?}");
    let records = p.records(&v);
    let attempts: Vec<(u32, &str)> = records
        .iter()
        .filter_map(|r| match r {
            Record::TaskResult {
                attempt, outcome, ..
            } => Some((*attempt, outcome.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        attempts,
        [
            (1, "permission_error"),
            (2, "permission_error"),
            (3, "permission_error")
        ]
    );

    let v = p.run("bounded").await;
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    assert!(
        v.reason
            .as_deref()
            .is_some_and(|r| r.contains("maxTaskSpawns")),
        "{v:?}"
    );
}
