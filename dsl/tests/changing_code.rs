//! The worked example of `docs/changing-code.md`, as the page writes it: the order workflow
//! before and after its patches. A run parked at the approval by the old code finishes on the
//! new code without the fraud check it never had and with the invoice it reaches live; a new
//! run takes both new steps.

use std::sync::atomic::{AtomicU32, Ordering};

use magrathea::prelude::*;
use serde::{Deserialize, Serialize};

/// An order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Order {
    /// Its id.
    pub id: String,
}

/// What a charge gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// The order charged.
    pub charged: String,
}

static FRAUD_CHECKS: AtomicU32 = AtomicU32::new(0);
static INVOICES: AtomicU32 = AtomicU32::new(0);

#[task]
async fn charge(o: Order) -> Result<Receipt, TaskError> {
    Ok(Receipt { charged: o.id })
}

#[task]
async fn ship(_o: Order) -> Result<(), TaskError> {
    Ok(())
}

#[task]
async fn fraud_check(_o: Order) -> Result<(), TaskError> {
    FRAUD_CHECKS.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

#[task]
async fn invoice(_o: Order) -> Result<(), TaskError> {
    INVOICES.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

/// Before the change, as the page shows it.
mod before {
    use super::*;

    #[workflow]
    pub async fn order(ctx: Context, o: Order) -> Result<Receipt, WorkflowError> {
        let receipt = ctx.task(charge, o.clone()).await?;
        if !matches!(
            ctx.approval(format!("Ship order {}?", o.id)).await,
            Approval::Approved { .. }
        ) {
            return Err(WorkflowError::failed("not approved"));
        }
        ctx.task(ship, o).await?;
        Ok(receipt)
    }
}

/// After the change, with its two patches, as the page shows it.
mod after {
    use super::*;

    #[workflow]
    pub async fn order(ctx: Context, o: Order) -> Result<Receipt, WorkflowError> {
        if ctx.patched("fraud-check") {
            ctx.task(fraud_check, o.clone()).await?;
        }
        let receipt = ctx.task(charge, o.clone()).await?;
        if !matches!(
            ctx.approval(format!("Ship order {}?", o.id)).await,
            Approval::Approved { .. }
        ) {
            return Err(WorkflowError::failed("not approved"));
        }
        ctx.task(ship, o.clone()).await?;
        if ctx.patched("invoice") {
            ctx.task(invoice, o).await?;
        }
        Ok(receipt)
    }
}

async fn approve_all(engine: &Engine) {
    for item in engine.inbox(InboxFilter::Pending).unwrap() {
        engine
            .answer_gate(&item.id, GateAnswer::approve().by("ann"))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_parked_run_finishes_on_the_patched_code_and_a_new_run_takes_both_patches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let parked = {
        let engine = Engine::builder()
            .path(&path)
            .workflow(before::order)
            .build()
            .await
            .unwrap();
        let run = engine
            .start(before::order, Order { id: "A-1".into() })
            .await
            .unwrap();
        run.wait_settled().await.unwrap();
        assert_eq!(run.status().unwrap(), RunStatus::Waiting);
        run.id()
    };

    let engine = Engine::builder()
        .path(&path)
        .workflow(after::order)
        .build()
        .await
        .unwrap();
    let fresh = engine
        .start(after::order, Order { id: "B-2".into() })
        .await
        .unwrap();
    fresh.wait_settled().await.unwrap();
    approve_all(&engine).await;
    let parked = engine.handle(after::order, parked).unwrap();
    assert_eq!(
        parked.result().await.unwrap(),
        Receipt {
            charged: "A-1".into()
        }
    );
    assert_eq!(
        fresh.result().await.unwrap(),
        Receipt {
            charged: "B-2".into()
        }
    );
    // The fraud check ran for the new run only; both runs sent their invoice.
    assert_eq!(FRAUD_CHECKS.load(Ordering::SeqCst), 1);
    assert_eq!(INVOICES.load(Ordering::SeqCst), 2);
}
