//! An order pipeline on the embedded redb journal: a payment task that fails twice and succeeds
//! on its third attempt, three stock reservations run in parallel and joined, a durable
//! 200 ms sleep, an approval gate that this program answers itself, and a child workflow that
//! books the shipment.
//!
//! ```text
//! cargo run -p magrathea --example order_pipeline              # journal in a fresh temp dir
//! cargo run -p magrathea --example order_pipeline -- orders.redb   # journal at a path
//! ```
//!
//! Progress goes to stderr; stdout gets one JSON object:
//! `{"workflowRunId":"…","status":"DONE","result":{…}}`. The program exits non-zero unless the
//! run ends `DONE`.

mod pipeline;

use std::time::Duration;

use anyhow::{Context as _, bail};
use magrathea::prelude::*;
use pipeline::{order, sample_order, ship};
use serde::Serialize;

/// What the program prints: the run's id, status and result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    workflow_run_id: RunId,
    status: RunStatus,
    result: Option<serde_json::Value>,
}

async fn run(path: std::path::PathBuf) -> anyhow::Result<Outcome> {
    eprintln!("journal: {}", path.display());
    // Tasks need no registration: each call carries its task's body.
    let engine = Engine::builder()
        .path(&path)
        .workflow(order)
        .workflow(ship)
        .build()
        .await
        .context("opening the journal")?;

    let run = engine.start(order, sample_order()).await?;
    eprintln!("started run {}", run.id());

    // The run stops at the approval gate: answer its inbox item as a person would.
    let settled = run.wait_settled().await?;
    if settled.status != RunStatus::Waiting {
        bail!(
            "run {} settled as {} instead of waiting for approval: {}",
            run.id(),
            settled.status,
            settled.reason.unwrap_or_default()
        );
    }
    let item = engine
        .inbox(InboxFilter::Pending)?
        .into_iter()
        .find(|i| i.workflow_run_id == run.id())
        .context("the waiting run has no pending inbox item")?;
    eprintln!("inbox: {} ({})", item.title, item.id);
    engine
        .answer_gate(&item.id, GateAnswer::approve().by("ops@example.com"))
        .await?;

    let summary = run.result().await?;
    eprintln!(
        "shipped {} via {} ({})",
        summary.order_id, summary.shipment.carrier, summary.shipment.tracking
    );

    let view = run.run()?;
    if view.status != RunStatus::Done {
        bail!("run {} ended {}", run.id(), view.status);
    }
    Ok(Outcome {
        workflow_run_id: view.workflow_run_id,
        status: view.status,
        result: view.result,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Keep the temp dir alive until the engine is done with it.
    let (_dir, path) = match std::env::args_os().nth(1) {
        Some(p) => (None, p.into()),
        None => {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("journal.redb");
            (Some(dir), path)
        }
    };
    let out = tokio::time::timeout(Duration::from_secs(60), run(path))
        .await
        .context("the order pipeline did not finish within 60 s")??;
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}
