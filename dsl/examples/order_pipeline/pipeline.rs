//! The order pipeline's workflows and tasks: shared by the example's program (`main.rs`) and
//! by the replay test that checks them against journals of earlier runs
//! (`tests/tests/it/replay_exported.rs`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::future::join_all;
use magrathea::prelude::*;
use serde::{Deserialize, Serialize};

/// An order as the shop submits it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Order {
    pub(crate) id: String,
    pub(crate) customer: String,
    pub(crate) lines: Vec<Line>,
}

/// One line of an order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Line {
    pub(crate) sku: String,
    pub(crate) quantity: u32,
    pub(crate) unit_cents: u64,
}

/// What the payment provider returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Receipt {
    pub(crate) payment_id: String,
    pub(crate) amount_cents: u64,
    pub(crate) attempts: u32,
}

/// Stock held for one line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Reservation {
    pub(crate) sku: String,
    pub(crate) quantity: u32,
    pub(crate) warehouse: String,
}

/// What the shipping child workflow is asked to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ShipRequest {
    pub(crate) order_id: String,
    pub(crate) customer: String,
    pub(crate) parcels: u32,
}

/// A booked shipment.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Shipment {
    pub(crate) carrier: String,
    pub(crate) tracking: String,
}

/// The order workflow's output.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Summary {
    pub(crate) order_id: String,
    pub(crate) receipt: Receipt,
    pub(crate) reservations: Vec<Reservation>,
    pub(crate) approved_by: String,
    pub(crate) shipment: Shipment,
}

/// How many times `charge` has been called in this process.
pub(crate) static CHARGE_CALLS: AtomicU32 = AtomicU32::new(0);

/// Charges the order. The first two calls fail with a retryable error (a flaky provider); the
/// retry policy's third attempt succeeds.
#[task(retry(max_attempts = 3, backoff_ms = 50))]
pub(crate) async fn charge(ctx: TaskContext, input: Order) -> Result<Receipt, TaskError> {
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
pub(crate) async fn reserve(line: Line) -> Result<Reservation, TaskError> {
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
pub(crate) async fn book_courier(request: ShipRequest) -> Result<Shipment, TaskError> {
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
pub(crate) async fn ship(ctx: Context, request: ShipRequest) -> Result<Shipment, WorkflowError> {
    Ok(ctx.task(book_courier, request).await?)
}

/// Charges, reserves, waits out a cooling-off period, asks for approval and ships.
#[workflow]
pub(crate) async fn order(ctx: Context, input: Order) -> Result<Summary, WorkflowError> {
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

    // Runs started before the approval asked for details (and a deadline) replay the plain
    // gate they journaled; runs that reach it from now on get the detailed one.
    let title = format!("Ship order {}?", input.id);
    let gate = if ctx.patched("approval-details") {
        Gate::approval(&title)
            .body(format!(
                "{} lines for {}",
                input.lines.len(),
                input.customer
            ))
            .assigned_to("@ops")
            .timeout(Duration::from_secs(24 * 3600))
    } else {
        Gate::approval(&title)
    };
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

pub(crate) fn sample_order() -> Order {
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
