//! One server for code and YAML: an application builds its engine with a `#[workflow]`, a
//! `#[task]` and the data the task needs, serves it together with a YAML project over the
//! HTTP API, and starts a run of each kind over HTTP. The YAML workflow calls the `#[task]`
//! as a `tool_task`.
//!
//! ```text
//! cargo run -p magrathea --example code_and_yaml_server
//! ```
//!
//! Progress goes to stderr; stdout gets one JSON object holding both runs as the API returns
//! them: `{"code":{…,"status":"DONE",…},"yaml":{…,"status":"DONE",…}}`. The program exits
//! non-zero unless both runs end `DONE`.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use magrathea::prelude::*;
// In an application: `magrathea = { features = ["server"] }` and `magrathea::server::Server`
// (this example, inside the repository, names the crate itself).
use magrathea_server::Server;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The application's price list, handed to tasks with `EngineBuilder::data`.
struct PriceList(HashMap<String, u64>);

/// What `price` is asked: by code with a typed value, by YAML with the state's `params:`.
#[derive(Debug, Serialize, Deserialize)]
struct PriceQuery {
    sku: String,
}

/// Looks up the unit price of a SKU, in cents.
#[task(retry = "none")]
async fn price(ctx: TaskContext, query: PriceQuery) -> Result<u64, TaskError> {
    let prices = ctx
        .data::<PriceList>()
        .ok_or_else(|| TaskError::terminal("no price list"))?;
    prices
        .0
        .get(&query.sku)
        .copied()
        .ok_or_else(|| TaskError::terminal(format!("unknown SKU `{}`", query.sku)))
}

/// One line of an order.
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    sku: String,
    quantity: u64,
}

/// Prices an order: the code workflow.
#[workflow]
async fn order_total(ctx: Context, lines: Vec<Line>) -> Result<u64, WorkflowError> {
    let mut total = 0;
    for line in lines {
        total += line.quantity * ctx.task(price, PriceQuery { sku: line.sku }).await?;
    }
    Ok(total)
}

/// The YAML workflow: prices one SKU with the `#[task]`, as a tool.
const QUOTE: &str = r#"
parameters:
  sku: { type: string, required: true }
allowedTools: [price]
start: lookup
states:
  lookup:
    type: tool_task
    tool: price
    params:
      sku: "${params.sku}"
    storeAs: cents
    on:
      success: done
  done:
    type: terminal
    result:
      sku: "${params.sku}"
      cents: "${state.cents}"
"#;

const TOKEN: &str = "example-token";

/// A document tree with tenant `acme`, project `shop`, the YAML workflow and one token.
fn project(root: &Path) -> anyhow::Result<()> {
    let workflows = root.join("acme/shop/_vance/workflows");
    std::fs::create_dir_all(&workflows)?;
    std::fs::write(workflows.join("quote.yaml"), QUOTE)?;
    std::fs::create_dir_all(root.join("_auth"))?;
    std::fs::write(
        root.join("_auth/tokens.yaml"),
        format!(
            "tokens:\n  - token: {TOKEN}\n    tenant: acme\n    subject: example\n    \
             scopes: [workflow.read, workflow.run]\n"
        ),
    )?;
    Ok(())
}

/// Starts workflow `name` of acme/shop over HTTP; returns the new run's id.
async fn start(
    http: &reqwest::Client,
    base: &str,
    name: &str,
    params: Value,
) -> anyhow::Result<RunId> {
    let reply = http
        .post(format!("{base}/workflows/{name}/start"))
        .bearer_auth(TOKEN)
        .json(&json!({ "params": params }))
        .send()
        .await?;
    let status = reply.status();
    let body: Value = reply.json().await?;
    ensure!(
        status.is_success(),
        "starting `{name}` answered {status}: {body}"
    );
    let id = body["workflowRunId"]
        .as_str()
        .context("the start reply names no run")?;
    Ok(id.parse()?)
}

/// The run as the API shows it.
async fn fetch(http: &reqwest::Client, base: &str, run: RunId) -> anyhow::Result<Value> {
    let reply = http
        .get(format!("{base}/workflows/runs/{run}"))
        .bearer_auth(TOKEN)
        .send()
        .await?;
    ensure!(
        reply.status().is_success(),
        "reading run {run}: {}",
        reply.status()
    );
    Ok(reply.json().await?)
}

async fn run(root: &Path) -> anyhow::Result<Value> {
    project(root)?;
    let prices = PriceList(HashMap::from([
        ("B-TOWEL".into(), 1999),
        ("L-GUIDE".into(), 4200),
    ]));
    let builder = Engine::builder()
        .path(root.join("journal.redb"))
        .data(prices)
        .workflow(order_total)
        // Exposes `price` to YAML by name; the code workflow would not need it.
        .task(price);
    let (addr, server) = Server::new(builder.into_core(), root)
        .addr("127.0.0.1:0".parse()?)
        .serve()
        .await?;
    eprintln!("serving on http://{addr}");
    let engine = Engine::from_core(server.engine().clone());

    let http = reqwest::Client::new();
    let base = format!("http://{addr}/brain/acme/project/shop");
    let lines = json!([{ "sku": "B-TOWEL", "quantity": 1 }, { "sku": "L-GUIDE", "quantity": 2 }]);
    let code = start(&http, &base, "order_total", lines).await?;
    let yaml = start(&http, &base, "quote", json!({ "sku": "L-GUIDE" })).await?;
    eprintln!("started code run {code} and YAML run {yaml}");

    // The typed handle waits for the code run's output; the YAML run is waited for untyped.
    let total = engine.handle(order_total, code)?.result().await?;
    eprintln!("order total: {total} cents");
    let quote = engine.wait(yaml).await?;
    if quote.status != RunStatus::Done {
        bail!(
            "the YAML run ended {}: {}",
            quote.status,
            quote.reason.unwrap_or_default()
        );
    }

    let out = json!({
        "code": fetch(&http, &base, code).await?,
        "yaml": fetch(&http, &base, yaml).await?,
    });
    server.shutdown().await?;
    Ok(out)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let out = tokio::time::timeout(Duration::from_secs(60), run(dir.path()))
        .await
        .context("the example did not finish within 60 s")??;
    for kind in ["code", "yaml"] {
        ensure!(
            out[kind]["status"] == "DONE",
            "the {kind} run did not end DONE: {out}"
        );
    }
    println!("{out}");
    Ok(())
}
