//! The engine on a store several workers share (see [`Leases`]): a run is driven here only
//! under this worker's lease, deliveries to runs other workers hold go through the mailbox,
//! and a background loop reclaims the runs of workers that died, hands this worker's mail to
//! its drivers, and stops the drivers of runs whose leases were lost.
//!
//! With a store one process owns (`Store::leases` is `None`) none of this runs: every run is
//! this engine's.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::{AnswerAck, CancelAck, Control, ControlAck, EngineInner, Event};
use crate::context::ChildOutcome;
use crate::error::{DeliverError, StoreError};
use crate::id::RunId;
use crate::record::{GateAnswer, RunStatus};
use crate::store::{Claim, Leases};

/// How often the loop looks for mail, lost leases and expired ones.
const TICK: Duration = Duration::from_millis(50);
/// How often, in ticks, it looks for expired leases (a query over every lease).
const RECLAIM_EVERY: u32 = 10;
/// How long a sender waits for the reply to a message before giving up.
const REPLY_WAIT: Duration = Duration::from_secs(30);
/// How often a sender looks for the reply.
const REPLY_POLL: Duration = Duration::from_millis(20);
/// How often, in looks for the reply, a sender asks whether the run has ended meanwhile.
const ENDED_EVERY: u32 = 10;

/// Whether this engine may drive `run` now: always with a store one process owns; with a
/// shared store, once this worker holds (or has just claimed) its lease. `Ok(Some(reclaims))`
/// when it may, with the run's reclaim count.
pub(super) fn claim(inner: &EngineInner, run: RunId) -> Result<Option<u32>, StoreError> {
    match inner.store.leases() {
        None => Ok(Some(0)),
        Some(leases) => match leases.claim(run)? {
            Claim::Granted { reclaims } => Ok(Some(reclaims)),
            Claim::Elsewhere => Ok(None),
        },
    }
}

/// Hands `event` for `run` to the worker that holds it, through the mailbox, and forwards
/// the reply to the event's caller.
pub(super) fn forward(inner: &Arc<EngineInner>, run: RunId, event: Event) {
    let Some(body) = encode(&event) else {
        // Task results and timer fires are the holder's own business.
        return;
    };
    let inner = inner.clone();
    tokio::spawn(async move {
        // A child's end stays posted: the parent's next holder looks at its children anyway.
        let withdraw = !matches!(event, Event::ChildDone { .. });
        let reply = match mailbox(&inner, move |leases| leases.post(run, body)).await {
            Ok(id) => wait_reply(&inner, run, id, withdraw).await,
            Err(e) => Err(e),
        };
        match reply {
            // The run ended before its holder read the message, and gave up its lease with
            // it: no worker takes that mail. Withdrawn, the event is delivered again, to the
            // ended run as any worker sees it (a late answer is journaled as ignored).
            Ok(Waited::RunEnded) => inner.deliver(run, event),
            Ok(Waited::Reply(reply)) => answer(event, Ok(reply)),
            Err(e) => answer(event, Err(e)),
        }
    });
}

/// What a sender of mail waited for.
enum Waited {
    /// The holder's reply.
    Reply(Value),
    /// The run ended with the message unread, which is withdrawn.
    RunEnded,
}

/// Whether `run` has ended, as the store says.
fn run_ended(inner: &EngineInner, run: RunId) -> bool {
    matches!(inner.store.run_summary(run), Ok(Some(s)) if s.status.is_terminal())
}

/// Runs `call` on the store's leases off the runtime's threads: a database that does not
/// answer holds the call, not the threads that serve requests.
async fn mailbox<T: Send + 'static>(
    inner: &Arc<EngineInner>,
    call: impl FnOnce(&dyn Leases) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let inner = inner.clone();
    tokio::task::spawn_blocking(move || match inner.store.leases() {
        Some(leases) => call(leases),
        None => Err(StoreError::Closed),
    })
    .await
    .unwrap_or(Err(StoreError::Closed))
}

/// The reply to message `id` for `run`. Past [`REPLY_WAIT`] the holder may have died (its
/// lease lasts until the grace period ends): a message it has not taken is withdrawn when
/// `withdraw`, so that a caller told it failed is not overruled by its delivery to the run's
/// next holder. A run that ended meanwhile has no holder left to take the message: once the
/// store says so, the message is withdrawn at once ([`Waited::RunEnded`]; the caller delivers
/// the event to the ended run itself).
async fn wait_reply(
    inner: &Arc<EngineInner>,
    run: RunId,
    id: i64,
    withdraw: bool,
) -> Result<Waited, StoreError> {
    let deadline = tokio::time::Instant::now() + REPLY_WAIT;
    let mut polls = 0u32;
    loop {
        if let Some(reply) = mailbox(inner, move |l| l.take_reply(id)).await? {
            return Ok(Waited::Reply(reply));
        }
        polls += 1;
        let ended = withdraw && polls.is_multiple_of(ENDED_EVERY) && {
            let inner = inner.clone();
            tokio::task::spawn_blocking(move || run_ended(&inner, run))
                .await
                .unwrap_or(false)
        };
        // Taken by the holder before the run ended: its reply comes, wait for it.
        if ended && mailbox(inner, move |l| l.withdraw(id)).await? {
            return Ok(Waited::RunEnded);
        }
        if tokio::time::Instant::now() >= deadline {
            let withdrawn = withdraw && mailbox(inner, move |l| l.withdraw(id)).await?;
            if !withdrawn && let Some(reply) = mailbox(inner, move |l| l.take_reply(id)).await? {
                // Answered between the last look and the withdrawal.
                return Ok(Waited::Reply(reply));
            }
            return Err(StoreError::Unanswered { withdrawn });
        }
        tokio::time::sleep(REPLY_POLL).await;
    }
}

/// The mail body of an event another worker's driver takes; `None` for the events only the
/// holder itself produces.
fn encode(event: &Event) -> Option<Value> {
    Some(match event {
        Event::Answer { step, answer, .. } => json!({"answer": {"step": step, "answer": answer}}),
        Event::Signal { name, payload, .. } => {
            json!({"signal": {"name": name, "payload": payload}})
        }
        Event::Cancel { reason, .. } => json!({"cancel": {"reason": reason}}),
        Event::Control { control, .. } => match control {
            Control::Pause { by, reason } => json!({"pause": {"by": by, "reason": reason}}),
            Control::Unpause { by } => json!({"unpause": {"by": by}}),
        },
        Event::ChildDone { step, outcome } => json!({"childDone": {
            "step": step,
            "runId": outcome.run_id.to_string(),
            "status": outcome.status,
            "result": outcome.result,
            "reason": outcome.reason,
        }}),
        Event::TaskDone { .. }
        | Event::TimerFired { .. }
        | Event::TaskQueued { .. }
        | Event::TaskAdmitted { .. }
        | Event::Close => return None,
    })
}

/// A reply to the sender, as JSON: `{"ok": …}` or `{"error": "…"}`.
enum Replier {
    Answer(oneshot::Receiver<Result<AnswerAck, DeliverError>>),
    Signal(oneshot::Receiver<Result<(), DeliverError>>),
    Cancel(oneshot::Receiver<Result<CancelAck, DeliverError>>),
    Control(oneshot::Receiver<Result<ControlAck, DeliverError>>),
    None,
}

/// The event a mail body describes, with the receiver of its outcome.
fn decode(body: &Value) -> Option<(Event, Replier)> {
    if let Some(a) = body.get("answer") {
        let (reply, rx) = oneshot::channel();
        let step = u32::try_from(a["step"].as_u64()?).ok()?;
        let answer: GateAnswer = serde_json::from_value(a["answer"].clone()).ok()?;
        return Some((
            Event::Answer {
                step,
                answer,
                reply,
            },
            Replier::Answer(rx),
        ));
    }
    if let Some(s) = body.get("signal") {
        let (reply, rx) = oneshot::channel();
        return Some((
            Event::Signal {
                name: s["name"].as_str()?.to_owned(),
                payload: s["payload"].clone(),
                reply,
            },
            Replier::Signal(rx),
        ));
    }
    if let Some(c) = body.get("cancel") {
        let (reply, rx) = oneshot::channel();
        return Some((
            Event::Cancel {
                reason: c["reason"].as_str()?.to_owned(),
                reply,
            },
            Replier::Cancel(rx),
        ));
    }
    let control = if let Some(p) = body.get("pause") {
        Some(Control::Pause {
            by: p["by"].as_str()?.to_owned(),
            reason: p["reason"].as_str().map(str::to_owned),
        })
    } else {
        body.get("unpause").and_then(|u| {
            Some(Control::Unpause {
                by: u["by"].as_str()?.to_owned(),
            })
        })
    };
    if let Some(control) = control {
        let (reply, rx) = oneshot::channel();
        return Some((Event::Control { control, reply }, Replier::Control(rx)));
    }
    let c = body.get("childDone")?;
    let status: RunStatus = serde_json::from_value(c["status"].clone()).ok()?;
    Some((
        Event::ChildDone {
            step: u32::try_from(c["step"].as_u64()?).ok()?,
            outcome: ChildOutcome {
                run_id: c["runId"].as_str()?.parse().ok()?,
                status,
                result: c["result"].clone(),
                reason: c["reason"].as_str().map(str::to_owned),
            },
        },
        Replier::None,
    ))
}

async fn reply_of(replier: Replier) -> Value {
    fn wrap<T>(
        r: Result<Result<T, DeliverError>, oneshot::error::RecvError>,
        ok: impl Fn(T) -> Value,
    ) -> Value {
        match r {
            Ok(Ok(v)) => json!({"ok": ok(v)}),
            Ok(Err(e)) => error_reply(&e),
            Err(_) => error_reply(&DeliverError::Store(StoreError::Closed)),
        }
    }
    match replier {
        Replier::Answer(rx) => wrap(rx.await, |a| {
            json!(match a {
                AnswerAck::Applied => "applied",
                AnswerAck::Ignored => "ignored",
            })
        }),
        Replier::Signal(rx) => wrap(rx.await, |()| Value::Null),
        Replier::Cancel(rx) => wrap(rx.await, |c| {
            json!(match c {
                CancelAck::Requested => "requested",
                CancelAck::AlreadyRequested => "alreadyRequested",
                CancelAck::AlreadyFinished => "alreadyFinished",
            })
        }),
        Replier::Control(rx) => wrap(rx.await, |c| {
            json!(match c {
                ControlAck::Paused => "paused",
                ControlAck::AlreadyPaused => "alreadyPaused",
                ControlAck::Resumed => "resumed",
            })
        }),
        Replier::None => Value::Null,
    }
}

/// A delivery error as a reply, with what the sender needs to give its caller the same error
/// as the holder would have (an invalid answer stays an invalid answer, not a store failure).
fn error_reply(e: &DeliverError) -> Value {
    let (kind, detail) = match e {
        DeliverError::RunNotFound(run) => ("runNotFound", run.to_string()),
        DeliverError::ItemNotFound(id) => ("itemNotFound", id.clone()),
        DeliverError::InvalidAnswer(why) => ("invalidAnswer", why.clone()),
        DeliverError::Blocked(run, why) => ("blocked", format!("{run} {why}")),
        DeliverError::Unsupported(run) => ("unsupported", run.to_string()),
        DeliverError::NotPausable(run, status) => ("notPausable", format!("{run} {status}")),
        DeliverError::NotPaused(run, status) => ("notPaused", format!("{run} {status}")),
        DeliverError::Store(_) => ("store", String::new()),
    };
    json!({"error": {"kind": kind, "detail": detail, "message": e.to_string()}})
}

/// The error [`error_reply`] describes.
fn delivery_error(e: &Value) -> DeliverError {
    let detail = e["detail"].as_str().unwrap_or_default().to_owned();
    let run = |s: &str| s.parse::<RunId>().ok();
    let store = || {
        DeliverError::Store(StoreError::io(
            e["message"]
                .as_str()
                .unwrap_or("the holder failed")
                .to_owned(),
        ))
    };
    match e["kind"].as_str() {
        Some("runNotFound") => run(&detail).map_or_else(store, DeliverError::RunNotFound),
        Some("itemNotFound") => DeliverError::ItemNotFound(detail),
        Some("invalidAnswer") => DeliverError::InvalidAnswer(detail),
        Some("blocked") => match detail.split_once(' ') {
            Some((r, why)) => run(r).map_or_else(store, |r| DeliverError::Blocked(r, why.into())),
            None => store(),
        },
        Some("unsupported") => run(&detail).map_or_else(store, DeliverError::Unsupported),
        Some(kind @ ("notPausable" | "notPaused")) => {
            let parsed = detail
                .split_once(' ')
                .and_then(|(r, s)| Some((run(r)?, s.parse::<RunStatus>().ok()?)));
            match parsed {
                Some((r, s)) if kind == "notPausable" => DeliverError::NotPausable(r, s),
                Some((r, s)) => DeliverError::NotPaused(r, s),
                None => store(),
            }
        }
        _ => store(),
    }
}

/// Answers the original caller of a forwarded event with the holder's reply.
fn answer(event: Event, reply: Result<Value, StoreError>) {
    let remote = |v: &Value| -> Result<Value, DeliverError> {
        match v.get("error") {
            Some(e) => Err(delivery_error(e)),
            None => Ok(v.get("ok").cloned().unwrap_or(Value::Null)),
        }
    };
    let reply = reply.map_err(DeliverError::Store);
    match event {
        Event::Answer { reply: tx, .. } => {
            let r = reply.and_then(|v| remote(&v)).map(|v| {
                if v == "ignored" {
                    AnswerAck::Ignored
                } else {
                    AnswerAck::Applied
                }
            });
            let _ = tx.send(r);
        }
        Event::Signal { reply: tx, .. } => {
            let _ = tx.send(reply.and_then(|v| remote(&v)).map(drop));
        }
        Event::Cancel { reply: tx, .. } => {
            let r = reply.and_then(|v| remote(&v)).map(|v| match v.as_str() {
                Some("alreadyRequested") => CancelAck::AlreadyRequested,
                Some("alreadyFinished") => CancelAck::AlreadyFinished,
                _ => CancelAck::Requested,
            });
            let _ = tx.send(r);
        }
        Event::Control { reply: tx, .. } => {
            let r = reply.and_then(|v| remote(&v)).map(|v| match v.as_str() {
                Some("alreadyPaused") => ControlAck::AlreadyPaused,
                Some("resumed") => ControlAck::Resumed,
                _ => ControlAck::Paused,
            });
            let _ = tx.send(r);
        }
        Event::ChildDone { .. }
        | Event::TaskDone { .. }
        | Event::TimerFired { .. }
        | Event::TaskQueued { .. }
        | Event::TaskAdmitted { .. }
        | Event::Close => {}
    }
}

/// Starts the background loop of a shared store's engine; it ends with the engine. Without
/// `reclaim` (an engine that recovers nothing on its own, such as a command that only reads),
/// it leaves expired leases to other workers.
pub(super) fn start(inner: &Arc<EngineInner>, reclaim: bool) {
    if inner.store.leases().is_none() {
        return;
    }
    let weak = Arc::downgrade(inner);
    tokio::spawn(async move {
        let mut tick = 0u32;
        let mut rounds: Option<tokio::task::JoinHandle<()>> = None;
        // A reclaim that came due while a round was still running is made by the next one.
        let mut reclaim_due = false;
        loop {
            tokio::time::sleep(TICK).await;
            let Some(inner) = weak.upgrade() else { return };
            tick = tick.wrapping_add(1);
            reclaim_due |= reclaim && tick.is_multiple_of(RECLAIM_EVERY);
            // Lost leases are let go of at every tick, even while a round waits on the store:
            // a store whose database stops answering reports the leases it gives up meanwhile.
            stop_lost(&inner);
            if rounds.as_ref().is_some_and(|r| !r.is_finished()) {
                continue;
            }
            let reclaim = std::mem::take(&mut reclaim_due);
            // The store's calls block (a database that does not answer holds them): off the
            // runtime's threads, which serve requests meanwhile.
            rounds = Some(tokio::task::spawn_blocking(move || round(&inner, reclaim)));
        }
    });
}

/// Stops driving the runs whose leases the store found lost.
fn stop_lost(inner: &EngineInner) {
    let Some(leases) = inner.store.leases() else {
        return;
    };
    for run in leases.take_lost() {
        // A run that waited out of memory no longer counts here.
        drop(inner.tenant_runs.unpark(run));
        // Dropping its channel stops the driver at its next turn; its appends are fenced.
        if inner.active().remove(&run).is_some() {
            tracing::warn!(%run, "lost the run's lease to another worker; stopped driving it");
        }
    }
}

/// How often a warning of the loop's store calls failing goes out: a database that stops
/// answering fails every round (twenty a second), and one warning in ten seconds, with the
/// count of those left out, says as much.
const ROUND_WARN_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// The throttles of the loop's warnings of a mailbox that cannot be read and of expired leases
/// that cannot be reclaimed (shared by the engines of a process).
fn round_warnings() -> &'static [crate::LogThrottle; 2] {
    static WARNINGS: std::sync::OnceLock<[crate::LogThrottle; 2]> = std::sync::OnceLock::new();
    WARNINGS.get_or_init(|| {
        [
            crate::LogThrottle::new(ROUND_WARN_EVERY),
            crate::LogThrottle::new(ROUND_WARN_EVERY),
        ]
    })
}

/// One round of the loop: lost leases, mail, and (every few rounds) expired leases.
fn round(inner: &Arc<EngineInner>, reclaim: bool) {
    let Some(leases) = inner.store.leases() else {
        return;
    };
    stop_lost(inner);
    match leases.take_mail(256) {
        Ok(mail) => {
            for m in mail {
                let Some((event, replier)) = decode(&m.body) else {
                    let unreadable = StoreError::io("an unreadable mailbox message");
                    let _ = leases.reply(m.id, error_reply(&DeliverError::Store(unreadable)));
                    continue;
                };
                inner.deliver(m.run, event);
                let weak: Weak<EngineInner> = Arc::downgrade(inner);
                tokio::spawn(async move {
                    let reply = reply_of(replier).await;
                    if let Some(inner) = weak.upgrade()
                        && let Err(e) = mailbox(&inner, move |l| l.reply(m.id, reply)).await
                    {
                        tracing::warn!(error = %e, "could not post a mailbox reply");
                    }
                });
            }
        }
        Err(e) => {
            if let Some(left_out) = round_warnings()[0].allow() {
                tracing::warn!(error = %e, left_out, "could not read the mailbox");
            }
        }
    }
    if reclaim {
        match leases.reclaim_expired(64) {
            Ok(runs) => {
                for (run, reclaims) in runs {
                    // A run its worker released on a clean stop is adopted without counting
                    // a reclaim: `reclaims` counts only the leases that ran out.
                    tracing::warn!(
                        %run,
                        reclaims,
                        "took over a run whose worker released it (a clean stop) or stopped \
                         heartbeating"
                    );
                    inner.recover_claimed(run, reclaims);
                }
            }
            Err(e) => {
                if let Some(left_out) = round_warnings()[1].allow() {
                    tracing::warn!(error = %e, left_out, "could not reclaim expired leases");
                }
            }
        }
    }
}
