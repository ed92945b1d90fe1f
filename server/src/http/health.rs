//! `GET /healthz`: whether the server can do its work, without authentication.
//!
//! 200 `{"status": "ok"}` while the journal accepts commits and answers reads. After a commit
//! failed (an I/O error such as a full disk), or while such an error keeps the store from
//! answering reads (its journal log may still take commits), 503 `{"status": "unhealthy",
//! "reason": "…"}`: runs cannot start or advance. While unhealthy, a health check probes the
//! store with an empty commit
//! (at most once per [`PROBE_INTERVAL`]; the store reopens itself first), so the server
//! reports itself healthy again as soon as the disk recovers, without waiting for traffic or
//! a restart. A supervisor that restarts unhealthy processes may do so; it is not needed. On a
//! store several workers share, a health check also reads the database (at most once per
//! [`PROBE_INTERVAL`]): a worker that has had nothing to commit is unhealthy as soon as its
//! database stops answering.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use magrathea_core::{Engine, JournalHealth};
use serde_json::json;

use super::state::AppState;

/// Least time between two probes of a failed store by health checks.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// How long a health check waits for the shared store's answer to a read.
pub const READ_WAIT: Duration = Duration::from_secs(2);

/// Rate-limits the store probes of health checks.
#[derive(Debug, Default)]
pub(crate) struct HealthProbe {
    last: Mutex<Option<Instant>>,
    /// On a store several workers share: the reads of the database.
    shared: Mutex<SharedReads>,
}

/// The health checks' reads of a shared store: the last one's end and outcome, and since when
/// one is under way (a database that stopped answering holds it; no second one starts).
#[derive(Debug, Default)]
struct SharedReads {
    last: Option<(Instant, Result<(), String>)>,
    under_way: Option<Instant>,
}

impl HealthProbe {
    /// On a store several workers share (PostgreSQL), whether the database answers a read
    /// within [`READ_WAIT`], asked at most once per [`PROBE_INTERVAL`] and by one read at a
    /// time: a worker that commits nothing for a while would otherwise report itself healthy
    /// with its database down. `Err(why)` when it does not answer.
    async fn read_shared(self: &Arc<Self>, engine: &Engine) -> Result<(), String> {
        if engine.lane_slots().is_none() {
            return Ok(());
        }
        let silent = || {
            Err(format!(
                "the database did not answer a read within {} s",
                READ_WAIT.as_secs()
            ))
        };
        let answered = {
            let mut reads = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(since) = reads.under_way {
                return if since.elapsed() >= READ_WAIT {
                    silent()
                } else {
                    reads.last.as_ref().map_or(Ok(()), |(_, r)| r.clone())
                };
            }
            if let Some((at, result)) = &reads.last
                && at.elapsed() < PROBE_INTERVAL
            {
                return result.clone();
            }
            reads.under_way = Some(Instant::now());
            let (tx, rx) = tokio::sync::oneshot::channel();
            let (probe, store) = (self.clone(), engine.store());
            // Left to end on its own when the database does not answer: the next checks see
            // it under way and start no other.
            tokio::task::spawn_blocking(move || {
                let result = store
                    .run_summary(magrathea_core::RunId::from_u128(0))
                    .map(|_| ())
                    .map_err(|e| e.to_string());
                let mut reads = probe.shared.lock().unwrap_or_else(PoisonError::into_inner);
                reads.under_way = None;
                reads.last = Some((Instant::now(), result.clone()));
                let _ = tx.send(result);
            });
            rx
        };
        match tokio::time::timeout(READ_WAIT, answered).await {
            Ok(Ok(result)) => result,
            _ => silent(),
        }
    }

    /// Probes the journal of `engine` unless a probe ran in the last [`PROBE_INTERVAL`].
    async fn probe(&self, engine: &Engine) {
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|t| t.elapsed() < PROBE_INTERVAL) {
                return;
            }
            *last = Some(Instant::now());
        }
        let engine = engine.clone();
        // A commit blocks on the disk: keep it off the request threads.
        let _ = tokio::task::spawn_blocking(move || engine.probe_journal()).await;
    }
}

/// 200 `{"status": "ok"}`, or 503 `{"status": "unhealthy", "reason": …}` after a failed commit.
pub(crate) async fn healthz(
    State(state): State<AppState>,
    Extension(probe): Extension<Arc<HealthProbe>>,
) -> Response {
    if state.engine.health() == JournalHealth::CommitFailed || state.engine.store().failing() {
        probe.probe(&state.engine).await;
    }
    if state.engine.health() == JournalHealth::Healthy && state.engine.store().failing() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "unhealthy",
                "reason": "the journal store cannot be read after an I/O error (a full disk; \
                           the server log has the details); runs cannot start or advance \
                           until it recovers",
            })),
        )
            .into_response();
    }
    match state.engine.health() {
        JournalHealth::Healthy => match probe.read_shared(&state.engine).await {
            Ok(()) => Json(json!({ "status": "ok" })).into_response(),
            Err(why) => {
                tracing::warn!(error = %why, "health check: the shared store does not answer");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Json(json!({
                        "status": "unhealthy",
                        "reason": "the shared store (the database) does not answer a read; \
                                   the server log has the details; runs cannot start or \
                                   advance until it does",
                    })),
                )
                    .into_response()
            }
        },
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "unhealthy",
                "reason": "the journal store failed to commit (an I/O error: a full disk, a \
                           database that cannot be reached; the server log has the details); \
                           runs cannot start or advance until it recovers",
            })),
        )
            .into_response(),
    }
}

/// An internal error while the store fails is the store's: 503 with `Retry-After`, saying
/// so, rather than a 500 that suggests a bug. The store fails when a commit failed (a full
/// disk; requests that read the store fail too while it is in that state: redb refuses it
/// until it is reopened, which the next health check or run recovery does), and, on a store
/// several workers share, when its database does not answer the health check's read (a
/// worker that has only read since the database went away has committed nothing).
pub(crate) async fn store_failures(
    State(state): State<AppState>,
    Extension(probe): Extension<Arc<HealthProbe>>,
    response: Response,
) -> Response {
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let failing = state.engine.health() == JournalHealth::CommitFailed
        || state.engine.store().failing()
        || probe.read_shared(&state.engine).await.is_err();
    if !failing {
        return response;
    }
    let mut answer = super::error::ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "MAG-HTTP-STORE-UNAVAILABLE",
        "the journal store is failing (an I/O error: a full disk, a database that cannot be \
         reached; the server log has the details); retry once GET /healthz answers 200",
    )
    .into_response();
    answer.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("5"),
    );
    answer
}
