//! Lane slots (see [`Leases::acquire_slot`](magrathea_core::store::Leases::acquire_slot)) on
//! the table of `migrations/0003_lanes.sql`: a slot is taken with `FOR UPDATE SKIP LOCKED`,
//! so workers asking at once take different slots or none, never the same one.

use magrathea_core::StoreError;
use magrathea_core::store::LaneSlot;
use uuid::Uuid;

use crate::store::{PgStore, pg};

/// Takes a free slot of `lane` below `width` for this worker, making the lane's slots first
/// if they do not exist yet.
pub(crate) fn acquire(
    store: &PgStore,
    lane: &str,
    width: u32,
) -> Result<Option<LaneSlot>, StoreError> {
    let width = i32::try_from(width.max(1)).unwrap_or(i32::MAX);
    let lane = lane.to_owned();
    let worker = store.inner.worker.clone();
    let grace = store.inner.options.lease_grace.as_secs_f64();
    let token = Uuid::new_v4();
    store.with_client(move |client| async move {
        let take = client
            .prepare_cached(
                "UPDATE magrathea_lane_slots l
                 SET holder = $3, token = $4, expires_at = now() + make_interval(secs => $5)
                 WHERE (l.lane, l.slot) = (
                     SELECT lane, slot FROM magrathea_lane_slots
                     WHERE lane = $1 AND slot < $2
                       AND (holder IS NULL OR expires_at < now())
                     ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED)
                 RETURNING l.slot",
            )
            .await
            .map_err(pg)?;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
            [&lane, &width, &worker, &token, &grace];
        let mut row = client.query_opt(&take, &params).await.map_err(pg)?;
        if row.is_none() {
            // The lane's slots may not exist yet (first use, or a wider lane than before).
            let made = client
                .execute(
                    "INSERT INTO magrathea_lane_slots (lane, slot)
                     SELECT $1, s FROM generate_series(0, $2 - 1) s
                     ON CONFLICT DO NOTHING",
                    &[&lane, &width],
                )
                .await
                .map_err(pg)?;
            if made > 0 {
                row = client.query_opt(&take, &params).await.map_err(pg)?;
            }
        }
        Ok(row.map(|row| LaneSlot {
            lane,
            slot: u32::try_from(row.get::<_, i32>(0)).unwrap_or(0),
            token: token.simple().to_string(),
        }))
    })
}

/// Frees `slot` if it still carries its acquisition's token.
pub(crate) fn release(store: &PgStore, slot: &LaneSlot) -> Result<(), StoreError> {
    let Ok(token) = Uuid::parse_str(&slot.token) else {
        // Not a token this store gave out: it holds no slot.
        return Ok(());
    };
    let key = SlotKey {
        lane: slot.lane.clone(),
        slot: i32::try_from(slot.slot).unwrap_or(i32::MAX),
        token,
    };
    let pending = key.clone();
    let result = store.with_client(move |client| async move { key.release(&client).await });
    if result.is_err() {
        // The step has ended: the slot must come free even though the database did not
        // answer now. The heartbeat releases it once it reaches the database again, and
        // until then does not renew it (renewed, it would stay held while this worker lives).
        store
            .inner
            .unreleased_slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(pending);
    }
    result
}

/// A slot this worker was given, by its lane, number and token.
#[derive(Debug, Clone)]
pub(crate) struct SlotKey {
    lane: String,
    slot: i32,
    token: Uuid,
}

impl SlotKey {
    /// Frees the slot, if it is still held by this token.
    async fn release(&self, client: &tokio_postgres::Client) -> Result<(), StoreError> {
        client
            .execute(
                "UPDATE magrathea_lane_slots SET holder = NULL, token = NULL, expires_at = NULL
                 WHERE lane = $1 AND slot = $2 AND token = $3",
                &[&self.lane, &self.slot, &self.token],
            )
            .await
            .map_err(pg)?;
        Ok(())
    }
}

/// Renews the slots `worker` holds (part of its heartbeat), after releasing those whose
/// release the database did not answer (`unreleased`): a slot whose step has ended is never
/// renewed.
pub(crate) async fn renew(
    client: &tokio_postgres::Client,
    worker: &str,
    grace: f64,
    unreleased: &std::sync::Mutex<Vec<SlotKey>>,
) -> Result<(), StoreError> {
    let pending = std::mem::take(
        &mut *unreleased
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let mut left = Vec::new();
    let mut failed = None;
    for key in pending {
        if failed.is_none()
            && let Err(e) = key.release(client).await
        {
            failed = Some(e);
        }
        if failed.is_some() {
            left.push(key);
        }
    }
    let skipped: Vec<Uuid> = left.iter().map(|k| k.token).collect();
    unreleased
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .extend(left);
    if let Some(e) = failed {
        return Err(e);
    }
    client
        .execute(
            "UPDATE magrathea_lane_slots SET expires_at = now() + make_interval(secs => $2)
             WHERE holder = $1 AND NOT (token = ANY($3))",
            &[&worker, &grace, &skipped],
        )
        .await
        .map_err(pg)?;
    Ok(())
}

/// Frees every slot `worker` holds (it is leaving).
pub(crate) async fn release_all(
    client: &tokio_postgres::Client,
    worker: &str,
) -> Result<(), StoreError> {
    client
        .execute(
            "UPDATE magrathea_lane_slots SET holder = NULL, token = NULL, expires_at = NULL
             WHERE holder = $1",
            &[&worker],
        )
        .await
        .map_err(pg)?;
    Ok(())
}
