//! Property tests of the journal codec: every record survives encode/decode unchanged, a strict
//! prefix of an encoding never decodes (but
//! for the optional tail of a start record), and arbitrary bytes never panic the decoder.
//!
//! JSON payloads are generated without floating-point numbers: they cross the journal as
//! serde_json text, whose default float parsing is not guaranteed to round-trip every bit.

use magrathea_core::codec::{self, DecodeError};
use magrathea_core::{
    AnswerOutcome, GateAnswer, GateKind, GateSpec, ParentRef, Record, RunId, RunStatus,
    StartRecord, TimerPurpose,
};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde_json::Value;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,12}", any::<String>()]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(text(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn status() -> impl Strategy<Value = RunStatus> {
    prop_oneof![
        Just(RunStatus::Running),
        Just(RunStatus::Waiting),
        Just(RunStatus::Done),
        Just(RunStatus::Failed),
        Just(RunStatus::Cancelled),
        Just(RunStatus::Blocked),
        Just(RunStatus::Paused),
    ]
}

fn run_id() -> impl Strategy<Value = RunId> {
    any::<u128>().prop_map(RunId::from_u128)
}

fn start() -> impl Strategy<Value = Record> {
    let parent = option::of((run_id(), any::<u32>(), option::of(text())).prop_map(
        |(run_id, step, state)| ParentRef {
            run_id,
            step,
            state,
        },
    ));
    (
        (text(), text(), text(), json(), option::of(text())),
        (
            parent,
            text(),
            option::of(text()),
            text(),
            option::of(text()),
            option::of(json()),
        ),
        option::of((text(), json())),
    )
        .prop_map(
            |(
                (workflow_name, workflow_version, frontend, params, definition),
                (parent, started_by, idempotency_key, scope, requested_by, bounds),
                entry,
            )| {
                Record::Start(Box::new(StartRecord {
                    workflow_name,
                    workflow_version,
                    frontend: frontend.into(),
                    params,
                    definition,
                    parent,
                    started_by,
                    idempotency_key,
                    scope: scope.into(),
                    requested_by,
                    bounds,
                    entry: entry.map(|(state, vars)| magrathea_core::EntryPoint { state, vars }),
                }))
            },
        )
}

fn gate() -> impl Strategy<Value = GateSpec> {
    let kind = prop_oneof![
        Just(GateKind::Approval),
        Just(GateKind::Decision),
        Just(GateKind::Feedback),
    ];
    (
        (kind, text(), text(), vec(text(), 0..4)),
        (
            text(),
            text(),
            vec(text(), 0..4),
            option::of(any::<u64>()),
            json(),
        ),
    )
        .prop_map(
            |((kind, title, body, options), (assigned_to, criticality, tags, timeout_ms, meta))| {
                GateSpec {
                    kind,
                    title,
                    body,
                    options,
                    assigned_to,
                    criticality,
                    tags,
                    timeout_ms,
                    meta,
                }
            },
        )
}

fn answer() -> impl Strategy<Value = GateAnswer> {
    let outcome = prop_oneof![
        Just(AnswerOutcome::Decided),
        Just(AnswerOutcome::InsufficientInfo),
        Just(AnswerOutcome::Undecidable),
    ];
    (outcome, json(), option::of(text()), text()).prop_map(
        |(outcome, value, comment, answered_by)| GateAnswer {
            outcome,
            value,
            comment,
            answered_by,
        },
    )
}

/// Any record of format version 1, one strategy per tag.
fn record() -> impl Strategy<Value = Record> {
    let step = any::<u32>;
    prop_oneof![
        start(),
        (step(), text()).prop_map(|(step, state)| Record::StateEntered { step, state }),
        (step(), any::<u32>(), text(), text(), any::<u64>(), json()).prop_map(
            |(step, attempt, task, name, input_hash, input)| Record::TaskStarted {
                step,
                attempt,
                task,
                name,
                input_hash,
                input,
            }
        ),
        (
            step(),
            any::<u32>(),
            text(),
            json(),
            option::of(text()),
            any::<bool>()
        )
            .prop_map(|(step, attempt, outcome, output, error, is_final)| {
                Record::TaskResult {
                    step,
                    attempt,
                    outcome: outcome.into(),
                    output,
                    error,
                    is_final,
                }
            }),
        (step(), text(), json()).prop_map(|(step, key, value)| Record::Var { step, key, value }),
        (status(), option::of(text()))
            .prop_map(|(status, reason)| Record::Status { status, reason }),
        (option::of(text()), json()).prop_map(|(state, result)| Record::Result { state, result }),
        (
            step(),
            any::<u64>(),
            prop_oneof![
                Just(TimerPurpose::Sleep),
                Just(TimerPurpose::SleepUntil),
                Just(TimerPurpose::Retry),
                Just(TimerPurpose::GateTimeout),
            ]
        )
            .prop_map(|(step, fire_at_ms, purpose)| Record::TimerSet {
                step,
                fire_at_ms,
                purpose,
            }),
        step().prop_map(|step| Record::TimerFired { step }),
        (step(), gate()).prop_map(|(step, gate)| Record::GateOpened {
            step,
            gate: Box::new(gate),
        }),
        (step(), answer()).prop_map(|(step, answer)| Record::GateAnswered { step, answer }),
        (step(), text()).prop_map(|(step, name)| Record::SignalAwaited { step, name }),
        (text(), json(), option::of(step())).prop_map(|(name, payload, step)| {
            Record::SignalReceived {
                name,
                payload,
                step,
            }
        }),
        (step(), any::<u64>())
            .prop_map(|(step, signal_seq)| Record::SignalDelivered { step, signal_seq }),
        (step(), run_id(), text(), any::<u64>()).prop_map(
            |(step, child_run_id, workflow, input_hash)| Record::ChildStarted {
                step,
                child_run_id,
                workflow,
                input_hash,
            }
        ),
        (step(), status(), json(), option::of(text())).prop_map(
            |(step, status, result, reason)| Record::ChildFinished {
                step,
                status,
                result,
                reason,
            }
        ),
        (step(), text(), json()).prop_map(|(step, name, value)| Record::SideEffect {
            step,
            name,
            value
        }),
        text().prop_map(|reason| Record::CancelRequested { reason }),
        (step(), text(), proptest::option::of(answer()))
            .prop_map(|(step, what, answer)| { Record::Ignored { step, what, answer } }),
        (step(), any::<u32>(), any::<u32>(), text()).prop_map(
            |(step, attempt, execution, worker)| Record::TaskRestarted {
                step,
                attempt,
                execution,
                worker,
            }
        ),
        (step(), run_id(), text()).prop_map(|(step, child_run_id, reason)| {
            Record::ChildCancelRequested {
                step,
                child_run_id,
                reason,
            }
        }),
        (text(), option::of(text())).prop_map(|(by, reason)| Record::PauseRequested { by, reason }),
        text().prop_map(|by| Record::ResumeRequested { by }),
        (step(), any::<u32>()).prop_map(|(step, attempt)| Record::TaskQueued { step, attempt }),
        (step(), any::<u32>()).prop_map(|(step, attempt)| Record::TaskAdmitted { step, attempt }),
        (step(), any::<u32>(), any::<u32>(), text()).prop_map(
            |(step, attempt, execution, worker)| Record::TaskInterrupted {
                step,
                attempt,
                execution,
                worker,
            }
        ),
        (step(), text()).prop_map(|(step, reason)| Record::GateWithdrawn { step, reason }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_record_round_trips(record in record(), at_ms in any::<u64>()) {
        let mut bytes = Vec::new();
        codec::encode(&record, at_ms, &mut bytes);
        prop_assert_eq!(bytes[0], codec::FORMAT_VERSION);
        let (decoded, decoded_at) = codec::decode(&bytes).map_err(|e| {
            TestCaseError::fail(format!("{e} for {record:?}"))
        })?;
        prop_assert_eq!(decoded, record);
        prop_assert_eq!(decoded_at, at_ms);
    }

    #[test]
    fn encode_appends_without_touching_what_is_there(
        record in record(),
        at_ms in any::<u64>(),
        prefix in vec(any::<u8>(), 0..8),
    ) {
        let mut alone = Vec::new();
        codec::encode(&record, at_ms, &mut alone);
        let mut out = prefix.clone();
        codec::encode(&record, at_ms, &mut out);
        prop_assert_eq!(&out[..prefix.len()], &prefix[..]);
        prop_assert_eq!(&out[prefix.len()..], &alone[..]);
    }

    /// A cut record is corrupt, except a start record cut between the fields of its optional
    /// tail, which reads as the record without the fields cut off (never as the whole record).
    #[test]
    fn a_strict_prefix_never_decodes(record in record(), at_ms in any::<u64>(), cut in any::<prop::sample::Index>()) {
        let mut bytes = Vec::new();
        codec::encode(&record, at_ms, &mut bytes);
        let len = cut.index(bytes.len());
        match codec::decode(&bytes[..len]) {
            Err(err) => prop_assert!(matches!(err, DecodeError::Corrupt(_)), "{}", err),
            Ok((Record::Start(cut_start), _)) => {
                let Record::Start(whole) = &record else {
                    return Err(TestCaseError::fail("a cut record of another kind decoded"));
                };
                prop_assert_ne!(&cut_start, whole);
                let mut without_tail = cut_start.clone();
                without_tail.requested_by = whole.requested_by.clone();
                without_tail.bounds = whole.bounds.clone();
                without_tail.entry = whole.entry.clone();
                prop_assert_eq!(&without_tail, whole);
            }
            // Likewise an ignored record cut right before its late answer.
            Ok((Record::Ignored { step, what, answer: None }, _)) => {
                let Record::Ignored { step: s, what: w, answer: Some(_) } = &record else {
                    return Err(TestCaseError::fail("a cut record decoded"));
                };
                prop_assert_eq!((&step, &what), (s, w));
            }
            Ok((other, _)) => {
                return Err(TestCaseError::fail(format!("a cut record decoded: {other:?}")));
            }
        }
    }

    /// Replay's read is the plain read with task inputs left out.
    #[test]
    fn replay_decodes_every_record_but_task_inputs(record in record(), at_ms in any::<u64>()) {
        let mut bytes = Vec::new();
        codec::encode(&record, at_ms, &mut bytes);
        let (mut plain, plain_at) = codec::decode(&bytes).unwrap();
        if let Record::TaskStarted { input, .. } = &mut plain {
            *input = Value::Null;
        }
        let (lean, lean_at) = codec::decode_for_replay(&bytes).unwrap();
        prop_assert_eq!(lean, plain);
        prop_assert_eq!(lean_at, plain_at);
        // Cut, it is refused as the plain read refuses it.
        for len in 0..bytes.len() {
            prop_assert_eq!(
                codec::decode_for_replay(&bytes[..len]).is_err(),
                codec::decode(&bytes[..len]).is_err(),
                "cut to {} bytes", len
            );
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..64)) {
        let _ = codec::decode(&bytes);
    }

    #[test]
    fn bytes_after_a_valid_header_never_panic(tag in 1u8..=23, rest in vec(any::<u8>(), 0..64)) {
        let mut bytes = vec![codec::FORMAT_VERSION, tag];
        bytes.extend(rest);
        let _ = codec::decode(&bytes);
    }
}

/// Floats must cross the journal bit for bit, or a replayed run sees other values than the live
/// run did (and a task input built from them hashes differently). serde_json's default float
/// parser reads `0.011899999999999999` back one ULP high; this passes once the workspace enables
/// serde_json's `float_roundtrip` feature.
#[test]
fn floats_round_trip_bit_for_bit() {
    let value = f64::from_bits(4_578_013_504_733_464_179);
    let record = Record::Var {
        step: 0,
        key: "rate".into(),
        value: Value::from(value),
    };
    let mut bytes = Vec::new();
    codec::encode(&record, 0, &mut bytes);
    let (decoded, _) = codec::decode(&bytes).unwrap();
    assert_eq!(decoded, record);
}

/// A start record with the optional fields given, encoded and decoded again.
fn start_with_tail(requested_by: Option<&str>, bounds: Option<Value>) -> (Vec<u8>, Record) {
    let record = Record::Start(Box::new(StartRecord {
        workflow_name: "loop".into(),
        workflow_version: String::new(),
        frontend: "yaml".into(),
        params: serde_json::json!({}),
        definition: Some("start: a".into()),
        parent: None,
        started_by: "cli:ann".into(),
        idempotency_key: None,
        scope: "acme/shop".into(),
        requested_by: requested_by.map(str::to_string),
        bounds,
        entry: None,
    }));
    let mut bytes = Vec::new();
    codec::encode(&record, 7, &mut bytes);
    let (decoded, at) = codec::decode(&bytes).unwrap();
    assert_eq!(at, 7);
    assert_eq!(decoded, record);
    (bytes, record)
}

#[test]
fn a_start_record_keeps_requested_by_and_bounds_in_any_combination() {
    let bounds = serde_json::json!({"maxTaskSpawns": 5, "setting": "bounds.maxTaskSpawns"});
    let (none, _) = start_with_tail(None, None);
    let (who, _) = start_with_tail(Some("ann"), None);
    let (frozen, _) = start_with_tail(None, Some(bounds.clone()));
    let (both, _) = start_with_tail(Some("ann"), Some(bounds.clone()));
    // Each field is appended after the record without it, tagged 1 and 2.
    assert_eq!(&who[..none.len()], &none[..]);
    assert_eq!(who[none.len()], 1);
    assert_eq!(&frozen[..none.len()], &none[..]);
    assert_eq!(frozen[none.len()], 2);
    assert_eq!(&both[..who.len()], &who[..]);
    assert_eq!(both[who.len()], 2);
}

#[test]
fn a_start_record_tail_with_an_unknown_or_repeated_field_is_corrupt() {
    let (none, _) = start_with_tail(None, None);
    let mut unknown = none.clone();
    unknown.extend([3, 0]);
    assert!(matches!(
        codec::decode(&unknown),
        Err(DecodeError::Corrupt(_))
    ));
    // Fields come once each, in tag order: bounds before requestedBy is not a tail.
    let (frozen, _) = start_with_tail(None, Some(serde_json::json!({})));
    let mut reordered = frozen.clone();
    reordered.extend([1, 3, b'a', b'n', b'n']);
    assert!(matches!(
        codec::decode(&reordered),
        Err(DecodeError::Corrupt(_))
    ));
    let (who, _) = start_with_tail(Some("ann"), None);
    let mut twice = who.clone();
    twice.extend([1, 3, b'b', b'o', b'b']);
    assert!(matches!(
        codec::decode(&twice),
        Err(DecodeError::Corrupt(_))
    ));
}

/// A value nested past serde_json's default limit of 128 levels — a webhook's payload nested
/// 127 levels, one more under the run's parameters — reads back as it was written: a record
/// the engine journaled is never unreadable for its depth.
#[test]
fn a_value_nested_past_the_parsers_default_limit_reads_back() {
    for depth in [127, 128, 1_000] {
        let mut payload = Value::Null;
        for _ in 0..depth {
            payload = Value::Array(vec![payload]);
        }
        let record = Record::Start(Box::new(StartRecord {
            workflow_name: "hook".into(),
            workflow_version: String::new(),
            frontend: "yaml".into(),
            params: serde_json::json!({ "payload": payload }),
            definition: None,
            parent: None,
            started_by: "webhook".into(),
            idempotency_key: None,
            scope: "acme/shop".into(),
            requested_by: None,
            bounds: None,
            entry: None,
        }));
        let mut bytes = Vec::new();
        codec::encode(&record, 3, &mut bytes);
        let (decoded, at) = codec::decode(&bytes).unwrap_or_else(|e| panic!("depth {depth}: {e}"));
        assert_eq!((at, decoded == record), (3, true), "depth {depth}");
    }
}
