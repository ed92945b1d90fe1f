//! The WebSocket session (reference §8.3): `GET /brain/{tenant}/project/{project}/ws`.
//!
//! The token comes in the `Authorization` header or as `?token=`; connecting needs
//! `workflow.read` or `workflow.run`, starting runs `workflow.run` (as the HTTP start does),
//! subscribing to runs or events `workflow.read`. Messages are JSON `{type, data}`:
//!
//! | client → server | server → client |
//! |---|---|
//! | `{type: "workflow-start", data: {name, params?, startedBy?}}` | `{type: "workflow-start", data: {workflowRunId, workflowName}}` |
//! | `{type: "subscribe", data: {workflowRunId, lastEventId?}}` | `{type: "run-event", workflowRunId, data: <journal record>}` per record (existing ones first; with `lastEventId`, those after that seq), then `{type: "run-end", data: {workflowRunId}}` after the terminal one |
//! | `{type: "subscribe-events"}` | `{type: "workflow-event", data: <event JSON>}` for each internal event of the project's runs (`workflow.run.*`, `workflow.approval.*`; `data.event` names it), as long as the connection lasts |
//! | `{type: "ping"}` | `{type: "pong"}` |
//!
//! A session follows a run once, and its project's events once (subscribing again while it does
//! is `MAG-HTTP-WS-SUBSCRIBED`).
//! A connection holds at most [`ServeConfig::max_subscriptions_per_connection`] subscriptions
//! that have not ended (one more is answered `MAG-RD004`), and a token subject at most
//! [`ServeConfig::max_followers_per_subject`] followers across SSE and WebSocket (`MAG-RD003`)
//! and as many sessions (one more is refused with 429 `MAG-RD005` before the upgrade). A
//! session with no subscription that sends no message for the connections' idle timeout is
//! closed (1001): a WebSocket is no HTTP connection that timeout would close otherwise.
//!
//! [`ServeConfig::max_subscriptions_per_connection`]: crate::ServeConfig::max_subscriptions_per_connection
//! [`ServeConfig::max_followers_per_subject`]: crate::ServeConfig::max_followers_per_subject
//!
//! A request that fails is answered `{type: "error", data: {request, code, message}}` with the
//! codes of the REST routes (e.g. `MAG-HTTP-404` for a run of another project).
//!
//! A message the WebSocket layer cannot take ends the session with a close frame that says
//! why: 1007 for a text message that is not UTF-8, 1009 for one over the request body's limit
//! (1 MiB), 1002 for a frame that breaks the protocol.
//!
//! A started run's `startedBy` is the token's subject; a `startedBy` in the message is
//! recorded as its `requestedBy`.

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use magrathea_yaml::Scope;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::auth::{ApiScope, Principal, bearer};
use super::error::ApiError;
use super::follow::follow;
use super::runs::Started;
use super::state::AppState;

/// `{tenant}` and `{project}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ProjectPath {
    tenant: String,
    project: String,
}

/// `?token=`, for clients that cannot set headers on a WebSocket.
#[derive(Debug, Deserialize)]
pub(crate) struct TokenQuery {
    token: Option<String>,
}

/// Upgrades to a session of the project.
pub(crate) async fn connect(
    State(state): State<AppState>,
    Path(p): Path<ProjectPath>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let token = bearer(&headers).or(q.token.as_deref()).map(str::to_owned);
    let token = token.as_deref();
    // A session takes either scope: each message checks its own (`workflow-start` needs
    // `workflow.run`, as the HTTP start does; following runs and events `workflow.read`).
    let who = match state.auth.authorize(token, &p.tenant, ApiScope::Run) {
        Ok(who) => who,
        Err(_) => state.auth.authorize(token, &p.tenant, ApiScope::Read)?,
    };
    let scope = state.scope(&p.tenant, &p.project)?;
    let slot = state
        .followers
        .acquire_session(&p.tenant, &who.subject)
        .ok_or_else(|| {
            let max = state.followers.max_per_subject();
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "MAG-RD005",
                format!(
                    "[MAG-RD005] `{}` already holds {max} WebSocket sessions, the most one \
                     subject may; close one first",
                    who.subject
                ),
            )
        })?;
    // A token revoked while the session runs ends it, and so does the server's stop.
    let revoked: super::live_socket::Revoked =
        Box::pin(state.stream_end(token.map(str::to_owned), who.clone()));
    // A message is a request: it gets the request body's limit, not the WebSocket
    // library's 64 MiB.
    Ok(upgrade
        .max_message_size(super::BODY_LIMIT)
        .max_frame_size(super::BODY_LIMIT)
        .on_upgrade(move |socket| async move {
            session(state, scope, who, socket, revoked).await;
            drop(slot);
        }))
}

#[derive(Debug, Deserialize)]
struct ClientMessage {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: Value,
}

/// `workflow-start` data: what the HTTP start takes (`params`, `draft`, `startedBy`), with
/// the workflow's `name` and the `Idempotency-Key` header as `idempotencyKey`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartData {
    name: String,
    #[serde(default)]
    params: Value,
    started_by: Option<String>,
    #[serde(default)]
    draft: bool,
    idempotency_key: Option<String>,
}

/// `subscribe` data: the run, and the seq of the last of its records the client holds (a
/// client subscribing again after a lost connection), as an SSE stream's `Last-Event-ID`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SubscribeData {
    workflow_run_id: String,
    last_event_id: Option<u64>,
}

async fn session(
    state: AppState,
    scope: Scope,
    who: Principal,
    socket: WebSocket,
    mut revoked: super::live_socket::Revoked,
) {
    let (mut sink, mut incoming) = socket.split();
    let (out, mut outgoing) = mpsc::channel::<Value>(256);
    let writer = tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            if sink
                .send(Message::Text(message.to_string().into()))
                .await
                .is_err()
            {
                break;
            }
        }
        sink
    });
    let mut subscriptions: Subscriptions = Vec::new();
    let mut close = None;
    let idle = state.followers.idle();
    loop {
        // A session that follows nothing must say something within the idle timeout (a
        // `ping` will do), as an idle HTTP connection must send its next request.
        subscriptions.retain(|(_, s)| !s.is_finished());
        let following = !subscriptions.is_empty();
        // While following, the wait also ends when the last subscription does (its run ended):
        // from then on the session follows nothing, and the idle timeout counts.
        let ended = futures::future::join_all(subscriptions.iter_mut().map(|(_, s)| s));
        let wait = async {
            if following {
                tokio::select! {
                    next = incoming.next() => Ok(Some(next)),
                    _ = ended => Ok(None),
                }
            } else {
                tokio::time::timeout(idle, incoming.next()).await.map(Some)
            }
        };
        let next = tokio::select! {
            why = &mut revoked => {
                close = Some(super::live_socket::end_frame(why));
                break;
            }
            next = wait => match next {
                Ok(Some(next)) => next,
                Ok(None) => continue,
                Err(_) => {
                    close = Some(CloseFrame {
                        code: close_code::AWAY,
                        reason: format!(
                            "no message and no subscription for {} s: the session was idle",
                            idle.as_secs()
                        )
                        .into(),
                    });
                    break;
                }
            },
        };
        let message = match next {
            None => break,
            Some(Ok(message)) => message,
            Some(Err(e)) => {
                close = close_frame(e);
                break;
            }
        };
        let text = match message {
            Message::Text(t) => t,
            Message::Close(_) => break,
            // Messages are JSON text; a binary one is answered, not dropped unseen.
            Message::Binary(_) => {
                let refused = error(
                    "",
                    &ApiError::bad_request(
                        "MAG-HTTP-INVALID-JSON",
                        super::live_socket::BINARY_REFUSED,
                    ),
                );
                if out.send(refused).await.is_err() {
                    break;
                }
                continue;
            }
            // Pings and pongs are the WebSocket layer's.
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        let reply = match serde_json::from_str::<ClientMessage>(&text) {
            Ok(m) => handle(&state, &scope, &who, m, &out, &mut subscriptions).await,
            Err(e) => Some(error(
                "",
                &ApiError::bad_request(
                    "MAG-HTTP-INVALID-JSON",
                    format!("invalid message: {}", super::body::plain(&e)),
                ),
            )),
        };
        if let Some(reply) = reply
            && out.send(reply).await.is_err()
        {
            break;
        }
    }
    for (_, s) in subscriptions {
        s.abort();
    }
    drop(out);
    if let Ok(mut sink) = writer.await
        && let Some(frame) = close
    {
        // The peer may be gone already: nothing more to do then.
        let _ = sink.send(Message::Close(Some(frame))).await;
    }
}

/// The close frame that tells the client why its message ended the session (RFC 6455 §7.4.1):
/// 1007 for a text message that is not UTF-8, 1009 for one over the size limit, 1002 for a
/// frame that breaks the protocol. `None` when the connection itself failed.
fn close_frame(error: axum::Error) -> Option<CloseFrame> {
    use tungstenite::error::{CapacityError, Error};
    let inner = error.into_inner();
    let (code, reason) = match inner.downcast_ref::<Error>()? {
        Error::Utf8(_) => (
            close_code::INVALID,
            "a text message must be UTF-8".to_string(),
        ),
        Error::Capacity(CapacityError::MessageTooLong { max_size, .. }) => (
            close_code::SIZE,
            format!("a message may be at most {max_size} bytes"),
        ),
        Error::Capacity(_) => (close_code::SIZE, "the message is too large".to_string()),
        Error::Protocol(e) => (close_code::PROTOCOL, e.to_string()),
        _ => return None,
    };
    Some(CloseFrame {
        code,
        reason: reason.into(),
    })
}

/// A session's subscriptions: the run each follows (none for `subscribe-events`) and its task.
type Subscriptions = Vec<(Option<magrathea_core::RunId>, JoinHandle<()>)>;

/// 429 `MAG-RD004` once the connection holds as many live subscriptions as it may.
fn room_for_one_more(state: &AppState, subscriptions: &mut Subscriptions) -> Result<(), ApiError> {
    subscriptions.retain(|(_, s)| !s.is_finished());
    let max = state.followers.max_per_connection();
    if subscriptions.len() >= max {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "MAG-RD004",
            format!(
                "[MAG-RD004] this connection already holds {max} subscriptions, the most one connection may; wait for one to end or open another connection"
            ),
        ));
    }
    Ok(())
}

fn error(request: &str, e: &ApiError) -> Value {
    json!({
        "type": "error",
        "data": { "request": request, "code": e.code, "message": e.message },
    })
}

async fn handle(
    state: &AppState,
    scope: &Scope,
    who: &Principal,
    message: ClientMessage,
    out: &mpsc::Sender<Value>,
    subscriptions: &mut Subscriptions,
) -> Option<Value> {
    let kind = message.kind.as_str();
    let invalid = |e: serde_json::Error| {
        ApiError::bad_request(
            "MAG-HTTP-INVALID-JSON",
            format!("invalid `{kind}` data: {}", super::body::plain(&e)),
        )
    };
    let result = match kind {
        "ping" => return Some(json!({ "type": "pong" })),
        "workflow-start" => {
            async {
                who.require(ApiScope::Run)?;
                let data: StartData = serde_json::from_value(message.data).map_err(invalid)?;
                // The token's subject starts it; a claimed `startedBy` is only recorded (and
                // is the starter only without authentication).
                let key = data
                    .idempotency_key
                    .as_deref()
                    .map(super::runs::checked_idempotency_key)
                    .transpose()?;
                let starter = super::state::Starter {
                    // The HTTP start's scoping: the same key finds the same run either way.
                    idempotency_key: key.map(|k| format!("api:{}:{}:{k}", scope.key(), data.name)),
                    ..super::state::Starter::claimed(who, data.started_by)
                };
                let (run, _) = state
                    .start_from(scope, &data.name, data.params, &starter, "ws", data.draft)
                    .await?;
                let started = Started {
                    workflow_run_id: run,
                    workflow_name: data.name,
                };
                Ok(Some(json!({ "type": "workflow-start", "data": started })))
            }
            .await
        }
        "subscribe" => (|| {
            who.require(ApiScope::Read)?;
            let data: SubscribeData = serde_json::from_value(message.data).map_err(invalid)?;
            let summary = state.scoped_summary(scope, &data.workflow_run_id)?;
            let run = summary.run_id;
            // A second subscription to a run would send each record twice.
            if subscriptions
                .iter()
                .any(|(followed, s)| *followed == Some(run) && !s.is_finished())
            {
                return Err(ApiError::bad_request(
                    "MAG-HTTP-WS-SUBSCRIBED",
                    format!("this session already follows run {run}"),
                ));
            }
            let from =
                super::follow::resume_after(&state.engine, run, data.last_event_id, "lastEventId")?;
            room_for_one_more(state, subscriptions)?;
            let slot = state.follower_slot(&scope.tenant, who)?;
            let mut records = follow(state.engine.clone(), run, from, slot);
            let (out, engine) = (out.clone(), state.engine.clone());
            let run_end = json!({ "type": "run-end", "data": { "workflowRunId": run } });
            subscriptions.push((
                Some(run),
                tokio::spawn(async move {
                    // The follower sends the terminal record and what was journaled after
                    // it by then (late answers, ignored), and closes: the end comes after.
                    let mut ended = false;
                    while let Some(entry) = records.recv().await {
                        ended |= super::follow::is_end(&entry);
                        if out
                            .send(json!({
                                "type": "run-event",
                                "workflowRunId": run,
                                "data": entry,
                            }))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    // A client resuming after the last record of a run that has ended gets
                    // its end at once.
                    if ended || engine.summary(run).is_ok_and(|s| s.status.is_terminal()) {
                        let _ = out.send(run_end).await;
                    }
                }),
            ));
            Ok(None)
        })(),
        "subscribe-events" => (|| {
            who.require(ApiScope::Read)?;
            // It takes no data: a field (a `tenant`, a filter) would be ignored unseen.
            if !matches!(&message.data, Value::Null)
                && message.data.as_object().is_none_or(|m| !m.is_empty())
            {
                return Err(ApiError::bad_request(
                    "MAG-HTTP-INVALID-JSON",
                    "invalid `subscribe-events` data: it takes none (the session's project's \
                     events are all sent)",
                ));
            }
            // A second subscription would send each event twice.
            if subscriptions
                .iter()
                .any(|(followed, s)| followed.is_none() && !s.is_finished())
            {
                return Err(ApiError::bad_request(
                    "MAG-HTTP-WS-SUBSCRIBED",
                    "this session already follows its project's events",
                ));
            }
            room_for_one_more(state, subscriptions)?;
            let slot = state.follower_slot(&scope.tenant, who)?;
            let mut events = state.triggers.subscribe_events();
            let (out, scope) = (out.clone(), scope.clone());
            subscriptions.push((
                None,
                tokio::spawn(async move {
                    let _slot = slot;
                    loop {
                        let event = match events.recv().await {
                            Ok(e) => e,
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                                let lagged = json!({ "type": "lagged", "data": { "missed": n } });
                                if out.send(lagged).await.is_err() {
                                    return;
                                }
                                continue;
                            }
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        };
                        if event.tenant != scope.tenant || event.project != scope.project {
                            continue;
                        }
                        let message = json!({ "type": "workflow-event", "data": event.body });
                        if out.send(message).await.is_err() {
                            return;
                        }
                    }
                }),
            ));
            Ok(Some(
                json!({ "type": "subscribe-events", "data": { "subscribed": true } }),
            ))
        })(),
        other => Err(ApiError::bad_request(
            "MAG-HTTP-WS-TYPE",
            format!(
                "unknown message type `{other}`: workflow-start, subscribe, subscribe-events or ping"
            ),
        )),
    };
    result.unwrap_or_else(|e: ApiError| Some(error(kind, &e)))
}
