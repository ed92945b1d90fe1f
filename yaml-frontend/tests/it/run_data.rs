//! What a step journals, and what it sees without journaling it: a shell or script step's
//! journaled input is its typed input and the run's small context, never the run's parameters
//! and variables; those still reach the shell's environment and the script's `params` and
//! `state`, also when a step is run again after a restart.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use magrathea_core::{Engine, MemoryStore, Record, RunId, RunStatus, Store};
use magrathea_yaml::{DocumentSource, Scope, YamlRuntime};
use serde_json::{Value, json};

use crate::common;
use common::Project;

/// The inputs of the run's `TaskStartedRecord`s, by label.
fn started(journal: &[Record]) -> Vec<(String, Value)> {
    journal
        .iter()
        .filter_map(|r| match r {
            Record::TaskStarted { name, input, .. } => Some((name.clone(), input.clone())),
            _ => None,
        })
        .collect()
}

const SECRET: &str = "a value of the run that must stay out of later steps' inputs";

#[tokio::test]
async fn a_steps_journal_holds_its_input_not_the_runs_params_and_vars() {
    let p = Project::new(|r| r).await;
    std::fs::create_dir_all(p.project.join("_vance/scripts")).unwrap();
    std::fs::write(
        p.project.join("_vance/scripts/read.js"),
        "return { who: params.who, first: state.first.stdout };\n",
    )
    .unwrap();
    p.workflow(
        "chain",
        r#"
parameters:
  who: { type: string, required: true }
start: first
states:
  first:
    type: shell_task
    run: 'printf "%s" "$MAGRATHEA_PARAM_WHO"'
    dirName: workspace
    storeAs: first
    on: { success: second }
  second:
    type: shell_task
    run: 'printf "%s" "$MAGRATHEA_VAR_FIRST"'
    dirName: workspace
    timeoutSeconds: 30
    storeAs: second
    on: { success: third }
  third:
    type: script_task
    path: _vance/scripts/read.js
    storeAs: third
    on: { success: done }
  done: { type: terminal }
"#,
    );
    let view = p.run("chain", json!({ "who": SECRET })).await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    // The environment and the script's globals still carry the run's data…
    assert_eq!(view.vars["first"]["stdout"], SECRET);
    let second: Value = serde_json::from_str(view.vars["second"]["stdout"].as_str().unwrap())
        .expect("MAGRATHEA_VAR_FIRST is the stored output as JSON");
    assert_eq!(second["stdout"], SECRET);
    assert_eq!(
        view.vars["third"],
        json!({ "who": SECRET, "first": SECRET })
    );

    // …but the journaled inputs are the typed inputs and the run's context only.
    let run = json!({ "scope": "acme/shop", "workflowName": "chain", "startedBy": "tester" });
    assert_eq!(
        started(&p.records(&view)),
        vec![
            (
                "first".to_string(),
                json!({ "run": "printf \"%s\" \"$MAGRATHEA_PARAM_WHO\"", "dirName": "workspace", "$run": run })
            ),
            (
                "second".to_string(),
                json!({
                    "run": "printf \"%s\" \"$MAGRATHEA_VAR_FIRST\"", "dirName": "workspace",
                    "timeoutSeconds": 30.0, "$run": run
                })
            ),
            (
                "third".to_string(),
                json!({ "path": "_vance/scripts/read.js", "$run": run })
            ),
        ]
    );
}

const WAITER: &str = r#"
parameters:
  who: { type: string, required: true }
start: first
states:
  first:
    type: shell_task
    run: 'printf "%s" "$MAGRATHEA_PARAM_WHO-1"'
    dirName: workspace
    storeAs: first
    on: { success: second }
  second:
    type: shell_task
    run: 'echo "$MAGRATHEA_PARAM_WHO $MAGRATHEA_VAR_FIRST" >> seen.txt; while [ ! -f go ]; do sleep 0.05; done; cat seen.txt'
    dirName: workspace
    storeAs: second
    on: { success: done }
  done: { type: terminal }
"#;

/// A multi-threaded runtime per engine incarnation: shutting it down stops that engine at
/// once (its shell step's process group is killed with the dropped task), as a crash would.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn engine(root: &Path, store: Arc<dyn Store>) -> (YamlRuntime, Engine, Scope) {
    let (docs, scope) = DocumentSource::for_project_dir(&root.join("acme/shop"));
    let runtime = YamlRuntime::new(docs);
    let engine = runtime
        .install(Engine::builder().store(store))
        .build()
        .await
        .unwrap();
    runtime.attach(&engine);
    (runtime, engine, scope)
}

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_shell_step_run_again_after_a_restart_sees_the_same_environment() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let project = root.join("acme/shop");
    std::fs::create_dir_all(project.join("_vance/workflows")).unwrap();
    std::fs::write(project.join("_vance/workflows/waiter.yaml"), WAITER).unwrap();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let seen = project.join("seen.txt");

    // First incarnation: the second step starts, records its environment, and waits.
    let first = runtime();
    let run: RunId = first.block_on({
        let store = store.clone();
        async move {
            let (runtime, engine, scope) = engine(root, store).await;
            runtime
                .start(
                    &engine,
                    &scope,
                    "waiter",
                    json!({ "who": "ford" }),
                    "tester",
                )
                .await
                .unwrap()
        }
    });
    wait_for("the second step to start", || {
        std::fs::read_to_string(&seen).is_ok_and(|s| s.lines().count() == 1)
    });
    first.shutdown_background();

    // Second incarnation: the run is recovered and the started step runs again.
    std::fs::write(project.join("go"), "").unwrap();
    let second = runtime();
    let (view, records) = second.block_on(async move {
        let (_runtime, engine, _) = engine(root, store).await;
        let view = tokio::time::timeout(Duration::from_secs(30), engine.wait(run))
            .await
            .expect("the recovered run ends")
            .unwrap();
        let records: Vec<Record> = engine
            .journal(run)
            .unwrap()
            .into_iter()
            .map(|e| e.record)
            .collect();
        (view, records)
    });
    second.shutdown_background();

    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    let lines: Vec<String> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 2, "the step ran twice: {lines:?}");
    assert_eq!(
        lines[0], lines[1],
        "both runs of the step saw the same environment"
    );
    assert!(
        lines[0].starts_with("ford {") && lines[0].contains(r#""stdout":"ford-1""#),
        "{lines:?}"
    );
    assert_eq!(
        view.vars["second"]["stdout"],
        format!("{}\n{}\n", lines[0], lines[1])
    );
    // One start of the step in the journal, without the run's data.
    let inputs = started(&records);
    assert_eq!(inputs.len(), 2, "{inputs:?}");
    assert!(
        !inputs[1].1.to_string().contains("ford"),
        "{:?}",
        inputs[1].1
    );
}
