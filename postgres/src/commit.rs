//! A group commit on PostgreSQL: one transaction for every batch the journal writer hands
//! over, fenced by this worker's leases.
//!
//! 1. The leases of the runs the batches append to are read `FOR SHARE` (a reclaim, which
//!    updates them, waits for this commit, and this commit for a reclaim that came first). A
//!    batch with records of a run whose lease this worker no longer holds at the epoch it
//!    claimed is refused ([`StoreError::Fenced`]); so is one for a run it never claimed. A run
//!    whose first record (its start) is in the batch is new, and gets its lease here.
//! 2. Idempotency keys go in with `ON CONFLICT DO NOTHING`; a start whose key another worker
//!    took first is refused ([`StoreError::KeyTaken`]).
//! 3. The accepted batches' records, run summaries and new leases go in as multi-row inserts
//!    (`UNNEST` of arrays), pipelined on the connection; the leases of runs that ended go.
//!
//! A commit without idempotency keys whose runs this worker holds (the common one: a run's
//! next steps) takes one round trip less: the fence read goes out in the same pipeline as the
//! inserts, and the transaction commits only if every lease is still this worker's at the epoch
//! it claimed. Otherwise it is rolled back and made again the checked way above, which refuses
//! the fenced batches and keeps the others. The order of the two in the transaction does not
//! matter: a reclaim waits for the share lock, or the read sees its update and nothing commits.

use std::collections::{HashMap, HashSet};

use magrathea_core::store::{CommitBatch, Refusal};
use magrathea_core::{RunId, StoreError};
use uuid::Uuid;

use crate::store::{Held, PgStore, pg, seq, uuid};

/// One commit's rows, as the arrays its statements take.
#[derive(Default)]
struct Rows {
    record_runs: Vec<Uuid>,
    record_seqs: Vec<i64>,
    record_bytes: Vec<Vec<u8>>,
    summary_runs: Vec<Uuid>,
    workflows: Vec<String>,
    scopes: Vec<String>,
    active: Vec<bool>,
    summaries: Vec<Vec<u8>>,
    new_runs: Vec<Uuid>,
    ended_runs: Vec<Uuid>,
}

impl Rows {
    fn of(batches: &[&CommitBatch]) -> Result<Self, StoreError> {
        let mut rows = Rows::default();
        for r in batches.iter().flat_map(|b| &b.records) {
            rows.record_runs.push(uuid(r.run_id));
            rows.record_seqs.push(seq(r.seq)?);
            rows.record_bytes.push(r.bytes.clone());
            if r.seq == 0 {
                rows.new_runs.push(uuid(r.run_id));
            }
        }
        // One row per run: an upsert may not touch a row twice, and the last summary of a
        // run in the commit is its newest.
        let mut summaries = HashMap::new();
        for s in batches.iter().flat_map(|b| &b.summaries) {
            summaries.insert(s.run_id, s);
        }
        for s in summaries.into_values() {
            rows.summary_runs.push(uuid(s.run_id));
            rows.workflows.push(s.workflow_name.clone());
            rows.scopes.push(s.scope.as_str().to_owned());
            rows.active.push(!s.status.is_terminal());
            if s.status.is_terminal() {
                rows.ended_runs.push(uuid(s.run_id));
            }
            rows.summaries
                .push(serde_json::to_vec(s).map_err(|e| StoreError::io(e.to_string()))?);
        }
        Ok(rows)
    }
}

/// The runs a batch appends to that must be fenced: all but those it starts.
fn fenced_runs(batch: &CommitBatch) -> HashSet<RunId> {
    let started: HashSet<RunId> = batch
        .records
        .iter()
        .filter(|r| r.seq == 0)
        .map(|r| r.run_id)
        .collect();
    batch
        .records
        .iter()
        .map(|r| r.run_id)
        .filter(|run| !started.contains(run))
        .collect()
}

/// What a batch of this commit needs checked: its index, its fenced runs with the epochs this
/// worker claimed them at (`None`: an ended run, which has no lease; missing: never claimed).
struct Check {
    fences: Vec<(RunId, Option<Option<i64>>)>,
    keys: Vec<(String, RunId)>,
}

pub(crate) fn commit(
    store: &PgStore,
    batches: &[&CommitBatch],
) -> Result<Vec<Refusal>, StoreError> {
    if batches.iter().all(|b| b.is_empty()) {
        // A probe: one round trip tells whether the database answers.
        return store.with_client(|client| async move {
            client.simple_query("SELECT 1").await.map_err(pg)?;
            Ok(Vec::new())
        });
    }
    let checks: Vec<Check> = {
        let held = store
            .inner
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        batches
            .iter()
            .map(|b| Check {
                fences: fenced_runs(b)
                    .into_iter()
                    .map(|run| (run, held.get(&run).map(|h| h.epoch)))
                    .collect(),
                keys: b.idempotency_keys.clone(),
            })
            .collect()
    };
    let owned: Vec<CommitBatch> = batches.iter().map(|b| (*b).clone()).collect();
    let inner = store.inner.clone();
    let grace = inner.options.lease_grace.as_secs_f64();
    let worker = inner.worker.clone();
    let (refused, new_runs, ended) = store.with_client(move |mut client| async move {
        if let Some(done) = pipelined(&mut client, &checks, &owned, &worker, grace).await? {
            return Ok(done);
        }
        checked(&mut client, &checks, &owned, &worker, grace).await
    })?;
    let mut held = inner
        .held
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for run in new_runs {
        held.insert(run, Held::now(Some(1)));
    }
    for run in ended {
        held.remove(&run);
    }
    let fenced: Vec<RunId> = refused
        .iter()
        .filter_map(|r| match r.error {
            StoreError::Fenced(run) => Some(run),
            _ => None,
        })
        .collect();
    for run in &fenced {
        held.remove(run);
    }
    drop(held);
    if !fenced.is_empty() {
        inner
            .lost
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(fenced);
    }
    Ok(refused)
}

/// What a commit did: the refused batches, the runs it started and those that ended.
type Committed = (Vec<Refusal>, Vec<RunId>, Vec<RunId>);

/// The fence read: this worker's leases among `$1`, locked until the commit.
const FENCE: &str = "SELECT run_id, epoch FROM magrathea_leases
                     WHERE run_id = ANY($1) AND owner = $2 FOR SHARE";

/// The runs of `checks` whose leases this worker claimed at an epoch, to read under the fence.
fn runs_to_check(checks: &[Check]) -> Vec<Uuid> {
    checks
        .iter()
        .flat_map(|c| &c.fences)
        .filter(|(_, epoch)| matches!(epoch, Some(Some(_))))
        .map(|(run, _)| uuid(*run))
        .collect()
}

/// This worker's current lease epochs from the fence read's rows.
fn epochs(rows: &[tokio_postgres::Row]) -> HashMap<RunId, i64> {
    rows.iter()
        .map(|row| (crate::store::run_id(row.get(0)), row.get(1)))
        .collect()
}

/// The first run of `check` whose lease this worker does not hold at the epoch it claimed.
fn lost_run(check: &Check, current: &HashMap<RunId, i64>) -> Option<RunId> {
    check
        .fences
        .iter()
        .find(|(run, epoch)| match epoch {
            Some(Some(e)) => current.get(run) != Some(e),
            Some(None) => false,
            None => true,
        })
        .map(|(run, _)| *run)
}

/// The runs `rows` start and end.
fn started_and_ended(rows: &Rows) -> (Vec<RunId>, Vec<RunId>) {
    let ids = |v: &[Uuid]| v.iter().map(|u| crate::store::run_id(*u)).collect();
    (ids(&rows.new_runs), ids(&rows.ended_runs))
}

/// The commit in one pipeline (see the module documentation), when it has no idempotency keys
/// and every fenced run was claimed by this worker; `None` when it must be made the checked
/// way (nothing of it was written).
async fn pipelined(
    client: &mut deadpool_postgres::Object,
    checks: &[Check],
    owned: &[CommitBatch],
    worker: &str,
    grace: f64,
) -> Result<Option<Committed>, StoreError> {
    let eligible = checks
        .iter()
        .all(|c| c.keys.is_empty() && c.fences.iter().all(|(_, epoch)| epoch.is_some()));
    if !eligible {
        return Ok(None);
    }
    let to_check = runs_to_check(checks);
    let all: Vec<&CommitBatch> = owned.iter().collect();
    let rows = Rows::of(&all)?;
    let tx = client.transaction().await.map_err(pg)?;
    let fence = async {
        if to_check.is_empty() {
            return Ok(Vec::new());
        }
        let statement = tx.prepare_cached(FENCE).await?;
        tx.query(&statement, &[&to_check, &worker]).await
    };
    let (fenced, written) = futures::join!(fence, write(&tx, &rows, worker, grace));
    // A lost lease, or a statement that failed (a fenced run's records can collide with its
    // new owner's): dropping the transaction rolls it back, and the checked way refuses what
    // it must (or fails with the error again).
    let Ok(fenced) = fenced else {
        return Ok(None);
    };
    let current = epochs(&fenced);
    if written.is_err() || checks.iter().any(|c| lost_run(c, &current).is_some()) {
        return Ok(None);
    }
    tx.commit().await.map_err(pg)?;
    let (new_runs, ended) = started_and_ended(&rows);
    Ok(Some((Vec::new(), new_runs, ended)))
}

/// The commit checked step by step (see the module documentation).
async fn checked(
    client: &mut deadpool_postgres::Object,
    checks: &[Check],
    owned: &[CommitBatch],
    worker: &str,
    grace: f64,
) -> Result<Committed, StoreError> {
    let tx = client.transaction().await.map_err(pg)?;
    // 1. Fences.
    let to_check = runs_to_check(checks);
    let current = if to_check.is_empty() {
        HashMap::new()
    } else {
        let statement = tx.prepare_cached(FENCE).await.map_err(pg)?;
        epochs(
            &tx.query(&statement, &[&to_check, &worker])
                .await
                .map_err(pg)?,
        )
    };
    let mut refused: Vec<Refusal> = checks
        .iter()
        .enumerate()
        .filter_map(|(i, check)| {
            lost_run(check, &current).map(|run| Refusal {
                batch: i,
                error: StoreError::Fenced(run),
            })
        })
        .collect();
    // 2. Idempotency keys of the batches still in.
    let mut key_names = Vec::new();
    let mut key_runs = Vec::new();
    for (i, check) in checks.iter().enumerate() {
        if refused.iter().any(|r| r.batch == i) {
            continue;
        }
        for (key, run) in &check.keys {
            key_names.push(key.clone());
            key_runs.push(uuid(*run));
        }
    }
    if !key_names.is_empty() {
        tx.execute(
            "INSERT INTO magrathea_idempotency_keys (key, run_id)
                 SELECT * FROM UNNEST($1::text[], $2::uuid[]) ON CONFLICT (key) DO NOTHING",
            &[&key_names, &key_runs],
        )
        .await
        .map_err(pg)?;
        let rows = tx
            .query(
                "SELECT key, run_id FROM magrathea_idempotency_keys WHERE key = ANY($1)",
                &[&key_names],
            )
            .await
            .map_err(pg)?;
        let owner_of: HashMap<String, Uuid> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let mut mine_to_drop = Vec::new();
        for (i, check) in checks.iter().enumerate() {
            if refused.iter().any(|r| r.batch == i) {
                continue;
            }
            let taken = check
                .keys
                .iter()
                .find_map(|(key, run)| match owner_of.get(key) {
                    Some(owner) if *owner != uuid(*run) => Some(crate::store::run_id(*owner)),
                    _ => None,
                });
            if let Some(existing) = taken {
                refused.push(Refusal {
                    batch: i,
                    error: StoreError::KeyTaken(existing),
                });
                // Its other keys, if it had any, must not point at a run never written.
                for (key, run) in &check.keys {
                    if owner_of.get(key) == Some(&uuid(*run)) {
                        mine_to_drop.push(key.clone());
                    }
                }
            }
        }
        if !mine_to_drop.is_empty() {
            tx.execute(
                "DELETE FROM magrathea_idempotency_keys WHERE key = ANY($1)",
                &[&mine_to_drop],
            )
            .await
            .map_err(pg)?;
        }
    }
    // 3. The accepted batches.
    let accepted: Vec<&CommitBatch> = owned
        .iter()
        .enumerate()
        .filter(|(i, _)| !refused.iter().any(|r| r.batch == *i))
        .map(|(_, b)| b)
        .collect();
    let rows = Rows::of(&accepted)?;
    write(&tx, &rows, worker, grace).await?;
    tx.commit().await.map_err(pg)?;
    let (new_runs, ended) = started_and_ended(&rows);
    Ok((refused, new_runs, ended))
}

/// The rows of the accepted batches, pipelined on the transaction's connection.
async fn write(
    tx: &deadpool_postgres::Transaction<'_>,
    rows: &Rows,
    worker: &str,
    grace: f64,
) -> Result<(), StoreError> {
    let records = async {
        if rows.record_runs.is_empty() {
            return Ok(0);
        }
        let statement = tx
            .prepare_cached(
                "INSERT INTO magrathea_journal (run_id, seq, bytes)
                 SELECT * FROM UNNEST($1::uuid[], $2::int8[], $3::bytea[])",
            )
            .await?;
        tx.execute(
            &statement,
            &[&rows.record_runs, &rows.record_seqs, &rows.record_bytes],
        )
        .await
    };
    let summaries = async {
        if rows.summary_runs.is_empty() {
            return Ok(0);
        }
        let statement = tx
            .prepare_cached(
                "INSERT INTO magrathea_runs (run_id, workflow, scope, active, summary)
                 SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::bool[],
                                      $5::bytea[])
                 ON CONFLICT (run_id) DO UPDATE SET workflow = EXCLUDED.workflow,
                     scope = EXCLUDED.scope, active = EXCLUDED.active,
                     summary = EXCLUDED.summary",
            )
            .await?;
        tx.execute(
            &statement,
            &[
                &rows.summary_runs,
                &rows.workflows,
                &rows.scopes,
                &rows.active,
                &rows.summaries,
            ],
        )
        .await
    };
    let new_leases = async {
        if rows.new_runs.is_empty() {
            return Ok(0);
        }
        tx.execute(
            "INSERT INTO magrathea_leases (run_id, owner, epoch, expires_at)
             SELECT r, $2, 1, now() + make_interval(secs => $3) FROM UNNEST($1::uuid[]) r
             ON CONFLICT (run_id) DO NOTHING",
            &[&rows.new_runs, &worker, &grace],
        )
        .await
    };
    let ended = async {
        if rows.ended_runs.is_empty() {
            return Ok(0);
        }
        tx.execute(
            "DELETE FROM magrathea_leases WHERE run_id = ANY($1)",
            &[&rows.ended_runs],
        )
        .await
    };
    futures::try_join!(records, summaries, new_leases, ended).map_err(pg)?;
    Ok(())
}
