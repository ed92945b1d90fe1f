//! The lease side of [`PgStore`] (see [`Leases`]): claims, reclaims, the heartbeat, release
//! and the mailbox, on the tables of `migrations/0002_leases.sql` (lane slots: [`crate::lanes`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use magrathea_core::store::{Claim, LaneSlot, Leases, Mail};
use magrathea_core::{RunId, StoreError};
use serde_json::Value;
use uuid::Uuid;

use crate::store::{Held, Inner, PgStore, pg, run_id, uuid};

/// A released lease is kept, held by nobody (`owner` empty) and expired: the next claim takes
/// it at a higher epoch, so a fencing epoch is never given twice for a run (a worker that froze
/// holding an old one stays fenced), and the reclaims after lost leases that the row counts
/// survive a clean stop in between (a task that kills its workers is still stopped at
/// `max_claim_attempts`). Taking over a released lease is an adoption, not a reclaim.
///
/// Neither is taking over a lease that lapsed across a restart of the database: one whose last
/// renewal (`renewed_at`) came before the server's start (`pg_postmaster_start_time()`). No
/// worker could renew a lease while the database was down, and the count is meant for tasks
/// that take their workers down, not for a database's maintenance; such a task takes its
/// worker down again, and that counts.
const RELEASE_RUNS: &str = "UPDATE magrathea_leases SET owner = '', expires_at = '-infinity'
                            WHERE run_id = ANY($1) AND owner = $2";

/// [`RELEASE_RUNS`] for every lease of a worker.
const RELEASE_ALL: &str = "UPDATE magrathea_leases SET owner = '', expires_at = '-infinity'
                           WHERE owner = $1";

impl Leases for PgStore {
    fn worker(&self) -> &str {
        &self.inner.worker
    }

    fn claim(&self, run: RunId) -> Result<Claim, StoreError> {
        if self.inner.leaving.load(Ordering::SeqCst) {
            // This worker released its leases to leave: the others take its runs.
            return Ok(Claim::Elsewhere);
        }
        if self
            .inner
            .abandoned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&run)
        {
            // Given up while the database did not answer; released before it is taken again.
            return Ok(Claim::Elsewhere);
        }
        let id = uuid(run);
        let worker = self.inner.worker.clone();
        let grace = self.inner.options.lease_grace.as_secs_f64();
        let claimed = self.with_client(move |client| async move {
            let active: Option<bool> = client
                .query_opt(
                    "SELECT active FROM magrathea_runs WHERE run_id = $1",
                    &[&id],
                )
                .await
                .map_err(pg)?
                .map(|row| row.get(0));
            if active != Some(true) {
                // An ended (or unknown) run has no lease: whoever delivers to it answers.
                return Ok(Some((None, 0)));
            }
            // Granted when nobody holds it, this worker does, or the holder's lease expired;
            // a claim from another worker raises the epoch, one after an expiry counts.
            let row = client
                .query_opt(
                    "INSERT INTO magrathea_leases AS l (run_id, owner, epoch, expires_at)
                     VALUES ($1, $2, 1, now() + make_interval(secs => $3))
                     ON CONFLICT (run_id) DO UPDATE SET
                         owner = EXCLUDED.owner,
                         epoch = l.epoch + CASE WHEN l.owner = EXCLUDED.owner THEN 0 ELSE 1 END,
                         expires_at = EXCLUDED.expires_at,
                         renewed_at = now(),
                         reclaims = l.reclaims
                             + CASE WHEN l.owner <> EXCLUDED.owner AND l.owner <> ''
                                 AND l.renewed_at >= pg_postmaster_start_time()
                               THEN 1 ELSE 0 END
                     WHERE l.owner = EXCLUDED.owner OR l.expires_at < now()
                     RETURNING epoch, reclaims",
                    &[&id, &worker, &grace],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|row| (Some(row.get::<_, i64>(0)), row.get::<_, i32>(1))))
        })?;
        Ok(match claimed {
            None => Claim::Elsewhere,
            Some((epoch, reclaims)) => {
                if epoch.is_some() {
                    self.hold(run, epoch);
                }
                Claim::Granted {
                    reclaims: u32::try_from(reclaims).unwrap_or(0),
                }
            }
        })
    }

    fn claim_claimable(&self) -> Result<Vec<(RunId, u32)>, StoreError> {
        let worker = self.inner.worker.clone();
        let grace = self.inner.options.lease_grace.as_secs_f64();
        // One statement, so both of its parts see one snapshot: the update cannot take again
        // a lease the insert makes (two statements, whose order on the wire is not fixed,
        // could each return the same run). The leases this worker may take over (its own,
        // and expired ones) are updated as `claim` would, skipping those a commit holds
        // locked, as the heartbeat and `reclaim_expired` do: those go to the reclaim loop, and
        // this never waits on a commit that waits on it. The runs without a lease get one; a
        // worker racing for the same run gets it or not, never both. Neither part touches the
        // leases other workers hold alive.
        let rows = self.with_client(move |client| async move {
            client
                .query(
                    "WITH taken_over AS (
                         UPDATE magrathea_leases l SET owner = $1,
                             epoch = l.epoch + CASE WHEN l.owner = $1 THEN 0 ELSE 1 END,
                             expires_at = now() + make_interval(secs => $2),
                             renewed_at = now(),
                             reclaims = l.reclaims
                                 + CASE WHEN l.owner = $1 OR l.owner = ''
                                     OR l.renewed_at < pg_postmaster_start_time()
                                   THEN 0 ELSE 1 END
                         WHERE l.run_id IN (
                             SELECT o.run_id FROM magrathea_leases o
                             JOIN magrathea_runs r ON r.run_id = o.run_id
                             WHERE r.active AND (o.owner = $1 OR o.expires_at < now())
                             FOR UPDATE OF o SKIP LOCKED)
                         RETURNING l.run_id, l.epoch, l.reclaims),
                     unleased AS (
                         INSERT INTO magrathea_leases (run_id, owner, epoch, expires_at)
                         SELECT r.run_id, $1, 1, now() + make_interval(secs => $2)
                         FROM magrathea_runs r
                         WHERE r.active AND NOT EXISTS
                             (SELECT 1 FROM magrathea_leases l WHERE l.run_id = r.run_id)
                         ORDER BY r.run_id
                         ON CONFLICT (run_id) DO NOTHING
                         RETURNING run_id, epoch, reclaims)
                     SELECT run_id, epoch, reclaims FROM taken_over
                     UNION ALL SELECT run_id, epoch, reclaims FROM unleased",
                    &[&worker, &grace],
                )
                .await
                .map_err(pg)
        })?;
        Ok(rows
            .iter()
            .map(|row| {
                let run = run_id(row.get(0));
                self.hold(run, Some(row.get::<_, i64>(1)));
                (run, u32::try_from(row.get::<_, i32>(2)).unwrap_or(0))
            })
            .collect())
    }

    fn reclaim_expired(&self, limit: usize) -> Result<Vec<(RunId, u32)>, StoreError> {
        if self.inner.leaving.load(Ordering::SeqCst) {
            return Ok(Vec::new());
        }
        let worker = self.inner.worker.clone();
        let grace = self.inner.options.lease_grace.as_secs_f64();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.with_client(move |client| async move {
            let mut rows = client
                .query(
                    "UPDATE magrathea_leases l SET owner = $1, epoch = l.epoch + 1,
                         expires_at = now() + make_interval(secs => $2),
                         renewed_at = now(),
                         reclaims = l.reclaims
                             + CASE WHEN l.owner = '' OR l.renewed_at < pg_postmaster_start_time()
                               THEN 0 ELSE 1 END
                     WHERE l.run_id IN (
                         SELECT run_id FROM magrathea_leases
                         WHERE expires_at < now() AND owner <> $1
                         ORDER BY expires_at LIMIT $3 FOR UPDATE SKIP LOCKED)
                     RETURNING l.run_id, l.epoch, l.reclaims",
                    &[&worker, &grace, &limit],
                )
                .await
                .map_err(pg)?;
            // Runs left without a lease by workers that left: adopted, not reclaimed.
            rows.extend(
                client
                    .query(
                        "INSERT INTO magrathea_leases (run_id, owner, epoch, expires_at)
                         SELECT r.run_id, $1, 1, now() + make_interval(secs => $2)
                         FROM magrathea_runs r
                         WHERE r.active AND NOT EXISTS
                             (SELECT 1 FROM magrathea_leases l WHERE l.run_id = r.run_id)
                         LIMIT $3
                         ON CONFLICT (run_id) DO NOTHING
                         RETURNING run_id, epoch, reclaims",
                        &[&worker, &grace, &limit],
                    )
                    .await
                    .map_err(pg)?,
            );
            Ok(rows
                .iter()
                .map(|r| (run_id(r.get(0)), r.get::<_, i64>(1), r.get::<_, i32>(2)))
                .collect::<Vec<_>>())
        })?;
        Ok(rows
            .into_iter()
            .map(|(run, epoch, reclaims)| {
                self.hold(run, Some(epoch));
                (run, u32::try_from(reclaims).unwrap_or(0))
            })
            .collect())
    }

    fn take_lost(&self) -> Vec<RunId> {
        std::mem::take(
            &mut *self
                .inner
                .lost
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    fn release(&self, runs: &[RunId]) -> Result<(), StoreError> {
        if runs.is_empty() {
            return Ok(());
        }
        {
            let mut held = self
                .inner
                .held
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for run in runs {
                held.remove(run);
            }
        }
        let ids: Vec<Uuid> = runs.iter().map(|r| uuid(*r)).collect();
        let worker = self.inner.worker.clone();
        self.with_client(move |client| async move {
            client
                .execute(RELEASE_RUNS, &[&ids, &worker])
                .await
                .map_err(pg)?;
            Ok(())
        })
    }

    fn release_all(&self) -> Result<(), StoreError> {
        release_all(self)
    }

    fn max_claim_attempts(&self) -> u32 {
        self.inner.options.max_claim_attempts
    }

    fn post(&self, run: RunId, body: Value) -> Result<i64, StoreError> {
        let id = uuid(run);
        self.with_client(move |client| async move {
            let row = client
                .query_one(
                    "INSERT INTO magrathea_mailbox (run_id, body) VALUES ($1, $2) RETURNING id",
                    &[&id, &body],
                )
                .await
                .map_err(pg)?;
            Ok(row.get(0))
        })
    }

    fn take_mail(&self, limit: usize) -> Result<Vec<Mail>, StoreError> {
        let worker = self.inner.worker.clone();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_client(move |client| async move {
            let rows = client
                .query(
                    "UPDATE magrathea_mailbox m SET taken = true
                     WHERE m.id IN (
                         SELECT m2.id FROM magrathea_mailbox m2
                         JOIN magrathea_leases l ON l.run_id = m2.run_id
                         WHERE NOT m2.taken AND l.owner = $1
                         ORDER BY m2.id LIMIT $2 FOR UPDATE OF m2 SKIP LOCKED)
                     RETURNING m.id, m.run_id, m.body",
                    &[&worker, &limit],
                )
                .await
                .map_err(pg)?;
            let mut mail: Vec<Mail> = rows
                .iter()
                .map(|r| Mail {
                    id: r.get(0),
                    run: run_id(r.get(1)),
                    body: r.get(2),
                })
                .collect();
            mail.sort_by_key(|m| m.id);
            Ok(mail)
        })
    }

    fn reply(&self, id: i64, reply: Value) -> Result<(), StoreError> {
        self.with_client(move |client| async move {
            client
                .execute(
                    "UPDATE magrathea_mailbox SET reply = $2 WHERE id = $1",
                    &[&id, &reply],
                )
                .await
                .map_err(pg)?;
            Ok(())
        })
    }

    fn acquire_slot(&self, lane: &str, width: u32) -> Result<Option<LaneSlot>, StoreError> {
        crate::lanes::acquire(self, lane, width)
    }

    fn release_slot(&self, slot: &LaneSlot) -> Result<(), StoreError> {
        crate::lanes::release(self, slot)
    }

    fn withdraw(&self, id: i64) -> Result<bool, StoreError> {
        self.with_client(move |client| async move {
            let withdrawn = client
                .execute(
                    "DELETE FROM magrathea_mailbox WHERE id = $1 AND NOT taken",
                    &[&id],
                )
                .await
                .map_err(pg)?;
            Ok(withdrawn == 1)
        })
    }

    fn take_reply(&self, id: i64) -> Result<Option<Value>, StoreError> {
        self.with_client(move |client| async move {
            let row = client
                .query_opt(
                    "DELETE FROM magrathea_mailbox WHERE id = $1 AND reply IS NOT NULL
                     RETURNING reply",
                    &[&id],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|r| r.get(0)))
        })
    }
}

impl PgStore {
    fn hold(&self, run: RunId, epoch: Option<i64>) {
        self.inner
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run, Held::now(epoch));
    }
}

/// Renews this worker's leases every heartbeat; a held run whose lease is not renewed (another
/// worker took it) is lost. Ends when the store is dropped.
///
/// A beat runs beside the loop, not in it: when the database stops answering (a network cut
/// leaves the connections open and silent) the beat waits, and the loop goes on judging the
/// leases by the clock. A lease no beat renewed for nearly its grace may have expired and been
/// reclaimed elsewhere, so the worker gives it up: the run is reported lost (its driver stops,
/// which stops its running tasks) and its appends are fenced from then on. The lease itself is
/// released, if it is still this worker's at that epoch, by the first beat that reaches the
/// database again (until then the run is not claimed again here), so any worker, this one
/// included, can take the run over instead of this worker renewing a lease nobody drives.
pub(crate) async fn heartbeat(inner: Weak<Inner>) {
    let mut beating: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        let period = match inner.upgrade() {
            Some(i) => i
                .options
                .heartbeat
                .unwrap_or(i.options.lease_grace / 10)
                .max(Duration::from_millis(10)),
            None => return,
        };
        tokio::time::sleep(period).await;
        let Some(inner) = inner.upgrade() else { return };
        if beating
            .as_ref()
            .is_none_or(tokio::task::JoinHandle::is_finished)
        {
            let beater = Arc::clone(&inner);
            beating = Some(tokio::spawn(async move {
                if let Err(e) = beat(&beater).await {
                    tracing::warn!(error = %e, "lease heartbeat failed");
                }
            }));
        }
        abandon_unrenewed(&inner);
    }
}

/// Gives up the held leases that no beat renewed for the grace less a tenth of it (the tenth
/// covers the round trip of the claim that made a lease: it is timed from its answer).
fn abandon_unrenewed(inner: &Inner) {
    let grace = inner.options.lease_grace;
    let renewed_at = *inner
        .renewed_at
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let now = std::time::Instant::now();
    let mut held = inner.held.lock().unwrap_or_else(PoisonError::into_inner);
    let stale: Vec<(RunId, i64)> = held
        .iter()
        .filter_map(|(run, held)| {
            let epoch = held.epoch?;
            let since = held.since.max(renewed_at);
            (now.saturating_duration_since(since) + grace / 10 >= grace).then_some((*run, epoch))
        })
        .collect();
    if stale.is_empty() {
        return;
    }
    for (run, _) in &stale {
        held.remove(run);
    }
    drop(held);
    tracing::warn!(
        runs = stale.len(),
        "no heartbeat reached the database within the lease grace; gave up the leases"
    );
    inner
        .abandoned
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(stale.iter().copied());
    inner
        .lost
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(stale.into_iter().map(|(run, _)| run));
}

async fn beat(inner: &Arc<Inner>) -> Result<(), StoreError> {
    let client = inner.pool.get().await.map_err(pg)?;
    let read_at = std::time::Instant::now();
    let grace = inner.options.lease_grace.as_secs_f64();
    release_abandoned(inner, &client).await?;
    // Rows a commit of this worker holds locked are skipped (renewed next time): waiting for
    // them could deadlock with that commit, which may delete an ended run's lease.
    client
        .execute(
            "UPDATE magrathea_leases
             SET expires_at = now() + make_interval(secs => $2), renewed_at = now()
             WHERE run_id IN (SELECT run_id FROM magrathea_leases WHERE owner = $1
                              FOR UPDATE SKIP LOCKED)",
            &[&inner.worker, &grace],
        )
        .await
        .map_err(pg)?;
    crate::lanes::renew(&client, &inner.worker, grace, &inner.unreleased_slots).await?;
    let rows = client
        .query(
            "SELECT run_id, epoch FROM magrathea_leases WHERE owner = $1",
            &[&inner.worker],
        )
        .await
        .map_err(pg)?;
    let renewed: std::collections::HashMap<RunId, i64> =
        rows.iter().map(|r| (run_id(r.get(0)), r.get(1))).collect();
    let mut held = inner.held.lock().unwrap_or_else(PoisonError::into_inner);
    let lost: Vec<RunId> = held
        .iter()
        .filter(|(run, held)| match held.epoch {
            Some(e) => held.since < read_at && renewed.get(run) != Some(&e),
            None => false,
        })
        .map(|(run, _)| *run)
        .collect();
    for run in &lost {
        held.remove(run);
    }
    drop(held);
    {
        let mut renewed_at = inner
            .renewed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *renewed_at = (*renewed_at).max(read_at);
    }
    if !lost.is_empty() {
        inner
            .lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(lost);
    }
    Ok(())
}

/// Releases the leases this worker gave up (see [`heartbeat`]) that are still its own at the
/// epoch it held them at; a lease another worker took meanwhile is left alone.
async fn release_abandoned(
    inner: &Inner,
    client: &deadpool_postgres::Client,
) -> Result<(), StoreError> {
    let abandoned: Vec<(RunId, i64)> = inner
        .abandoned
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|(run, epoch)| (*run, *epoch))
        .collect();
    if abandoned.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = abandoned.iter().map(|(run, _)| uuid(*run)).collect();
    let epochs: Vec<i64> = abandoned.iter().map(|(_, epoch)| *epoch).collect();
    client
        .execute(
            "UPDATE magrathea_leases l SET owner = '', expires_at = '-infinity'
             FROM unnest($2::uuid[], $3::bigint[]) AS a(run_id, epoch)
             WHERE l.run_id = a.run_id AND l.epoch = a.epoch AND l.owner = $1",
            &[&inner.worker, &ids, &epochs],
        )
        .await
        .map_err(pg)?;
    let mut left = inner
        .abandoned
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    for (run, epoch) in abandoned {
        if left.get(&run) == Some(&epoch) {
            left.remove(&run);
        }
    }
    Ok(())
}

/// Gives up every lease this worker holds: it is leaving, and claims nothing more.
pub(crate) fn release_all(store: &PgStore) -> Result<(), StoreError> {
    store.inner.leaving.store(true, Ordering::SeqCst);
    store
        .inner
        .held
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
    let worker = store.inner.worker.clone();
    store.with_client(move |client| async move {
        client.execute(RELEASE_ALL, &[&worker]).await.map_err(pg)?;
        crate::lanes::release_all(&client, &worker).await
    })?;
    store
        .inner
        .abandoned
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
    Ok(())
}
