//! An application's own engine served over real HTTP: a code workflow and a YAML workflow
//! that calls a `#[task]` as a tool, both started through the API.

use std::path::Path;

use magrathea::prelude::*;
use magrathea_server::Server;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What the tasks get from the application.
struct Rate(u64);

#[derive(Debug, Serialize, Deserialize)]
struct Amount {
    cents: String,
}

/// Converts an amount with the application's rate.
#[task(retry = "none")]
async fn convert(ctx: TaskContext, amount: Amount) -> Result<u64, TaskError> {
    let rate = ctx
        .data::<Rate>()
        .ok_or_else(|| TaskError::terminal("no rate"))?;
    Ok(amount.cents.parse::<u64>()? * rate.0)
}

/// Converts every amount and adds them up.
#[workflow]
async fn total(ctx: Context, amounts: Vec<u64>) -> Result<u64, WorkflowError> {
    let mut sum = 0;
    for cents in amounts {
        sum += ctx
            .task(
                convert,
                Amount {
                    cents: cents.to_string(),
                },
            )
            .await?;
    }
    Ok(sum)
}

const CONVERT_ONE: &str = r#"
parameters:
  cents: { type: string, required: true }
allowedTools: [convert]
start: convert
states:
  convert:
    type: tool_task
    tool: convert
    params:
      cents: "${params.cents}"
    storeAs: converted
    on:
      success: done
  done:
    type: terminal
    result: "${state.converted}"
"#;

const TOKEN: &str = "code-and-yaml-token";

fn tree(root: &Path) {
    let workflows = root.join("acme/shop/_vance/workflows");
    std::fs::create_dir_all(&workflows).unwrap();
    std::fs::write(workflows.join("convert-one.yaml"), CONVERT_ONE).unwrap();
    std::fs::create_dir_all(root.join("acme/lab/_vance/workflows")).unwrap();
    std::fs::create_dir_all(root.join("_auth")).unwrap();
    std::fs::write(
        root.join("_auth/tokens.yaml"),
        format!(
            "tokens:\n  - token: {TOKEN}\n    tenant: acme\n    subject: tester\n    \
             scopes: [workflow.read, workflow.run]\n"
        ),
    )
    .unwrap();
}

async fn post(http: &reqwest::Client, url: String, params: Value) -> (u16, Value) {
    let reply = http
        .post(url)
        .bearer_auth(TOKEN)
        .json(&json!({ "params": params }))
        .send()
        .await
        .unwrap();
    (reply.status().as_u16(), reply.json().await.unwrap())
}

async fn get(http: &reqwest::Client, url: String) -> (u16, Value) {
    let reply = http.get(url).bearer_auth(TOKEN).send().await.unwrap();
    let status = reply.status().as_u16();
    (status, reply.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn code_and_yaml_workflows_run_side_by_side_over_http() {
    let root = tempfile::tempdir().unwrap();
    tree(root.path());
    let builder = Engine::builder()
        .path(root.path().join("journal.redb"))
        .data(Rate(3))
        .workflow(total)
        .task(convert);
    let (addr, server) = Server::new(builder.into_core(), root.path())
        .addr("127.0.0.1:0".parse().unwrap())
        .serve()
        .await
        .unwrap();
    let engine = Engine::from_core(server.engine().clone());
    let http = reqwest::Client::new();
    let shop = format!("http://{addr}/brain/acme/project/shop");

    let (status, started) = post(
        &http,
        format!("{shop}/workflows/total/start"),
        json!([1, 2]),
    )
    .await;
    assert_eq!(status, 201, "{started}");
    assert_eq!(started["workflowName"], "total");
    let code: RunId = started["workflowRunId"].as_str().unwrap().parse().unwrap();

    let (status, started) = post(
        &http,
        format!("{shop}/workflows/convert-one/start"),
        json!({ "cents": "5" }),
    )
    .await;
    assert_eq!(status, 201, "{started}");
    let yaml: RunId = started["workflowRunId"].as_str().unwrap().parse().unwrap();

    assert_eq!(
        engine.handle(total, code).unwrap().result().await.unwrap(),
        9
    );
    assert_eq!(engine.wait(yaml).await.unwrap().status, RunStatus::Done);

    let (status, view) = get(&http, format!("{shop}/workflows/runs/{code}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            &view["status"],
            &view["result"],
            &view["scope"],
            &view["startedBy"]
        ),
        (
            &json!("DONE"),
            &json!(9),
            &json!("acme/shop"),
            &json!("tester")
        )
    );
    let (status, view) = get(&http, format!("{shop}/workflows/runs/{yaml}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        (&view["status"], &view["result"]),
        (&json!("DONE"), &json!(15))
    );

    // A code run belongs to the project it was started in, like a YAML run.
    let lab = format!("http://{addr}/brain/acme/project/lab");
    assert_eq!(
        get(&http, format!("{lab}/workflows/runs/{code}")).await.0,
        404
    );

    // A name that is neither a document nor a registered workflow is still unknown.
    let (status, body) = post(&http, format!("{shop}/workflows/nothing/start"), json!({})).await;
    assert_eq!(status, 404, "{body}");

    server.shutdown().await.unwrap();
}
