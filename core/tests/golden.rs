//! The golden journal of format version 1: pins the bytes of every record variant.
//!
//! `tests/golden/journal-v1.hex` holds a canned journal, one record per line as
//! `<seq> <record type> <hex bytes>`; lines starting with `#` are comments. The tests encode
//! [`canned_journal`] and require exactly those bytes, and decode the file back to the same
//! records, so a change to the codec (`core/src/codec/`) that alters a single byte of version 1 fails here.
//!
//! Bytes already on disk must stay readable: a change that alters the bytes of an existing
//! record is a new format version (a new format byte, see `core/docs/journal-format.md`),
//! with its own golden file, not an edit of this one. To regenerate the file after adding
//! a record to the canned journal (or for a new format version), run
//!
//! ```text
//! MAGRATHEA_BLESS=1 cargo test -p magrathea-core --test golden
//! ```
//!
//! and review the diff of `journal-v1.hex`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use magrathea_core::codec::{self, DecodeError, FORMAT_VERSION};
use magrathea_core::{
    AnswerOutcome, GateAnswer, GateKind, GateSpec, ParentRef, Record, RunId, RunStatus,
    StartRecord, TimerPurpose,
};
use serde_json::json;

/// 2025-01-01T00:00:00Z in ms since the epoch; record `seq` is appended `seq * 25` ms later.
const T0: u64 = 1_735_689_600_000;

/// The parent run of the canned run.
const PARENT: u128 = 0x0194_1a2b_3c4d_7e5f_8a9b_0c1d_2e3f_4a5b;
/// The child the canned run starts.
const CHILD: u128 = 0x0194_1a2b_3c4e_7001_8002_0003_0004_0005;

/// How many record types format version 1 has (tags 1 to 25).
const RECORD_TYPES: usize = 27;

/// A run's journal with every record type, in a plausible order:
///
/// 0 `StartRecord` (child of another run, with definition, idempotency key and scope),
/// 1 `StateEnteredRecord`, 2 `TaskStartedRecord`, 3 `TaskResultRecord` (a retryable failure),
/// 4 `TimerSetRecord` (the retry backoff), 5 `TimerFiredRecord`, 6 `TaskStartedRecord`
/// (attempt 2), 7 `TaskResultRecord` (success), 8 `VarRecord`, 9 `SideEffectRecord`,
/// 10 `GateOpenedRecord` (a DECISION with a timeout), 11 `StatusRecord` (WAITING),
/// 12 `GateAnsweredRecord`, 13 `StatusRecord` (RUNNING), 14 `SignalReceivedRecord` (buffered),
/// 15 `SignalAwaitedRecord`, 16 `SignalDeliveredRecord`, 17 `SignalAwaitedRecord`,
/// 18 `SignalReceivedRecord` (completing a wait), 19 `ChildStartedRecord`,
/// 20 `ChildFinishedRecord` (FAILED), 21 `IgnoredRecord`, 22 `CancelRequestedRecord`,
/// 23 `ResultRecord`, 24 `StatusRecord` (CANCELLED), and, as run-less extras that pin the
/// `None`/`false` encodings: 25 a root `StartRecord` with every option absent,
/// 26 a `GateOpenedRecord` without timeout, 27 a `GateAnsweredRecord` without comment; and
/// 28 a `ChildCancelRequestedRecord` (tag 20, added after the others: appended, so that the
/// bytes of records 0 to 27 stay as they were); 29 a `TaskRestartedRecord` (tag 21, appended
/// likewise); 30 a `TimerSetRecord` whose purpose is a run's `deadline` (appended likewise);
/// 31 a `PauseRequestedRecord` with a reason (tag 22), 32 a `ResumeRequestedRecord`
/// (tag 23) and 33 a `PauseRequestedRecord` without one (appended likewise); 34 a
/// `StartRecord` of a retry, with the `entry` field of its tail (tail tag 3); 35 an
/// `IgnoredRecord` holding a late gate answer (its tail field 01); 36 a `TaskQueuedRecord`
/// (tag 24) and 37 a `TaskAdmittedRecord` (tag 25), appended likewise; 38 a
/// `TaskInterruptedRecord` (tag 26), appended likewise; 39 a `GateWithdrawnRecord` (tag 27),
/// appended likewise.
fn canned_journal() -> Vec<Record> {
    let start = StartRecord {
        workflow_name: "order".into(),
        workflow_version: "2".into(),
        frontend: "yaml".into(),
        params: json!({ "id": 42, "sku": "towel" }),
        definition: Some("name: order\n".into()),
        parent: Some(ParentRef {
            run_id: RunId::from_u128(PARENT),
            step: 3,
            state: Some("fulfil".into()),
        }),
        started_by: "arthur".into(),
        idempotency_key: Some("order-42".into()),
        scope: "acme/shop".into(),
        requested_by: None,
        bounds: None,
        entry: None,
    };
    let decision = GateSpec {
        kind: GateKind::Decision,
        title: "Ship to Magrathea?".into(),
        body: "Planet No. 42".into(),
        options: vec!["ship".into(), "hold".into()],
        assigned_to: "@ops".into(),
        criticality: "CRITICAL".into(),
        tags: vec!["shipping".into()],
        timeout_ms: Some(86_400_000),
        meta: json!({ "workflowState": "approve" }),
    };
    vec![
        Record::Start(Box::new(start)),
        Record::StateEntered {
            step: 0,
            state: "charge".into(),
        },
        Record::TaskStarted {
            step: 1,
            attempt: 1,
            task: "payments.charge".into(),
            name: "charge".into(),
            input_hash: 0x0123_4567_89ab_cdef,
            input: json!({ "cents": 4200 }),
        },
        Record::TaskResult {
            step: 1,
            attempt: 1,
            outcome: "technical_error".into(),
            output: json!(null),
            error: Some("timeout".into()),
            is_final: false,
        },
        Record::TimerSet {
            step: 1,
            fire_at_ms: T0 + 200,
            purpose: TimerPurpose::Retry,
        },
        Record::TimerFired { step: 1 },
        Record::TaskStarted {
            step: 1,
            attempt: 2,
            task: "payments.charge".into(),
            name: "charge".into(),
            input_hash: 0x0123_4567_89ab_cdef,
            input: json!({ "cents": 4200 }),
        },
        Record::TaskResult {
            step: 1,
            attempt: 2,
            outcome: "success".into(),
            output: json!({ "receipt": "r-1" }),
            error: None,
            is_final: true,
        },
        Record::Var {
            step: 1,
            key: "receipt".into(),
            value: json!("r-1"),
        },
        Record::SideEffect {
            step: 2,
            name: "now".into(),
            value: json!(T0),
        },
        Record::GateOpened {
            step: 3,
            gate: Box::new(decision.clone()),
        },
        Record::Status {
            status: RunStatus::Waiting,
            reason: None,
        },
        Record::GateAnswered {
            step: 3,
            answer: GateAnswer::choose("ship").with_comment("go").by("zaphod"),
        },
        Record::Status {
            status: RunStatus::Running,
            reason: None,
        },
        Record::SignalReceived {
            name: "paid".into(),
            payload: json!([1, 2]),
            step: None,
        },
        Record::SignalAwaited {
            step: 4,
            name: "paid".into(),
        },
        Record::SignalDelivered {
            step: 4,
            signal_seq: 14,
        },
        Record::SignalAwaited {
            step: 5,
            name: "packed".into(),
        },
        Record::SignalReceived {
            name: "packed".into(),
            payload: json!(true),
            step: Some(5),
        },
        Record::ChildStarted {
            step: 6,
            child_run_id: RunId::from_u128(CHILD),
            workflow: "ship".into(),
            input_hash: 0xfedc_ba98_7654_3210,
        },
        Record::ChildFinished {
            step: 6,
            status: RunStatus::Failed,
            result: json!(null),
            reason: Some("no courier".into()),
        },
        Record::Ignored {
            step: 300,
            what: "gate answer".into(),
            answer: None,
        },
        Record::CancelRequested {
            reason: "customer cancelled".into(),
        },
        Record::Result {
            state: Some("cancelled".into()),
            result: json!({ "ok": false }),
        },
        Record::Status {
            status: RunStatus::Cancelled,
            reason: Some("customer cancelled".into()),
        },
        Record::Start(Box::new(StartRecord {
            workflow_name: "hello".into(),
            workflow_version: String::new(),
            frontend: "code".into(),
            params: json!("world"),
            definition: None,
            parent: None,
            started_by: String::new(),
            idempotency_key: None,
            scope: Default::default(),
            requested_by: None,
            bounds: None,
            entry: None,
        })),
        Record::GateOpened {
            step: 0,
            gate: Box::new(GateSpec {
                kind: GateKind::Approval,
                title: "Ship order A-1?".into(),
                body: String::new(),
                options: vec![],
                assigned_to: String::new(),
                criticality: "NORMAL".into(),
                tags: vec![],
                timeout_ms: None,
                meta: json!(null),
            }),
        },
        Record::GateAnswered {
            step: 0,
            answer: GateAnswer {
                outcome: AnswerOutcome::InsufficientInfo,
                value: json!(null),
                comment: None,
                answered_by: "ford".into(),
            },
        },
        Record::ChildCancelRequested {
            step: 6,
            child_run_id: RunId::from_u128(CHILD),
            reason: "parent run cancelled".into(),
        },
        Record::TaskRestarted {
            step: 1,
            attempt: 1,
            execution: 2,
            worker: "deep-thought:42".into(),
        },
        Record::TimerSet {
            step: 7,
            fire_at_ms: T0 + 86_400_000,
            purpose: TimerPurpose::Deadline,
        },
        Record::PauseRequested {
            by: "zaphod".into(),
            reason: Some("maintenance".into()),
        },
        Record::ResumeRequested { by: "ford".into() },
        Record::PauseRequested {
            by: String::new(),
            reason: None,
        },
        Record::Start(Box::new(StartRecord {
            workflow_name: "order".into(),
            workflow_version: String::new(),
            frontend: "yaml".into(),
            params: json!({ "id": 42 }),
            definition: None,
            parent: None,
            started_by: "arthur".into(),
            idempotency_key: None,
            scope: "acme/shop".into(),
            requested_by: None,
            bounds: None,
            entry: Some(magrathea_core::EntryPoint {
                state: "ship".into(),
                vars: json!({ "receipt": "r-1" }),
            }),
        })),
        // A gate answer after the gate's timeout fired: kept, in the record's tail field 01.
        Record::Ignored {
            step: 4,
            what: "gate answer".into(),
            answer: Some(GateAnswer {
                outcome: AnswerOutcome::Decided,
                value: json!({ "approved": true }),
                comment: None,
                answered_by: "trillian".into(),
            }),
        },
        Record::TaskQueued {
            step: 1,
            attempt: 2,
        },
        Record::TaskAdmitted {
            step: 1,
            attempt: 2,
        },
        Record::TaskInterrupted {
            step: 1,
            attempt: 2,
            execution: 1,
            worker: "host-a:4242".into(),
        },
        Record::GateWithdrawn {
            step: 4,
            reason: "timer won".into(),
        },
    ]
}

fn at_ms(seq: usize) -> u64 {
    T0 + 25 * seq as u64
}

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/journal-v1.hex")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd number of hex digits: {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn encode(record: &Record, at: u64) -> Vec<u8> {
    let mut out = Vec::new();
    codec::encode(record, at, &mut out);
    out
}

/// The golden file's text for the canned journal.
fn render() -> String {
    let mut text = String::from(
        "# Magrathea journal format version 1: the canned journal of core/tests/golden.rs.\n\
         # One record per line: <seq> <record type> <hex bytes>. Regenerate with\n\
         # MAGRATHEA_BLESS=1 cargo test -p magrathea-core --test golden\n",
    );
    for (seq, record) in canned_journal().iter().enumerate() {
        let bytes = encode(record, at_ms(seq));
        text.push_str(&format!("{seq} {} {}\n", record.type_name(), hex(&bytes)));
    }
    text
}

/// The golden file's records: `(seq, type name, bytes)`.
fn read_golden() -> Vec<(usize, String, Vec<u8>)> {
    bless_if_asked();
    let text = std::fs::read_to_string(golden_path())
        .expect("tests/golden/journal-v1.hex is missing; see the top of golden.rs");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.split_whitespace();
            let seq = parts.next().and_then(|s| s.parse().ok()).expect("seq");
            let name = parts.next().expect("record type").to_string();
            let bytes = unhex(parts.next().expect("hex bytes"));
            assert!(parts.next().is_none(), "extra field on line: {l}");
            (seq, name, bytes)
        })
        .collect()
}

/// Whether this run regenerates the golden file.
fn blessing() -> bool {
    std::env::var_os("MAGRATHEA_BLESS").is_some_and(|v| v == "1")
}

/// Rewrites the golden file once per test process when blessing, before any test reads it.
fn bless_if_asked() {
    static BLESSED: OnceLock<()> = OnceLock::new();
    BLESSED.get_or_init(|| {
        if blessing() {
            std::fs::create_dir_all(golden_path().parent().unwrap()).unwrap();
            std::fs::write(golden_path(), render()).unwrap();
        }
    });
}

#[test]
fn encoding_matches_the_golden_file() {
    bless_if_asked();
    let expected = render();
    let actual = std::fs::read_to_string(golden_path()).unwrap_or_default();
    // Compare line by line first so a failure names the record that changed.
    for (want, have) in expected.lines().zip(actual.lines()) {
        assert_eq!(
            have, want,
            "the encoding changed (golden file first, new encoding second); a change to the \
             bytes of format version 1 needs a new format version, see golden.rs"
        );
    }
    assert_eq!(
        actual, expected,
        "the golden file has a different number of records"
    );
}

#[test]
fn the_golden_file_decodes_to_the_canned_journal() {
    let golden = read_golden();
    let canned = canned_journal();
    assert_eq!(golden.len(), canned.len());
    for ((seq, name, bytes), want) in golden.iter().zip(&canned) {
        let (record, at) = codec::decode(bytes)
            .unwrap_or_else(|e| panic!("record {seq} ({name}) does not decode: {e}"));
        assert_eq!(&record, want, "record {seq}");
        assert_eq!(record.type_name(), name, "record {seq}");
        assert_eq!(at, at_ms(*seq), "record {seq}");
        // And back to the same bytes.
        assert_eq!(&encode(&record, at), bytes, "record {seq}");
    }
}

#[test]
fn the_canned_journal_holds_every_record_type_and_tag() {
    let golden = read_golden();
    let names: BTreeSet<&str> = golden.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(names.len(), RECORD_TYPES, "{names:?}");
    let tags: BTreeSet<u8> = golden.iter().map(|(_, _, b)| b[1]).collect();
    assert_eq!(tags, (1..=RECORD_TYPES as u8).collect());
    assert!(golden.iter().all(|(_, _, b)| b[0] == FORMAT_VERSION));
}

#[test]
fn an_unknown_format_version_is_refused_with_mag_jf001() {
    for (_, _, mut bytes) in read_golden() {
        bytes[0] = 2;
        let err = codec::decode(&bytes).unwrap_err();
        assert_eq!(err, DecodeError::UnsupportedVersion(2));
        assert!(err.to_string().starts_with("[MAG-JF001]"), "{err}");
    }
    for version in [0, 2, 0xff] {
        let err = codec::decode(&[version]).unwrap_err();
        assert_eq!(err, DecodeError::UnsupportedVersion(version));
    }
}

#[test]
fn an_unknown_tag_is_refused_with_mag_jf002() {
    for tag in [0u8, RECORD_TYPES as u8 + 1, 0x7f, 0xff] {
        // Format byte, tag, then a valid `at_ms` varint: only the tag is wrong.
        let err = codec::decode(&[FORMAT_VERSION, tag, 0x00]).unwrap_err();
        assert_eq!(err, DecodeError::UnknownTag(tag));
        assert!(err.to_string().starts_with("[MAG-JF002]"), "{err}");
    }
}

#[test]
fn truncated_or_padded_records_are_refused_with_mag_jf003() {
    for (seq, name, bytes) in read_golden() {
        let (full, _) = codec::decode(&bytes).unwrap();
        for len in 0..bytes.len() {
            let cut = codec::decode(&bytes[..len]);
            // A StartRecord's tail is optional: cut right before it, it is the same record
            // without its tail fields (as every record written before they existed).
            if let (Ok((Record::Start(cut), _)), Record::Start(full)) = (&cut, &full) {
                let untailed = StartRecord {
                    requested_by: None,
                    bounds: None,
                    entry: None,
                    ..(**full).clone()
                };
                assert_eq!(**cut, untailed, "record {seq} cut to {len} bytes");
                continue;
            }
            // So is an IgnoredRecord's late answer.
            if let (
                Ok((
                    Record::Ignored {
                        step,
                        what,
                        answer: None,
                    },
                    _,
                )),
                Record::Ignored {
                    step: s,
                    what: w,
                    answer: Some(_),
                },
            ) = (&cut, &full)
            {
                assert_eq!((step, what), (s, w), "record {seq} cut to {len} bytes");
                continue;
            }
            let err = cut.expect_err(&format!("record {seq} ({name}) cut to {len} bytes decoded"));
            assert!(
                matches!(err, DecodeError::Corrupt(_))
                    && err.to_string().starts_with("[MAG-JF003]"),
                "record {seq} ({name}) cut to {len} bytes: {err}"
            );
        }
        let mut padded = bytes.clone();
        padded.push(0);
        let err = codec::decode(&padded).unwrap_err();
        assert_eq!(err, DecodeError::Corrupt("trailing bytes"), "record {seq}");
    }
}

#[test]
fn the_input_hash_is_stable() {
    // Journaled hashes are compared on replay: changing the function breaks every stored run.
    assert_eq!(codec::input_hash(&json!(null)), 0x5b9b_c4ba_5281_08e4);
    assert_eq!(
        codec::input_hash(&json!({ "cents": 4200 })),
        0xa895_5bd9_31ab_67cc
    );
}

#[test]
fn the_input_hash_of_a_nested_object_is_pinned() {
    // Keys at every depth, in an order other than the sorted one, with escapes and a float: the
    // hash is over the canonical (key-sorted) serialisation, whatever order a map keeps.
    let value = json!({
        "zeta": [1, { "b": true, "a": null, "c": [] }],
        "alpha": { "y": "\u{fc}\"q\n", "x": 1.5, "w": {} },
        "mid": -7,
        "Mid": u64::MAX,
    });
    assert_eq!(codec::input_hash(&value), 0x1acb_d82c_1d3f_8066);
}

/// The journal-format page's worked examples: each "Golden record N" shows the bytes of
/// record N of the golden file, so the page cannot drift from the encoding.
#[test]
fn the_format_pages_examples_are_the_golden_records() {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/journal-format.md"),
    )
    .unwrap();
    let golden = read_golden();
    let mut lines = page.lines();
    let mut checked = 0;
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("Golden record ") else {
            continue;
        };
        let seq: usize = rest
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no record number in {line:?}"));
        let shown = lines
            .by_ref()
            .map(str::trim)
            .find(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_hexdigit()))
            .unwrap_or_else(|| panic!("no bytes after {line:?}"));
        let (_, name, bytes) = golden
            .iter()
            .find(|(s, _, _)| *s == seq)
            .unwrap_or_else(|| panic!("no golden record {seq}"));
        assert_eq!(shown, hex(bytes), "{line} ({name})");
        checked += 1;
    }
    assert!(checked >= RECORD_TYPES, "only {checked} examples found");
}
