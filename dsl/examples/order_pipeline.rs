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

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures::future::join_all;
use magrathea::prelude::*;
use serde::{Deserialize, Serialize};

/// An order as the shop submits it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Order {
    id: String,
    customer: String,
    lines: Vec<Line>,
}

/// One line of an order.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Line {
    sku: String,
    quantity: u32,
    unit_cents: u64,
}

/// What the payment provider returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Receipt {
    payment_id: String,
    amount_cents: u64,
    attempts: u32,
}

/// Stock held for one line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reservation {
    sku: String,
    quantity: u32,
    warehouse: String,
}

/// What the shipping child workflow is asked to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShipRequest {
    order_id: String,
    customer: String,
    parcels: u32,
}

/// A booked shipment.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shipment {
    carrier: String,
    tracking: String,
}

/// The order workflow's output.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    order_id: String,
    receipt: Receipt,
    reservations: Vec<Reservation>,
    approved_by: String,
    shipment: Shipment,
}

/// How many times `charge` has been called in this process.
static CHARGE_CALLS: AtomicU32 = AtomicU32::new(0);

/// Charges the order. The first two calls fail with a retryable error (a flaky provider); the
/// retry policy's third attempt succeeds.
#[task(retry(max_attempts = 3, backoff_ms = 50))]
async fn charge(ctx: TaskContext, input: Order) -> Result<Receipt, TaskError> {
    let call = CHARGE_CALLS.fetch_add(1, Ordering::SeqCst) + 1;
    if call <= 2 {
        eprintln!("charge: attempt {} failed, will retry", ctx.attempt);
        return Err(TaskError::retryable(format!(
            "payment provider unavailable on attempt {} of 3",
            ctx.attempt
        )));
    }
    eprintln!("charge: attempt {} succeeded", ctx.attempt);
    let amount_cents = input
        .lines
        .iter()
        .map(|l| u64::from(l.quantity) * l.unit_cents)
        .sum();
    Ok(Receipt {
        payment_id: format!("pay-{}", ctx.idempotency_key()),
        amount_cents,
        attempts: ctx.attempt,
    })
}

/// Holds stock for one order line.
#[task]
async fn reserve(line: Line) -> Result<Reservation, TaskError> {
    let warehouse = if line.sku.starts_with('B') {
        "berlin"
    } else {
        "lyon"
    };
    Ok(Reservation {
        sku: line.sku,
        quantity: line.quantity,
        warehouse: warehouse.into(),
    })
}

/// Books a courier.
#[task]
async fn book_courier(request: ShipRequest) -> Result<Shipment, TaskError> {
    Ok(Shipment {
        carrier: if request.parcels > 2 {
            "freight"
        } else {
            "parcel-post"
        }
        .into(),
        tracking: format!("TRK-{}-{}", request.order_id, request.parcels),
    })
}

/// Ships an order: a child workflow of `order`.
#[workflow]
async fn ship(ctx: Context, request: ShipRequest) -> Result<Shipment, WorkflowError> {
    Ok(ctx.task(book_courier, request).await?)
}

/// Charges, reserves, waits out a cooling-off period, asks for approval and ships.
#[workflow]
async fn order(ctx: Context, input: Order) -> Result<Summary, WorkflowError> {
    let receipt = ctx.task(charge, input.clone()).await?;

    let reservations = join_all(
        input
            .lines
            .iter()
            .map(|line| ctx.task(reserve, line.clone())),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;

    // A durable timer: a restart during the wait resumes it instead of starting over.
    ctx.sleep(Duration::from_millis(200)).await?;

    let gate = Gate::approval(&format!("Ship order {}?", input.id))
        .body(format!(
            "{} lines for {}",
            input.lines.len(),
            input.customer
        ))
        .assigned_to("@ops")
        .timeout(Duration::from_secs(24 * 3600));
    let approved_by = match ctx.approval(gate).await {
        Approval::Approved { by, .. } => by,
        Approval::Rejected { by, .. } => {
            return Err(WorkflowError::failed(format!("{by} rejected shipping")));
        }
        Approval::Undecided { .. } => return Err(WorkflowError::failed("nobody decided")),
        Approval::TimedOut => return Err(WorkflowError::failed("approval timed out")),
        Approval::Cancelled(reason) => return Err(WorkflowError::cancelled(reason)),
    };

    let request = ShipRequest {
        order_id: input.id.clone(),
        customer: input.customer.clone(),
        parcels: u32::try_from(input.lines.len()).unwrap_or(u32::MAX),
    };
    let shipment = ctx.child(ship, request).await?;

    Ok(Summary {
        order_id: input.id,
        receipt,
        reservations,
        approved_by,
        shipment,
    })
}

fn sample_order() -> Order {
    let line = |sku: &str, quantity, unit_cents| Line {
        sku: sku.into(),
        quantity,
        unit_cents,
    };
    Order {
        id: "A-1042".into(),
        customer: "arthur@example.com".into(),
        lines: vec![
            line("B-TOWEL", 1, 1999),
            line("L-GUIDE", 2, 4200),
            line("B-TEA", 3, 350),
        ],
    }
}

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
