//! A `#[workflow]` runs the executors of `magrathea-exec` as journaled tasks: a shell command
//! and tools through the permission cascade (an allowed one and a denied one), across an engine
//! restart in the middle of the shell step.
//!
//! The engine stops by the shutdown of its tokio runtime (see `restart.rs`); the next one
//! opens the same redb file, which only works once nothing holds the first engine: the
//! executors it was given hold it weakly.

use std::path::Path;
use std::time::Duration;

use magrathea::exec::{
    DocumentSource, Executors, IntoExecCall, RunContext, Scope, ShellInput, ShellOutput, ToolInput,
};
use magrathea::prelude::*;
use magrathea::{EngineBuilder, Record};
use magrathea_tests::{build_retrying, runtime, wait_for_blocking};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What [`ship`] found out.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Report {
    built: String,
    exit_code: Option<i32>,
    readme: Value,
    denied: String,
}

/// Builds (a shell command that waits for a file `go` in the workspace), runs a failing
/// command, reads the README with a tool, and tries a tool the workflow may not use.
#[workflow]
async fn ship(ctx: Context, scope: String) -> Result<Report, WorkflowError> {
    let scope = Scope::parse(&scope).ok_or_else(|| WorkflowError::failed("no scope"))?;
    let run = RunContext::new()
        .in_scope(&scope)
        .workflow("ship")
        .allowed_tools(Some(vec!["doc_read".into()]));
    let build = ShellInput::new(
        "echo started >> runs.txt; while [ ! -f go ]; do sleep 0.05; done; echo built",
    )
    .into_exec_call()
    .run_context(run.clone())
    .label("build");
    let built: ShellOutput = ctx.exec(build).await?;

    let failing = ShellInput::new("echo no >&2; exit 4")
        .into_exec_call()
        .scope(&scope);
    let exit_code = match ctx.exec(failing).await {
        Ok(out) => out.exit_code,
        Err(e) => {
            assert_eq!(e.kind(), "business_error");
            ShellOutput::of_failure(e.output()).and_then(|o| o.exit_code)
        }
    };

    let read = ToolInput::new("doc_read", json!({ "path": "README.md" }))
        .into_exec_call()
        .run_context(run.clone());
    let readme = ctx.exec(read).await?;

    let fetch = ToolInput::new("http_request", json!({ "url": "http://127.0.0.1:9/" }))
        .into_exec_call()
        .run_context(run);
    let denied = match ctx.exec(fetch).await {
        Ok(_) => "ran".to_string(),
        Err(e) => format!("{}: {}", e.kind(), e.message()),
    };
    Ok(Report {
        built: built.stdout,
        exit_code,
        readme: readme["content"].clone(),
        denied,
    })
}

fn builder(db: &Path, root: &Path) -> EngineBuilder {
    // New executors per engine, as a new process would have.
    let executors = Executors::new(DocumentSource::new(root));
    Engine::builder()
        .path(db)
        .executors(&executors)
        .workflow(ship)
}

#[test]
fn a_workflow_runs_a_shell_command_and_tools_and_recovers_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (db, root) = (dir.path().join("journal.redb"), dir.path().join("projects"));
    let project = root.join("acme/shop");
    std::fs::create_dir_all(project.join("_vance")).unwrap();
    std::fs::write(project.join("README.md"), "# shop\n").unwrap();
    let runs = project.join("runs.txt");

    // First engine: the build step starts and waits.
    let first = runtime();
    let run = first.block_on(async {
        let engine = build_retrying(|| builder(&db, &root)).await.unwrap();
        engine.start(ship, "acme/shop".into()).await.unwrap().id()
    });
    wait_for_blocking("the build step to start", Duration::from_secs(20), || {
        std::fs::read_to_string(&runs).is_ok_and(|s| s.lines().count() == 1)
    });
    first.shutdown_background();

    // Second engine on the same file: the run is recovered, the build step runs again.
    std::fs::write(project.join("go"), "").unwrap();
    let second = runtime();
    let (report, journal) = second.block_on(async {
        let engine = build_retrying(|| builder(&db, &root)).await.unwrap();
        let handle = engine.handle(ship, run).unwrap();
        let report = tokio::time::timeout(Duration::from_secs(30), handle.result())
            .await
            .expect("the recovered run ends")
            .unwrap();
        (report, engine.journal(run).unwrap())
    });
    second.shutdown_background();

    assert_eq!(
        report,
        Report {
            built: "built\n".into(),
            exit_code: Some(4),
            readme: json!("# shop\n"),
            denied: "permission_error: [MAG-TL002] tool `http_request` is not allowed: not in \
                     the workflow's allowedTools [doc_read]"
                .into(),
        }
    );
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap(),
        "started\nstarted\n",
        "the build step ran again after the restart"
    );
    let steps: Vec<(String, String, Value)> = journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::TaskStarted {
                task, name, input, ..
            } => Some((task.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect();
    let names: Vec<(&str, &str)> = steps
        .iter()
        .map(|(t, n, _)| (t.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("shell_task", "build"),
            ("shell_task", "shell_task"),
            ("tool_task", "tool_task"),
            ("tool_task", "tool_task"),
        ]
    );
    assert_eq!(
        steps[2].2,
        json!({
            "tool": "doc_read",
            "params": { "path": "README.md" },
            "$run": { "scope": "acme/shop", "workflowName": "ship", "allowedTools": ["doc_read"] }
        })
    );
}
