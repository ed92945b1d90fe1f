//! The run state on canned journals: replay matching, non-determinism, and what completions
//! from the world become.

use serde_json::{Value, json};

use super::*;
use crate::codec::input_hash;
use crate::context::StepSet;
use crate::engine::{AnswerAck, CancelAck};
use crate::error::DeliverError;
use crate::record::{Entry, GateAnswer};
use crate::record::{GateKind, GateSpec};
use crate::task::RetryPolicy;
use crate::testing::{JournalBuilder, task_input_hash};

fn run_id() -> RunId {
    RunId::from_u128(42)
}

fn task_command(step: Step, task: &str, input: Value, retry: Option<RetryPolicy>) -> Command {
    let hash = task_input_hash(task, &input);
    Command {
        step,
        kind: StepKind::Task,
        name: task.into(),
        hash,
        detail: CommandDetail::Task {
            own_options: retry.is_some(),
            call: Box::new(crate::replay::TaskCallSpec {
                task: task.into(),
                options: retry
                    .map(|retry| TaskOptions {
                        retry,
                        ..TaskOptions::default()
                    })
                    .unwrap_or_default(),
                input,
                registration: None,
                first_attempt: 1,
                held: false,
                hash,
            }),
        },
    }
}

fn gate_spec(timeout_ms: Option<u64>) -> GateSpec {
    GateSpec {
        timeout_ms,
        ..crate::testing::gate_spec(GateKind::Approval, "ship?")
    }
}

fn gate_command(step: Step, spec: GateSpec) -> Command {
    Command {
        step,
        kind: StepKind::Gate,
        name: spec.title.clone(),
        hash: input_hash(&super::gate_identity(&spec)),
        detail: CommandDetail::Gate { spec },
    }
}

/// Applies every record after the start, collecting completions.
fn apply_all(state: &mut RunState, journal: &[Entry]) -> Result<Vec<Resolved>, NonDeterminism> {
    let mut out = Vec::new();
    for e in &journal[1..] {
        state.apply(e.seq, &e.record, &mut out)?;
    }
    Ok(out)
}

/// Applies records produced live, with the seqs that follow `next`.
fn apply_live(state: &mut RunState, next: &mut u64, records: &[Record]) -> Vec<Resolved> {
    let mut out = Vec::new();
    for r in records {
        state
            .apply(*next, r, &mut out)
            .expect("live records apply cleanly");
        *next += 1;
    }
    out
}

#[test]
fn a_replayed_task_step_resolves_with_its_journaled_result() {
    let journal = JournalBuilder::start("order", json!({}))
        .task("charge", json!(5))
        .task_ok(0, 1, json!("paid"))
        .build();
    let mut state = RunState::new(run_id());
    state
        .request_replayed(
            task_command(0, "charge", json!(5), None),
            &journal[1].record,
        )
        .expect("the step matches its journal entry");
    let resolved = apply_all(&mut state, &journal).expect("no divergence");
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].step, 0);
    assert_eq!(resolved[0].seq, 2);
    assert!(matches!(&resolved[0].resolution, Resolution::Task(Ok(v)) if *v == json!("paid")));
    assert!(
        state.rearm().is_empty(),
        "a completed step needs nothing again"
    );
}

#[test]
fn another_task_at_a_journaled_step_is_nd001_with_both_sides() {
    let journal = JournalBuilder::start("order", json!({}))
        .task("charge", json!(5))
        .build();
    let mut state = RunState::new(run_id());
    let nd = state
        .request_replayed(
            task_command(0, "refund", json!(5), None),
            &journal[1].record,
        )
        .expect_err("a different task diverges");
    assert_eq!(nd.code(), "MAG-ND001");
    assert_eq!(nd.step, 0);
    let text = nd.to_string();
    assert!(text.contains("the journal has task `charge`"), "{text}");
    assert!(
        text.contains("the code now requests task `refund`"),
        "{text}"
    );
}

#[test]
fn the_same_task_with_another_input_is_nd001_naming_the_input() {
    let journal = JournalBuilder::start("order", json!({}))
        .task("charge", json!(5))
        .build();
    let mut state = RunState::new(run_id());
    let nd = state
        .request_replayed(
            task_command(0, "charge", json!(6), None),
            &journal[1].record,
        )
        .expect_err("a different input diverges");
    assert!(matches!(
        nd.divergence,
        Divergence::Mismatch {
            different_input: true,
            ..
        }
    ));
    assert!(nd.to_string().contains("with a different input"));
    // Both inputs are shown: the change can be found without reading the journal.
    assert!(
        nd.to_string()
            .contains("with a different input (journaled: 5; now: 6)"),
        "{nd}"
    );
    // The report names the usual cause that is not a change of code: an unordered collection.
    assert!(nd.to_string().contains("from a HashMap or HashSet"), "{nd}");
    assert!(nd.to_string().contains("patch marker"), "{nd}");
}

#[test]
fn a_journaled_step_the_code_no_longer_asks_for_is_nd002() {
    let journal = JournalBuilder::start("order", json!({}))
        .task("charge", json!(5))
        .task_ok(0, 1, json!("paid"))
        .build();
    let mut state = RunState::new(run_id());
    let nd = apply_all(&mut state, &journal).expect_err("step 0 was never requested");
    assert_eq!(nd.code(), "MAG-ND002");
    assert_eq!(
        nd.divergence,
        Divergence::Missing {
            journal: StepIdentity::new(StepKind::Task, "charge"),
        }
    );
}

#[test]
fn a_retryable_failure_backs_off_on_a_durable_timer_then_starts_attempt_two() {
    let mut state = RunState::new(run_id());
    let retry = RetryPolicy::exponential(
        3,
        std::time::Duration::from_millis(100),
        std::time::Duration::from_secs(1),
    );
    let mut next = 1;
    let live = state.request_live(task_command(0, "charge", json!(1), Some(retry)), 1_000);
    assert_eq!(live.effects, vec![Effect::Execute(0)]);
    apply_live(&mut state, &mut next, &live.records);
    assert_eq!(state.attempt(0).map(|(_, _, a)| a), Some(1));

    let failed = state.task_done(0, 1, Err(TaskError::retryable("down")), false, 5_000);
    assert!(matches!(
        failed.records.as_slice(),
        [
            Record::TaskResult {
                is_final: false,
                ..
            },
            Record::TimerSet {
                fire_at_ms: 5_100,
                ..
            }
        ]
    ));
    assert_eq!(
        failed.effects,
        vec![Effect::Timer(0, 5_100, TimerPurpose::Retry)]
    );
    assert!(apply_live(&mut state, &mut next, &failed.records).is_empty());
    assert!(
        !state.waits_beyond(6_000),
        "a retry due soon keeps the run in memory"
    );
    assert!(state.waits_beyond(5_000), "a retry due later lets it leave");
    assert_eq!(
        state.rearm(),
        vec![Effect::Timer(0, 5_100, TimerPurpose::Retry)]
    );

    let due = state.timer_due(0, TimerPurpose::Retry);
    assert!(matches!(
        due.records.as_slice(),
        [
            Record::TimerFired { step: 0 },
            Record::TaskStarted { attempt: 2, .. }
        ]
    ));
    apply_live(&mut state, &mut next, &due.records);
    let stale = state.task_done(0, 1, Ok(json!("late")), false, 6_000);
    assert!(
        matches!(stale.records.as_slice(), [Record::Ignored { step: 0, .. }]),
        "a result of an earlier attempt is ignored"
    );
    let ok = state.task_done(0, 2, Ok(json!("paid")), false, 6_000);
    let resolved = apply_live(&mut state, &mut next, &ok.records);
    assert!(matches!(&resolved[0].resolution, Resolution::Task(Ok(v)) if *v == json!("paid")));
}

#[test]
fn a_dropped_step_is_not_retried() {
    let mut state = RunState::new(run_id());
    let retry = RetryPolicy::exponential(
        3,
        std::time::Duration::from_millis(100),
        std::time::Duration::from_secs(1),
    );
    let mut next = 1;
    let live = state.request_live(task_command(0, "charge", json!(1), Some(retry)), 1_000);
    apply_live(&mut state, &mut next, &live.records);
    let failed = state.task_done(0, 1, Err(TaskError::retryable("down")), true, 5_000);
    assert!(matches!(
        failed.records.as_slice(),
        [Record::TaskResult { is_final: true, .. }]
    ));
}

#[test]
fn a_gate_takes_the_first_completion_and_ignores_the_other() {
    // Answered first: the timeout is ignored.
    let mut state = RunState::new(run_id());
    let mut next = 1;
    let live = state.request_live(gate_command(0, gate_spec(Some(60_000))), 1_000);
    assert_eq!(
        live.effects,
        vec![Effect::Timer(0, 61_000, TimerPurpose::GateTimeout)]
    );
    apply_live(&mut state, &mut next, &live.records);
    assert_eq!(state.live_status(), RunStatus::Waiting);
    assert!(
        state.waits_beyond(10_000),
        "a run waiting on a person can leave memory"
    );
    let (record, ack) = state
        .answer(0, GateAnswer::approve())
        .expect("a valid answer");
    assert_eq!(ack, AnswerAck::Applied);
    let resolved = apply_live(&mut state, &mut next, &[record]);
    assert!(matches!(
        resolved[0].resolution,
        Resolution::Gate(GateOutcome::Answered(_))
    ));
    assert_eq!(state.live_status(), RunStatus::Running);
    let late = state.timer_due(0, TimerPurpose::GateTimeout);
    assert!(
        matches!(late.records.as_slice(), [Record::Ignored { step: 0, what, .. }] if what == "gate timeout")
    );
    let (again, ack) = state
        .answer(0, GateAnswer::reject())
        .expect("a valid answer");
    assert_eq!(ack, AnswerAck::Ignored);
    assert!(matches!(again, Record::Ignored { .. }));

    // Timed out first: a late answer is ignored.
    let journal = JournalBuilder::start("order", json!({}))
        .gate(gate_spec(Some(60_000)), Some(61_000))
        .timer_fired(0)
        .build();
    let mut state = RunState::new(run_id());
    state
        .request_replayed(gate_command(0, gate_spec(Some(60_000))), &journal[1].record)
        .expect("the gate matches");
    let resolved = apply_all(&mut state, &journal).expect("no divergence");
    assert!(matches!(
        resolved[0].resolution,
        Resolution::Gate(GateOutcome::TimedOut)
    ));
    let (_, ack) = state
        .answer(0, GateAnswer::approve())
        .expect("a valid answer");
    assert_eq!(ack, AnswerAck::Ignored);
    assert!(state.answer(0, GateAnswer::choose("x")).is_err());
    assert!(matches!(
        state.answer(7, GateAnswer::approve()),
        Err(DeliverError::ItemNotFound(_))
    ));
}

#[test]
fn a_signal_sent_before_the_wait_is_buffered_and_delivered_to_it() {
    let mut state = RunState::new(run_id());
    let mut next = 1;
    let early = state.signal("go".into(), json!(1), &StepSet::default());
    assert!(matches!(early, Record::SignalReceived { step: None, .. }));
    apply_live(&mut state, &mut next, &[early]);
    let wait = Command {
        step: 0,
        kind: StepKind::Signal,
        name: "go".into(),
        hash: input_hash(&Value::String("go".into())),
        detail: CommandDetail::Signal,
    };
    let live = state.request_live(wait, 1_000);
    assert!(matches!(
        live.records.as_slice(),
        [
            Record::SignalAwaited { step: 0, .. },
            Record::SignalDelivered {
                step: 0,
                signal_seq: 1
            }
        ]
    ));
    let resolved = apply_live(&mut state, &mut next, &live.records);
    assert!(matches!(&resolved[0].resolution, Resolution::Signal(v) if *v == json!(1)));
}

#[test]
fn cancellation_ends_every_pending_step_once() {
    let mut state = RunState::new(run_id());
    let mut next = 1;
    for c in [
        task_command(0, "charge", json!(1), None),
        gate_command(1, gate_spec(None)),
    ] {
        let live = state.request_live(c, 1_000);
        apply_live(&mut state, &mut next, &live.records);
    }
    let (actions, ack) = state.cancel("stop".into(), |why| format!("parent: {why}"));
    assert_eq!(ack, CancelAck::Requested);
    assert!(actions.effects.is_empty(), "no child to tell");
    // The attempt in flight ends with a final result of its own; the gate's step does not
    // need one.
    assert_eq!(
        actions.records,
        [
            Record::CancelRequested {
                reason: "stop".into()
            },
            Record::TaskResult {
                step: 0,
                attempt: 1,
                outcome: "cancelled".into(),
                output: Value::Null,
                error: Some("stop".into()),
                is_final: true,
            },
        ]
    );
    // Each step is resolved once: by the cancel, not again by the attempt's result.
    let resolved = apply_live(&mut state, &mut next, &actions.records);
    assert_eq!(resolved.len(), 2);
    assert!(
        resolved
            .iter()
            .all(|r| matches!(&r.resolution, Resolution::Cancelled(why) if why == "stop"))
    );
    assert_eq!(state.live_status(), RunStatus::Running, "the gate closed");
    assert_eq!(
        state.cancel("again".into(), str::to_string).1,
        CancelAck::AlreadyRequested
    );
    apply_live(
        &mut state,
        &mut next,
        &[Record::Status {
            status: RunStatus::Cancelled,
            reason: None,
        }],
    );
    assert_eq!(
        state.cancel("late".into(), str::to_string).1,
        CancelAck::AlreadyFinished
    );
    assert!(matches!(
        state.signal("go".into(), json!(1), &StepSet::default()),
        Record::Ignored { what, .. } if what == "signal `go`"
    ));
}

#[test]
fn rearm_after_replay_acts_again_on_what_still_waits() {
    let child = RunId::from_u128(7);
    let journal = JournalBuilder::start("order", json!({}))
        .task("charge", json!(1))
        .sleep(90_000)
        .child("ship", child, &json!(2))
        .build();
    let mut state = RunState::new(run_id());
    let commands = [
        task_command(0, "charge", json!(1), None),
        Command {
            step: 1,
            kind: StepKind::Timer,
            name: "sleep".into(),
            hash: 0,
            detail: CommandDetail::Timer {
                fire_at_ms: 90_000,
                asked_at_ms: 0,
            },
        },
        Command {
            step: 2,
            kind: StepKind::Child,
            name: "ship".into(),
            hash: input_hash(&json!(2)),
            detail: CommandDetail::Child {
                request: Box::new(ChildRequest::code("ship", json!(2))),
                child_run_id: child,
            },
        },
    ];
    for (c, e) in commands.into_iter().zip(&journal[1..]) {
        state.request_replayed(c, &e.record).expect("matches");
    }
    apply_all(&mut state, &journal).expect("no divergence");
    assert_eq!(
        state.rearm(),
        vec![
            Effect::Execute(0),
            Effect::Timer(1, 90_000, TimerPurpose::Sleep),
            Effect::CheckChild(2),
        ]
    );
    assert_eq!(state.child(2).map(|(id, _)| id), Some(child));
    assert!(
        !state.waits_beyond(0),
        "a running attempt keeps the run in memory"
    );
}

#[test]
fn an_ended_run_knows_its_gates_for_late_answers() {
    let journal = JournalBuilder::start("order", json!({}))
        .gate(gate_spec(None), None)
        .answer(0, GateAnswer::approve())
        .status(RunStatus::Done, None)
        .build();
    let mut state = RunState::new(run_id());
    let journaled = FirstRecords::of(&journal);
    assert_eq!(journaled.get(0), Some(1), "the gate's first record");
    state
        .apply(3, &journal[3].record, &mut Vec::new())
        .expect("a status applies");
    state.load_ended(&journal, journaled);
    let (record, ack) = state
        .answer(0, GateAnswer::approve())
        .expect("the gate is known");
    assert_eq!(ack, AnswerAck::Ignored);
    assert!(matches!(record, Record::Ignored { step: 0, .. }));
    assert!(state.answer(0, GateAnswer::choose("nope")).is_err());
}

fn child_command(step: Step, workflow: &str, child: RunId) -> Command {
    Command {
        step,
        kind: StepKind::Child,
        name: workflow.into(),
        hash: input_hash(&json!(step)),
        detail: CommandDetail::Child {
            request: Box::new(ChildRequest::code(workflow, json!(step))),
            child_run_id: child,
        },
    }
}

#[test]
fn cancelling_a_run_journals_the_cancellation_of_each_running_child() {
    let (a, b) = (RunId::from_u128(7), RunId::from_u128(8));
    let mut state = RunState::new(run_id());
    let mut next = 1;
    for c in [child_command(0, "ship", a), child_command(1, "bill", b)] {
        let live = state.request_live(c, 1_000);
        apply_live(&mut state, &mut next, &live.records);
    }
    // The first child ended before the cancellation: it is not cancelled.
    apply_live(
        &mut state,
        &mut next,
        &[Record::ChildFinished {
            step: 0,
            status: RunStatus::Done,
            result: json!(1),
            reason: None,
        }],
    );
    let (actions, ack) = state.cancel("stop".into(), |why| format!("parent was cancelled: {why}"));
    assert_eq!(ack, CancelAck::Requested);
    assert!(matches!(
        actions.records.as_slice(),
        [
            Record::CancelRequested { reason },
            Record::ChildCancelRequested { step: 1, child_run_id, reason: to_child },
        ] if reason == "stop" && *child_run_id == b && to_child == "parent was cancelled: stop"
    ));
    assert_eq!(actions.effects, vec![Effect::CancelChild(1)]);
    let resolved = apply_live(&mut state, &mut next, &actions.records);
    assert!(matches!(
        resolved.as_slice(),
        [Resolved { step: 1, resolution: Resolution::Cancelled(why), .. }] if why == "stop"
    ));
    assert_eq!(
        state.child_cancel(1),
        Some((b, "parent was cancelled: stop"))
    );
    // Asked once: the run's end does not ask again.
    assert!(state.cancel_children(|_| "ended".into()).records.is_empty());
    // After a restart the child is told again.
    assert_eq!(state.rearm(), vec![Effect::CancelChild(1)]);
}

#[test]
fn a_dropped_child_step_is_cancelled_once_and_forgotten_when_the_child_ends() {
    let child = RunId::from_u128(9);
    let mut state = RunState::new(run_id());
    let mut next = 1;
    let live = state.request_live(child_command(0, "ship", child), 1_000);
    apply_live(&mut state, &mut next, &live.records);
    let cancel = state.cancel_child(0, || "dropped".into());
    assert_eq!(cancel.effects, vec![Effect::CancelChild(0)]);
    apply_live(&mut state, &mut next, &cancel.records);
    assert!(state.cancel_child(0, || "again".into()).records.is_empty());
    assert!(state.cancel_children(|_| "ended".into()).records.is_empty());
    assert_eq!(
        state.rearm(),
        vec![Effect::CheckChild(0), Effect::CancelChild(0)],
        "the step still waits for the child's end, and the child is told again"
    );
    apply_live(
        &mut state,
        &mut next,
        &[Record::ChildFinished {
            step: 0,
            status: RunStatus::Cancelled,
            result: Value::Null,
            reason: Some("dropped".into()),
        }],
    );
    assert_eq!(state.child_cancel(0), None);
    assert!(state.rearm().is_empty());
}

#[test]
fn unfinished_children_are_read_from_a_journal() {
    let (a, b, c) = (
        RunId::from_u128(1),
        RunId::from_u128(2),
        RunId::from_u128(3),
    );
    let journal = JournalBuilder::start("order", json!({}))
        .child("a", a, &json!(1))
        .child("b", b, &json!(2))
        .child("c", c, &json!(3))
        .child_finished(0, RunStatus::Done, json!(1))
        .record(Record::ChildCancelRequested {
            step: 1,
            child_run_id: b,
            reason: "x".into(),
        })
        .build();
    assert_eq!(unfinished_children(&journal), vec![(2, c)]);
}

#[test]
fn an_unfinished_attempt_is_restarted_on_record_and_each_restart_counts() {
    // An old journal without restart records: the attempt ran once.
    let journal = JournalBuilder::start("order", json!({}))
        .task("charge", json!(1))
        .build();
    let mut state = RunState::new(run_id());
    state
        .request_replayed(
            task_command(0, "charge", json!(1), None),
            &journal[1].record,
        )
        .expect("matches");
    apply_all(&mut state, &journal).expect("no divergence");
    let first = state.restarts("host:1");
    assert_eq!(
        first,
        vec![Record::TaskRestarted {
            step: 0,
            attempt: 1,
            execution: 2,
            worker: "host:1".into(),
        }]
    );
    // Journaled, it replays without asking anything of the code, and the next recovery
    // counts on from it.
    let mut out = Vec::new();
    state.apply(2, &first[0], &mut out).expect("no divergence");
    assert!(out.is_empty(), "a restart completes nothing");
    assert_eq!(state.rearm(), vec![Effect::Execute(0)]);
    assert!(matches!(
        state.restarts("host:2").as_slice(),
        [Record::TaskRestarted {
            execution: 3,
            attempt: 1,
            ..
        }]
    ));
}

#[test]
fn a_finished_task_is_not_restarted() {
    let journal = JournalBuilder::start("order", json!({}))
        .task("charge", json!(1))
        .task_ok(0, 1, json!(2))
        .build();
    let mut state = RunState::new(run_id());
    state
        .request_replayed(
            task_command(0, "charge", json!(1), None),
            &journal[1].record,
        )
        .expect("matches");
    apply_all(&mut state, &journal).expect("no divergence");
    assert!(state.restarts("host:1").is_empty());
}

#[test]
fn a_dropped_gate_is_withdrawn_once_and_later_answers_and_its_timeout_are_not_applied() {
    let mut state = RunState::new(run_id());
    let mut next = 1;
    let live = state.request_live(gate_command(0, gate_spec(Some(60_000))), 1_000);
    apply_live(&mut state, &mut next, &live.records);
    assert_eq!(state.live_status(), RunStatus::Waiting);

    let withdraw = state.withdraw_gate(0, || "dropped".into());
    assert!(
        matches!(withdraw.records.as_slice(), [Record::GateWithdrawn { step: 0, reason }] if reason == "dropped")
    );
    assert!(withdraw.effects.is_empty());
    let resolved = apply_live(&mut state, &mut next, &withdraw.records);
    assert!(resolved.is_empty(), "nobody awaits it: {resolved:?}");
    assert_eq!(
        state.live_status(),
        RunStatus::Running,
        "a withdrawn gate is not open"
    );
    assert!(state.withdraw_gate(0, || "again".into()).records.is_empty());
    assert!(
        state
            .timer_due(0, TimerPurpose::GateTimeout)
            .records
            .is_empty(),
        "its timeout is journaled by nobody"
    );
    let (late, ack) = state
        .answer(0, GateAnswer::approve())
        .expect("a valid answer");
    assert_eq!(ack, AnswerAck::Ignored);
    assert!(
        matches!(
            late,
            Record::Ignored {
                step: 0,
                answer: Some(_),
                ..
            }
        ),
        "the late answer is kept on the item: {late:?}"
    );

    // A gate that completed first is not withdrawn.
    let mut state = RunState::new(run_id());
    let mut next = 1;
    let live = state.request_live(gate_command(0, gate_spec(None)), 1_000);
    apply_live(&mut state, &mut next, &live.records);
    let (answered, _) = state.answer(0, GateAnswer::reject()).unwrap();
    apply_live(&mut state, &mut next, &[answered]);
    assert!(state.withdraw_gate(0, || "late".into()).records.is_empty());
}
