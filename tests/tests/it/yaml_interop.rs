//! Code and YAML meet both ways: a `#[task]` is callable from YAML as a `tool_task`, and a
//! `#[workflow]` starts a YAML workflow as its child.

use std::path::Path;
use std::sync::OnceLock;

use magrathea::prelude::*;
use magrathea::yaml::{DocumentSource, Scope, YamlRuntime};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A greeting request.
#[derive(Debug, Serialize, Deserialize)]
struct Greeting {
    name: String,
    excited: bool,
}

/// Greets someone.
#[task]
async fn greet(input: Greeting) -> Result<String, TaskError> {
    Ok(format!(
        "hello, {}{}",
        input.name,
        if input.excited { "!" } else { "." }
    ))
}

static RUNTIME: OnceLock<(YamlRuntime, Scope)> = OnceLock::new();

/// Runs the YAML workflow `child` and returns its result.
#[workflow]
async fn parent(ctx: Context, who: String) -> Result<Value, WorkflowError> {
    let (runtime, scope) = RUNTIME.get().expect("runtime set by the test");
    let request = runtime
        .child_request(ctx.raw(), scope, "child", json!({ "who": who }))
        .map_err(WorkflowError::failed)?;
    let outcome = ctx.child_request(request).await;
    if outcome.status != RunStatus::Done {
        return Err(WorkflowError::failed(format!(
            "child ended {}",
            outcome.status
        )));
    }
    Ok(outcome.result)
}

const CHILD: &str = r#"
parameters:
  who: { type: string, required: true }
allowedTools: [greet]
start: hello
states:
  hello:
    type: tool_task
    tool: greet
    params:
      name: "${params.who}"
      excited: true
    storeAs: greeting
    on:
      success: done
  done:
    type: terminal
    result:
      greeting: "${state.greeting}"
"#;

const BAD_INPUT: &str = r#"
allowedTools: [greet]
start: hello
states:
  hello:
    type: tool_task
    tool: greet
    params:
      nom: x
    storeAs: error
    catch:
      technical_error: failed
  failed:
    type: terminal
    outcome: failure
    result: "${state.error.error}"
"#;

fn project(root: &Path) -> (YamlRuntime, Scope) {
    let dir = root.join("acme").join("shop");
    std::fs::create_dir_all(dir.join("_vance/workflows")).unwrap();
    std::fs::write(dir.join("_vance/workflows/child.yaml"), CHILD).unwrap();
    std::fs::write(dir.join("_vance/workflows/bad-input.yaml"), BAD_INPUT).unwrap();
    let (docs, scope) = DocumentSource::for_project_dir(&dir);
    (YamlRuntime::new(docs), scope)
}

#[tokio::test]
async fn a_workflow_starts_a_yaml_child_that_calls_a_task_as_a_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let (runtime, scope) = RUNTIME.get_or_init(|| project(&tempfile::tempdir().unwrap().keep()));
    let engine = Engine::builder()
        .path(tmp.path().join("journal.redb"))
        .workflow(parent)
        .task(greet)
        .with_core(|b| runtime.install(b))
        .build()
        .await
        .unwrap();
    let run = engine.start(parent, "Ford".to_string()).await.unwrap().id();
    let result = engine.handle(parent, run).unwrap().result().await.unwrap();
    assert_eq!(result, json!({ "greeting": "hello, Ford!" }));

    let child = engine
        .list_runs(&magrathea::RunFilter {
            workflow: Some("child".into()),
            ..Default::default()
        })
        .unwrap()
        .remove(0);
    assert_eq!(child.parent, Some(run));
    assert_eq!(
        child.scope,
        scope.key(),
        "the YAML child runs in its project's scope"
    );

    // A #[task] called with input of the wrong shape is a technical_error naming the field.
    let bad = runtime
        .start(engine.core(), scope, "bad-input", json!({}), "t")
        .await
        .unwrap();
    let view = engine.wait(bad).await.unwrap();
    assert_eq!(view.status, RunStatus::Failed);
    let message = view.result.unwrap().as_str().unwrap().to_string();
    assert!(
        message.contains("[MAG-TK002]") && message.contains("`name`"),
        "{message}"
    );
}
