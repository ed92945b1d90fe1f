//! The binary encoding of journal records, format version 1.
//!
//! `core/docs/journal-format.md` describes every byte; `tests/golden.rs` pins it. Integers are
//! LEB128 varints, strings and JSON payloads are length-prefixed, so a no-op step's records are a
//! few dozen bytes.

use serde_json::Value;

use crate::record::{
    AnswerOutcome, GateAnswer, GateKind, GateSpec, ParentRef, Record, StartRecord,
};
use crate::vocabulary::{Frontend, Outcome, RunScope, TimerPurpose};

mod input_hash;
mod wire;

pub use input_hash::input_hash;
pub(crate) use input_hash::str_hash;
use wire::R;
pub(crate) use wire::{Reader, Writer};

/// The format byte that starts every encoded record.
pub const FORMAT_VERSION: u8 = 1;

/// Why a stored record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The record was written by a newer (or unknown) format; upgrade Magrathea to read it.
    #[error("[MAG-JF001] unsupported journal format version {0} (this build reads version 1)")]
    UnsupportedVersion(u8),
    /// The record's type tag is unknown; the journal was written by a newer build or is corrupt.
    #[error("[MAG-JF002] unknown record tag {0}")]
    UnknownTag(u8),
    /// The bytes end early or hold an invalid value; the journal is corrupt.
    #[error("[MAG-JF003] corrupt record: {0}")]
    Corrupt(&'static str),
}

mod tag {
    pub(super) const START: u8 = 1;
    pub(super) const STATE_ENTERED: u8 = 2;
    pub(super) const TASK_STARTED: u8 = 3;
    pub(super) const TASK_RESULT: u8 = 4;
    pub(super) const VAR: u8 = 5;
    pub(super) const STATUS: u8 = 6;
    pub(super) const RESULT: u8 = 7;
    pub(super) const TIMER_SET: u8 = 8;
    pub(super) const TIMER_FIRED: u8 = 9;
    pub(super) const GATE_OPENED: u8 = 10;
    pub(super) const GATE_ANSWERED: u8 = 11;
    pub(super) const SIGNAL_AWAITED: u8 = 12;
    pub(super) const SIGNAL_RECEIVED: u8 = 13;
    pub(super) const SIGNAL_DELIVERED: u8 = 14;
    pub(super) const CHILD_STARTED: u8 = 15;
    pub(super) const CHILD_FINISHED: u8 = 16;
    pub(super) const SIDE_EFFECT: u8 = 17;
    pub(super) const CANCEL_REQUESTED: u8 = 18;
    pub(super) const IGNORED: u8 = 19;
    pub(super) const CHILD_CANCEL_REQUESTED: u8 = 20;
    pub(super) const TASK_RESTARTED: u8 = 21;
    pub(super) const PAUSE_REQUESTED: u8 = 22;
    pub(super) const RESUME_REQUESTED: u8 = 23;
    pub(super) const TASK_QUEUED: u8 = 24;
    pub(super) const TASK_ADMITTED: u8 = 25;
    pub(super) const TASK_INTERRUPTED: u8 = 26;
    pub(super) const GATE_WITHDRAWN: u8 = 27;
}

/// The optional tail of a `StartRecord`: tagged fields after its scope, each at most once and
/// in tag order, each written only when present. A record with none ends at its scope.
mod start_tail {
    use serde_json::Value;

    use super::{DecodeError, R, Reader};

    /// `requestedBy`: a string.
    pub(super) const REQUESTED_BY: u8 = 1;
    /// `bounds`: JSON.
    pub(super) const BOUNDS: u8 = 2;
    /// `entry`: JSON (`{state, vars}`).
    pub(super) const ENTRY: u8 = 3;

    /// The tail's fields.
    #[derive(Default)]
    pub(super) struct Tail {
        pub(super) requested_by: Option<String>,
        pub(super) bounds: Option<Value>,
        pub(super) entry: Option<Value>,
    }

    /// Reads the tail up to the end of the record.
    pub(super) fn decode(r: &mut Reader<'_>) -> R<Tail> {
        let mut tail = Tail::default();
        let mut last = 0u8;
        while !r.buf.is_empty() {
            let tag = r.u8()?;
            if !(REQUESTED_BY..=ENTRY).contains(&tag) {
                // Not a field: bytes after the record.
                return Err(DecodeError::Corrupt("trailing bytes"));
            }
            if tag <= last {
                return Err(DecodeError::Corrupt("start record tail out of order"));
            }
            last = tag;
            match tag {
                REQUESTED_BY => tail.requested_by = Some(r.str()?),
                BOUNDS => tail.bounds = Some(r.json()?),
                _ => tail.entry = Some(r.json()?),
            }
        }
        Ok(tail)
    }
}

/// The one tail field of an `IgnoredRecord`: the late gate answer it keeps.
const IGNORED_ANSWER: u8 = 1;

/// A gate answer's fields, as a `GateAnsweredRecord` (and an `IgnoredRecord`'s tail) holds them.
fn write_answer(w: &mut Writer<'_>, answer: &GateAnswer) {
    w.u8(match answer.outcome {
        AnswerOutcome::Decided => 0,
        AnswerOutcome::InsufficientInfo => 1,
        AnswerOutcome::Undecidable => 2,
    });
    w.json(&answer.value);
    w.opt_str(&answer.comment);
    w.str(&answer.answered_by);
}

fn read_answer(r: &mut Reader<'_>) -> R<GateAnswer> {
    let outcome = match r.u8()? {
        0 => AnswerOutcome::Decided,
        1 => AnswerOutcome::InsufficientInfo,
        2 => AnswerOutcome::Undecidable,
        _ => return Err(DecodeError::Corrupt("answer outcome")),
    };
    Ok(GateAnswer {
        outcome,
        value: r.json()?,
        comment: r.opt_str()?,
        answered_by: r.str()?,
    })
}

/// Encodes a record appended at `at_ms` into `out` (which is not cleared).
pub fn encode(record: &Record, at_ms: u64, out: &mut Vec<u8>) {
    let mut w = Writer(out);
    w.u8(FORMAT_VERSION);
    match record {
        Record::Start(s) => {
            w.u8(tag::START);
            w.varint(at_ms);
            w.str(&s.workflow_name);
            w.str(&s.workflow_version);
            w.str(s.frontend.as_str());
            w.json(&s.params);
            w.opt_str(&s.definition);
            match &s.parent {
                None => w.u8(0),
                Some(p) => {
                    w.u8(1);
                    w.run_id(p.run_id);
                    w.varint(u64::from(p.step));
                    w.opt_str(&p.state);
                }
            }
            w.str(&s.started_by);
            w.opt_str(&s.idempotency_key);
            w.str(s.scope.as_str());
            // An optional tail of tagged fields, each written only when present and in tag
            // order, so records without them are byte for byte those of earlier versions.
            if let Some(who) = &s.requested_by {
                w.u8(start_tail::REQUESTED_BY);
                w.str(who);
            }
            if let Some(bounds) = &s.bounds {
                w.u8(start_tail::BOUNDS);
                w.json(bounds);
            }
            if let Some(entry) = &s.entry {
                w.u8(start_tail::ENTRY);
                w.json(&serde_json::to_value(entry).unwrap_or(Value::Null));
            }
        }
        Record::StateEntered { step, state } => {
            w.u8(tag::STATE_ENTERED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.str(state);
        }
        Record::TaskStarted {
            step,
            attempt,
            task,
            name,
            input_hash,
            input,
        } => {
            w.u8(tag::TASK_STARTED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.varint(u64::from(*attempt));
            w.str(task);
            w.str(name);
            w.hash(*input_hash);
            w.json(input);
        }
        Record::TaskResult {
            step,
            attempt,
            outcome,
            output,
            error,
            is_final,
        } => {
            w.u8(tag::TASK_RESULT);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.varint(u64::from(*attempt));
            w.str(outcome.as_str());
            w.json(output);
            w.opt_str(error);
            w.u8(u8::from(*is_final));
        }
        Record::Var { step, key, value } => {
            w.u8(tag::VAR);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.str(key);
            w.json(value);
        }
        Record::Status { status, reason } => {
            w.u8(tag::STATUS);
            w.varint(at_ms);
            w.u8(status.code());
            w.opt_str(reason);
        }
        Record::Result { state, result } => {
            w.u8(tag::RESULT);
            w.varint(at_ms);
            w.opt_str(state);
            w.json(result);
        }
        Record::TimerSet {
            step,
            fire_at_ms,
            purpose,
        } => {
            w.u8(tag::TIMER_SET);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.varint(*fire_at_ms);
            w.str(purpose.as_str());
        }
        Record::TimerFired { step } => {
            w.u8(tag::TIMER_FIRED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
        }
        Record::GateOpened { step, gate } => {
            w.u8(tag::GATE_OPENED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.u8(match gate.kind {
                GateKind::Approval => 0,
                GateKind::Decision => 1,
                GateKind::Feedback => 2,
            });
            w.str(&gate.title);
            w.str(&gate.body);
            w.strs(&gate.options);
            w.str(&gate.assigned_to);
            w.str(&gate.criticality);
            w.strs(&gate.tags);
            match gate.timeout_ms {
                None => w.u8(0),
                Some(t) => {
                    w.u8(1);
                    w.varint(t);
                }
            }
            w.json(&gate.meta);
        }
        Record::GateAnswered { step, answer } => {
            w.u8(tag::GATE_ANSWERED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            write_answer(&mut w, answer);
        }
        Record::SignalAwaited { step, name } => {
            w.u8(tag::SIGNAL_AWAITED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.str(name);
        }
        Record::SignalReceived {
            name,
            payload,
            step,
        } => {
            w.u8(tag::SIGNAL_RECEIVED);
            w.varint(at_ms);
            w.str(name);
            w.json(payload);
            match step {
                None => w.u8(0),
                Some(s) => {
                    w.u8(1);
                    w.varint(u64::from(*s));
                }
            }
        }
        Record::SignalDelivered { step, signal_seq } => {
            w.u8(tag::SIGNAL_DELIVERED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.varint(*signal_seq);
        }
        Record::ChildStarted {
            step,
            child_run_id,
            workflow,
            input_hash,
        } => {
            w.u8(tag::CHILD_STARTED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.run_id(*child_run_id);
            w.str(workflow);
            w.hash(*input_hash);
        }
        Record::ChildFinished {
            step,
            status,
            result,
            reason,
        } => {
            w.u8(tag::CHILD_FINISHED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.u8(status.code());
            w.json(result);
            w.opt_str(reason);
        }
        Record::SideEffect { step, name, value } => {
            w.u8(tag::SIDE_EFFECT);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.str(name);
            w.json(value);
        }
        Record::CancelRequested { reason } => {
            w.u8(tag::CANCEL_REQUESTED);
            w.varint(at_ms);
            w.str(reason);
        }
        Record::Ignored { step, what, answer } => {
            w.u8(tag::IGNORED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.str(what);
            // An optional tail field, as a `StartRecord`'s: written only when present.
            if let Some(answer) = answer {
                w.u8(IGNORED_ANSWER);
                write_answer(&mut w, answer);
            }
        }
        Record::ChildCancelRequested {
            step,
            child_run_id,
            reason,
        } => {
            w.u8(tag::CHILD_CANCEL_REQUESTED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.run_id(*child_run_id);
            w.str(reason);
        }
        Record::GateWithdrawn { step, reason } => {
            w.u8(tag::GATE_WITHDRAWN);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.str(reason);
        }
        Record::TaskRestarted {
            step,
            attempt,
            execution,
            worker,
        } => {
            w.u8(tag::TASK_RESTARTED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.varint(u64::from(*attempt));
            w.varint(u64::from(*execution));
            w.str(worker);
        }
        Record::TaskInterrupted {
            step,
            attempt,
            execution,
            worker,
        } => {
            w.u8(tag::TASK_INTERRUPTED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.varint(u64::from(*attempt));
            w.varint(u64::from(*execution));
            w.str(worker);
        }
        Record::TaskQueued { step, attempt } => {
            w.u8(tag::TASK_QUEUED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.varint(u64::from(*attempt));
        }
        Record::TaskAdmitted { step, attempt } => {
            w.u8(tag::TASK_ADMITTED);
            w.varint(at_ms);
            w.varint(u64::from(*step));
            w.varint(u64::from(*attempt));
        }
        Record::PauseRequested { by, reason } => {
            w.u8(tag::PAUSE_REQUESTED);
            w.varint(at_ms);
            w.str(by);
            w.opt_str(reason);
        }
        Record::ResumeRequested { by } => {
            w.u8(tag::RESUME_REQUESTED);
            w.varint(at_ms);
            w.str(by);
        }
    }
}

/// Decodes one record; returns it with its append time in ms since the epoch.
pub fn decode(bytes: &[u8]) -> Result<(Record, u64), DecodeError> {
    decode_with(bytes, true)
}

/// [`decode`] for replay: a `TaskStartedRecord`'s input is skipped (its length is checked,
/// its JSON is not parsed) and left `null`, since replay compares the journaled input hash
/// with the code's; every other field is decoded as [`decode`] does. A replayed step's input
/// is the code's, so parsing the journaled one would only be thrown away.
pub fn decode_for_replay(bytes: &[u8]) -> Result<(Record, u64), DecodeError> {
    decode_with(bytes, false)
}

fn decode_with(bytes: &[u8], inputs: bool) -> Result<(Record, u64), DecodeError> {
    let mut r = Reader { buf: bytes };
    let version = r.u8()?;
    if version != FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion(version));
    }
    let t = r.u8()?;
    let at_ms = r.varint()?;
    let record = match t {
        tag::START => {
            let workflow_name = r.str()?;
            let workflow_version = r.str()?;
            let frontend = Frontend::from(r.text()?);
            let params = r.json()?;
            let definition = r.opt_str()?;
            let parent = match r.u8()? {
                0 => None,
                1 => Some(ParentRef {
                    run_id: r.run_id()?,
                    step: r.u32()?,
                    state: r.opt_str()?,
                }),
                _ => return Err(DecodeError::Corrupt("parent flag")),
            };
            let started_by = r.str()?;
            let idempotency_key = r.opt_str()?;
            let scope = RunScope::from(r.text()?);
            let tail = start_tail::decode(&mut r)?;
            Record::Start(Box::new(StartRecord {
                workflow_name,
                workflow_version,
                frontend,
                params,
                definition,
                parent,
                started_by,
                idempotency_key,
                scope,
                requested_by: tail.requested_by,
                bounds: tail.bounds,
                entry: match tail.entry {
                    None => None,
                    Some(v) => Some(
                        serde_json::from_value(v)
                            .map_err(|_| DecodeError::Corrupt("start record entry"))?,
                    ),
                },
            }))
        }
        tag::STATE_ENTERED => Record::StateEntered {
            step: r.u32()?,
            state: r.str()?,
        },
        tag::TASK_STARTED => {
            let step = r.u32()?;
            let attempt = r.u32()?;
            let task = r.str()?;
            let name = r.str()?;
            let input_hash = r.hash()?;
            let input = if inputs {
                r.json()?
            } else {
                r.bytes()?;
                Value::Null
            };
            Record::TaskStarted {
                step,
                attempt,
                task,
                name,
                input_hash,
                input,
            }
        }
        tag::TASK_RESULT => Record::TaskResult {
            step: r.u32()?,
            attempt: r.u32()?,
            outcome: Outcome::from(r.text()?),
            output: r.json()?,
            error: r.opt_str()?,
            is_final: r.bool()?,
        },
        tag::VAR => Record::Var {
            step: r.u32()?,
            key: r.str()?,
            value: r.json()?,
        },
        tag::STATUS => Record::Status {
            status: r.status()?,
            reason: r.opt_str()?,
        },
        tag::RESULT => Record::Result {
            state: r.opt_str()?,
            result: r.json()?,
        },
        tag::TIMER_SET => Record::TimerSet {
            step: r.u32()?,
            fire_at_ms: r.varint()?,
            purpose: TimerPurpose::parse(&r.str()?)
                .ok_or(DecodeError::Corrupt("unknown timer purpose"))?,
        },
        tag::TIMER_FIRED => Record::TimerFired { step: r.u32()? },
        tag::GATE_OPENED => {
            let step = r.u32()?;
            let kind = match r.u8()? {
                0 => GateKind::Approval,
                1 => GateKind::Decision,
                2 => GateKind::Feedback,
                _ => return Err(DecodeError::Corrupt("gate kind")),
            };
            let gate = GateSpec {
                kind,
                title: r.str()?,
                body: r.str()?,
                options: r.strs()?,
                assigned_to: r.str()?,
                criticality: r.str()?,
                tags: r.strs()?,
                timeout_ms: match r.u8()? {
                    0 => None,
                    1 => Some(r.varint()?),
                    _ => return Err(DecodeError::Corrupt("timeout flag")),
                },
                meta: r.json()?,
            };
            Record::GateOpened {
                step,
                gate: Box::new(gate),
            }
        }
        tag::GATE_ANSWERED => Record::GateAnswered {
            step: r.u32()?,
            answer: read_answer(&mut r)?,
        },
        tag::SIGNAL_AWAITED => Record::SignalAwaited {
            step: r.u32()?,
            name: r.str()?,
        },
        tag::SIGNAL_RECEIVED => {
            let name = r.str()?;
            let payload = r.json()?;
            let step = match r.u8()? {
                0 => None,
                1 => Some(r.u32()?),
                _ => return Err(DecodeError::Corrupt("step flag")),
            };
            Record::SignalReceived {
                name,
                payload,
                step,
            }
        }
        tag::SIGNAL_DELIVERED => Record::SignalDelivered {
            step: r.u32()?,
            signal_seq: r.varint()?,
        },
        tag::CHILD_STARTED => {
            let step = r.u32()?;
            let child_run_id = r.run_id()?;
            let workflow = r.str()?;
            let input_hash = r.hash()?;
            Record::ChildStarted {
                step,
                child_run_id,
                workflow,
                input_hash,
            }
        }
        tag::CHILD_FINISHED => Record::ChildFinished {
            step: r.u32()?,
            status: r.status()?,
            result: r.json()?,
            reason: r.opt_str()?,
        },
        tag::SIDE_EFFECT => Record::SideEffect {
            step: r.u32()?,
            name: r.str()?,
            value: r.json()?,
        },
        tag::CANCEL_REQUESTED => Record::CancelRequested { reason: r.str()? },
        tag::IGNORED => Record::Ignored {
            step: r.u32()?,
            what: r.str()?,
            answer: match r.buf.first() {
                None => None,
                Some(&IGNORED_ANSWER) => {
                    r.u8()?;
                    Some(read_answer(&mut r)?)
                }
                // Not a field: bytes after the record.
                Some(_) => return Err(DecodeError::Corrupt("trailing bytes")),
            },
        },
        tag::CHILD_CANCEL_REQUESTED => Record::ChildCancelRequested {
            step: r.u32()?,
            child_run_id: r.run_id()?,
            reason: r.str()?,
        },
        tag::GATE_WITHDRAWN => Record::GateWithdrawn {
            step: r.u32()?,
            reason: r.str()?,
        },
        tag::TASK_RESTARTED => Record::TaskRestarted {
            step: r.u32()?,
            attempt: r.u32()?,
            execution: r.u32()?,
            worker: r.str()?,
        },
        tag::TASK_INTERRUPTED => Record::TaskInterrupted {
            step: r.u32()?,
            attempt: r.u32()?,
            execution: r.u32()?,
            worker: r.str()?,
        },
        tag::TASK_QUEUED => Record::TaskQueued {
            step: r.u32()?,
            attempt: r.u32()?,
        },
        tag::TASK_ADMITTED => Record::TaskAdmitted {
            step: r.u32()?,
            attempt: r.u32()?,
        },
        tag::PAUSE_REQUESTED => Record::PauseRequested {
            by: r.str()?,
            reason: r.opt_str()?,
        },
        tag::RESUME_REQUESTED => Record::ResumeRequested { by: r.str()? },
        other => return Err(DecodeError::UnknownTag(other)),
    };
    if !r.buf.is_empty() {
        return Err(DecodeError::Corrupt("trailing bytes"));
    }
    Ok((record, at_ms))
}
