//! `GET /v1/workflow-events` as a WebSocket (Friday §7's realtime events over the second
//! transport): the same events of the token's tenant as the route's server-sent events, for
//! clients that speak WebSocket. A request with `Upgrade: websocket` gets this session; the
//! token comes in the `Authorization` header or, for clients that cannot set headers on a
//! WebSocket, as `?token=`; `?project=` keeps one project's events. Messages are JSON
//! `{type, data}`:
//!
//! | server → client | when |
//! |---|---|
//! | `{type: "workflow-event", data: <event JSON>}` | each event (`data.event` names it), as it is durable |
//! | `{type: "lagged", data: {missed}}` | the session fell more than 1,024 events behind |
//! | `{type: "pong"}` | the client sent `{type: "ping"}` |
//! | `{type: "error", data: {code, message}}` | the client sent anything else |
//!
//! The session holds one of its token subject's live followers, as an SSE stream does.

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::follow::FollowerSlot;
use super::state::{AppState, StreamEnd};
use crate::triggers::HubEvent;

/// Which events a session or stream passes on: the token's tenant's (all, for a token of
/// every tenant), of one project when asked.
#[derive(Debug, Clone)]
pub(crate) struct EventFilter {
    /// The token's tenant; `None` for a token of every tenant.
    pub(crate) tenant: Option<String>,
    /// `?project=`.
    pub(crate) project: Option<String>,
}

impl EventFilter {
    /// Whether `event` passes.
    pub(crate) fn passes(&self, event: &HubEvent) -> bool {
        self.tenant.as_deref().is_none_or(|t| t == event.tenant)
            && self.project.as_deref().is_none_or(|p| p == event.project)
    }
}

/// Upgrades to a session that sends the events `filter` passes.
/// The session ends when `revoked` resolves (its token was revoked, or the server stops), with
/// a close frame that says which ([`end_frame`]).
pub(crate) fn serve(
    upgrade: WebSocketUpgrade,
    state: AppState,
    filter: EventFilter,
    slot: FollowerSlot,
    revoked: Revoked,
) -> Response {
    // The client sends pings at most: its messages get the request body's limit.
    upgrade
        .max_message_size(super::BODY_LIMIT)
        .max_frame_size(super::BODY_LIMIT)
        .on_upgrade(move |socket| session(state, filter, slot, socket, revoked))
}

/// What resolves when a stream must end: the token it was opened with no longer stands, or
/// the server stops.
pub(crate) type Revoked = std::pin::Pin<Box<dyn std::future::Future<Output = StreamEnd> + Send>>;

/// The close frame of a session that ends for `why`: 1008 (policy) when its token was revoked,
/// so that a client asks for another; 1001 (going away) when the server stops, so that a
/// client reconnects as it would after any restart.
/// What a binary WebSocket message is answered with (`MAG-HTTP-INVALID-JSON`), on a project's
/// socket and on the tenant's event stream alike.
pub(crate) const BINARY_REFUSED: &str =
    "invalid message: a binary message; send each message as JSON in a text message";

pub(crate) fn end_frame(why: StreamEnd) -> axum::extract::ws::CloseFrame {
    use axum::extract::ws::{CloseFrame, close_code};
    match why {
        StreamEnd::Revoked => CloseFrame {
            code: close_code::POLICY,
            reason: "the token was revoked".into(),
        },
        StreamEnd::Stopping => CloseFrame {
            code: close_code::AWAY,
            reason: "the server is stopping".into(),
        },
    }
}

async fn session(
    state: AppState,
    filter: EventFilter,
    slot: FollowerSlot,
    socket: WebSocket,
    mut revoked: Revoked,
) {
    let _slot = slot;
    let mut events = state.triggers.subscribe_events();
    let (mut sink, mut incoming) = socket.split();
    loop {
        let message: Value = tokio::select! {
            why = &mut revoked => {
                let _ = sink.send(Message::Close(Some(end_frame(why)))).await;
                return;
            }
            received = incoming.next() => match received {
                Some(Ok(Message::Text(text))) => match serde_json::from_str::<Value>(&text) {
                    Ok(m) if m["type"] == "ping" => json!({ "type": "pong" }),
                    Ok(_) => json!({ "type": "error", "data": {
                        "code": "MAG-HTTP-WS-TYPE",
                        "message": "this stream takes only {\"type\": \"ping\"}",
                    } }),
                    Err(e) => json!({ "type": "error", "data": {
                        "code": "MAG-HTTP-INVALID-JSON",
                        "message": format!("invalid message: {}", super::body::plain(&e)),
                    } }),
                },
                // Messages are JSON text; a binary one is answered, as on a project's socket.
                Some(Ok(Message::Binary(_))) => json!({ "type": "error", "data": {
                    "code": "MAG-HTTP-INVALID-JSON",
                    "message": BINARY_REFUSED,
                } }),
                // Pings and pongs of the protocol are answered by the WebSocket layer.
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
            },
            received = events.recv() => match received {
                Ok(event) if filter.passes(&event) => {
                    json!({ "type": "workflow-event", "data": event.body })
                }
                Ok(_) => continue,
                Err(RecvError::Lagged(missed)) => {
                    json!({ "type": "lagged", "data": { "missed": missed } })
                }
                Err(RecvError::Closed) => return,
            },
        };
        if sink
            .send(Message::Text(message.to_string().into()))
            .await
            .is_err()
        {
            return;
        }
    }
}
