//! `GET …/workflows/runs/{run_id}/events`: a run's journal as server-sent events.
//!
//! Each record is one event `record` with `id: <seq>` and the record as JSON data (the
//! shape of `GET …/journal`'s items). The stream starts with the records already journaled,
//! carries new ones as they commit, and ends after the terminal `StatusRecord`. The journal is
//! read by range as the client reads (see [`follow`](super::follow)); one token subject may
//! hold a bounded number of streams and subscriptions at once, beyond which a stream is
//! answered 429 `MAG-RD003`.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use futures::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::auth::ApiScope;
use super::error::ApiError;
use super::follow::follow;
use super::runs::RunPath;
use super::state::AppState;

/// The SSE stream of a run of the project; 404 for a run of another scope.
pub(crate) async fn events(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let summary = state.scoped_summary(&scope, &p.run_id)?;
    let slot = state.follower_slot(&p.tenant, &who)?;
    let stream =
        ReceiverStream::new(follow(state.engine.clone(), summary.run_id, slot)).map(|entry| {
            let event = Event::default()
                .event("record")
                .id(entry.seq.to_string())
                .json_data(&entry)
                .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()));
            Ok(event)
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
