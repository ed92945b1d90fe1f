//! `GET /v1/workflow-events`: the token's tenant's internal events as server-sent events
//! (Friday §7's realtime events): `workflow.run.started|completed|failed|cancelled` and
//! `workflow.approval.requested|approved|rejected|expired`, each an SSE event named after it
//! whose data is the event's JSON (see `docs/hooks.md`). `?project=` keeps one project's.
//!
//! Events are read from the journal as it commits, so none is announced before it is durable;
//! the stream carries what happens while it is open (no history). A follower that falls more
//! than 1,024 events behind gets an event `lagged` with `{missed}` and goes on. One token
//! subject holds a bounded number of live followers (429 `MAG-RD003` past it), as for runs'
//! streams. A request that asks to upgrade gets the same events over a WebSocket
//! ([`live_socket`]).

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequestParts, Query, Request, State};
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;

use super::auth::{ApiScope, Principal, bearer};
use super::error::ApiError;
use super::live_socket::{self, EventFilter};
use super::state::AppState;

/// Query of `GET /v1/workflow-events`.
#[derive(Debug, Deserialize)]
pub(crate) struct EventsQuery {
    /// Only this project's events.
    project: Option<String>,
    /// The token, for a WebSocket client that cannot set headers (never for SSE).
    token: Option<String>,
}

/// The stream: server-sent events, or a WebSocket session for a request that asks to
/// upgrade (see [`live_socket`]).
pub(crate) async fn stream(
    State(state): State<AppState>,
    Query(q): Query<EventsQuery>,
    request: Request,
) -> Result<Response, ApiError> {
    let (mut parts, _) = request.into_parts();
    let websocket = wants_websocket(&parts.headers);
    // A browser's WebSocket cannot set headers: only there may the token come in the query.
    let token = bearer(&parts.headers)
        .or(q.token.as_deref().filter(|_| websocket))
        .map(str::to_owned);
    let who = reader(&state, token.as_deref())?;
    let filter = EventFilter {
        tenant: who.tenant.clone(),
        project: q.project,
    };
    let upgrade = if websocket {
        let upgrade = WebSocketUpgrade::from_request_parts(&mut parts, &state).await;
        Some(upgrade.map_err(|e| ApiError::new(e.status(), "MAG-HTTP-WS", e.body_text()))?)
    } else {
        None
    };
    let slot = state.follower_slot(filter.tenant.as_deref().unwrap_or("*"), &who)?;
    // A token revoked while the stream runs ends it, and so does the server's stop.
    let revoked = Box::pin(state.stream_end(token, who));
    if let Some(upgrade) = upgrade {
        return Ok(live_socket::serve(upgrade, state, filter, slot, revoked));
    }
    let mut events = state.triggers.subscribe_events();
    let stream = async_stream(move |tx| async move {
        let _slot = slot;
        let mut revoked = revoked;
        loop {
            // The client's going ends the task (and gives its slot back) at once, not at the
            // next event it would have been sent: on a quiet tenant, or with a filter that
            // lets nothing through, that may be never.
            let received = tokio::select! {
                r = events.recv() => r,
                () = tx.closed() => return,
                _ = &mut revoked => return,
            };
            let event = match received {
                Ok(e) => e,
                Err(RecvError::Lagged(n)) => {
                    let lagged = Event::default()
                        .event("lagged")
                        .data(format!("{{\"missed\":{n}}}"));
                    if tx.send(Ok(lagged)).await.is_err() {
                        return;
                    }
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            if !filter.passes(&event) {
                continue;
            }
            let sse = Event::default()
                .event(event.name)
                .json_data(&event.body)
                .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()));
            if tx.send(Ok(sse)).await.is_err() {
                return;
            }
        }
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// Whether the request asks to become a WebSocket.
fn wants_websocket(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// The caller, with `workflow.read`.
fn reader(state: &AppState, token: Option<&str>) -> Result<Principal, ApiError> {
    let who = state.auth.authenticate(token)?;
    who.require(ApiScope::Read)?;
    Ok(who)
}

/// A stream fed by a task through a small channel (the task ends when the client goes).
fn async_stream<F, Fut>(f: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Event, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(f(tx));
    tokio_stream::wrappers::ReceiverStream::new(rx)
}
