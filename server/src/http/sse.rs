//! `GET …/workflows/runs/{run_id}/events`: a run's journal as server-sent events.
//!
//! Each record is one event `record` with `id: <seq>` and the record as JSON data (the
//! shape of `GET …/journal`'s items). The stream starts with the records already journaled,
//! carries new ones as they commit, and ends after the terminal `StatusRecord`. The journal is
//! read by range as the client reads (see [`follow`](super::follow)); one token subject may
//! hold a bounded number of streams and subscriptions at once, beyond which a stream is
//! answered 429 `MAG-RD003`. A token revoked in the token file ends its streams.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::auth::{ApiScope, bearer};
use super::error::ApiError;
use super::follow::follow;
use super::runs::RunPath;
use super::state::AppState;

/// The SSE stream of a run of the project; 404 for a run of another scope.
pub(crate) async fn events(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let summary = state.scoped_summary(&scope, &p.run_id)?;
    let last = last_event_id(&headers)?;
    let from = super::follow::resume_after(&state.engine, summary.run_id, last, "Last-Event-ID")?;
    if from > 0
        && summary.status.is_terminal()
        && state
            .engine
            .journal_page(summary.run_id, from, 1, 1)
            .map_err(ApiError::from)?
            .is_empty()
    {
        // The client has every record of a run that ended: 204 tells an `EventSource` to
        // stop reconnecting.
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let slot = state.follower_slot(&p.tenant, &who)?;
    // A token revoked while the stream runs ends it, and so does the server's stop.
    let revoked = state.stream_end(bearer(&headers).map(str::to_owned), who);
    let stream = ReceiverStream::new(follow(state.engine.clone(), summary.run_id, from, slot)).map(
        |entry| {
            let event = Event::default()
                .event("record")
                .id(entry.seq.to_string())
                .json_data(&entry)
                .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()));
            Ok::<_, Infallible>(event)
        },
    );
    let stream = stream.take_until(revoked);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// The `Last-Event-ID` a reconnecting client sends: the seq of the last record it received.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| {
        ApiError::bad_request(
            "MAG-RD001",
            format!("Last-Event-ID `{text}` is not the seq of a record this stream sent"),
        )
    })
}
