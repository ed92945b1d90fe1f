//! Engine behaviour through the untyped API, on the in-memory and redb stores.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use magrathea_core::{
    AnswerAck, CancelAck, ChildRequest, Engine, EngineBuilder, GateAnswer, GateKind, GateOutcome,
    GateSpec, MemoryStore, Record, RetryPolicy, RunFilter, RunId, RunStatus, StartRequest, Store,
    TaskError, TaskOptions, TaskRegistration, WorkflowError, WorkflowRegistration,
};
use serde_json::{Value, json};

fn echo_task() -> TaskRegistration {
    TaskRegistration::new("echo", TaskOptions::default(), |v, _| async move { Ok(v) })
}

fn gate(kind: GateKind, timeout_ms: Option<u64>) -> GateSpec {
    GateSpec {
        kind,
        title: "approve?".into(),
        body: String::new(),
        options: vec!["retry".into(), "abort".into()],
        assigned_to: "@ops".into(),
        criticality: "NORMAL".into(),
        tags: vec![],
        timeout_ms,
        meta: Value::Null,
    }
}

async fn engine_with(
    store: Arc<dyn Store>,
    extra: impl FnOnce(EngineBuilder) -> EngineBuilder,
) -> Engine {
    extra(Engine::builder().store(store).task(echo_task()))
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn sequential_tasks_run_in_order_and_the_result_is_journaled() {
    let wf = WorkflowRegistration::new("seq", "1", |ctx, input| async move {
        let mut acc = Vec::new();
        for i in 0..5 {
            acc.push(ctx.task("echo", json!(i)).await?);
        }
        Ok(json!({ "input": input, "acc": acc }))
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let run = engine
        .start(StartRequest::code("seq", json!("x")))
        .await
        .unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(
        view.result,
        Some(json!({"input": "x", "acc": [0, 1, 2, 3, 4]}))
    );
    let journal = engine.journal(run).unwrap();
    let types: Vec<_> = journal.iter().map(|e| e.record.type_name()).collect();
    assert_eq!(types[0], "StartRecord");
    assert_eq!(
        types.iter().filter(|t| **t == "TaskStartedRecord").count(),
        5
    );
    assert_eq!(
        types.iter().filter(|t| **t == "TaskResultRecord").count(),
        5
    );
    assert_eq!(&types[types.len() - 2..], ["ResultRecord", "StatusRecord"]);
    assert!(journal.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
}

#[tokio::test]
async fn a_failing_task_is_retried_per_its_policy_and_each_attempt_is_journaled() {
    let calls = Arc::new(AtomicU32::new(0));
    // (call number, attempt number the task saw): checked after the run, since a panic in a
    // task body is only a retryable failure to the engine.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (c, s) = (calls.clone(), seen.clone());
    let flaky = TaskRegistration::new(
        "flaky",
        TaskOptions::default().retry(RetryPolicy::fixed(3, Duration::from_millis(5))),
        move |_, ctx| {
            let (c, s) = (c.clone(), s.clone());
            async move {
                let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                s.lock().unwrap().push((n, ctx.attempt));
                if n < 3 {
                    Err(TaskError::retryable(format!("boom {n}")))
                } else {
                    Ok(json!(n))
                }
            }
        },
    );
    let wf = WorkflowRegistration::new("retry", "", |ctx, _| async move {
        Ok(ctx.task("flaky", Value::Null).await?)
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf).task(flaky)).await;
    let run = engine
        .start(StartRequest::code("retry", Value::Null))
        .await
        .unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.result, Some(json!(3)));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(1, 1), (2, 2), (3, 3)],
        "each call sees its attempt number"
    );
    let attempts: Vec<(u32, String, bool)> = engine
        .journal(run)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.record {
            Record::TaskResult {
                attempt,
                outcome,
                is_final,
                ..
            } => Some((attempt, outcome.into_string(), is_final)),
            _ => None,
        })
        .collect();
    assert_eq!(
        attempts,
        vec![
            (1, "technical_error".into(), false),
            (2, "technical_error".into(), false),
            (3, "success".into(), true)
        ]
    );
}

#[tokio::test]
async fn exhausted_retries_fail_the_run_with_the_task_error() {
    let always = TaskRegistration::new(
        "always",
        TaskOptions::default().retry(RetryPolicy::fixed(2, Duration::ZERO)),
        |_, _| async { Err::<Value, _>(TaskError::retryable("nope")) },
    );
    let wf = WorkflowRegistration::new("fails", "", |ctx, _| async move {
        Ok(ctx.task("always", Value::Null).await?)
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| {
        b.workflow(wf).task(always)
    })
    .await;
    let run = engine
        .start(StartRequest::code("fails", Value::Null))
        .await
        .unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Failed);
    assert!(view.reason.unwrap().contains("nope"));
}

/// A task that panics fails its attempt with the panic's message and where in the code it
/// happened, as a workflow's panic is reported.
#[tokio::test]
async fn a_panicking_task_is_reported_with_the_place_of_its_panic() {
    let panics = TaskRegistration::new(
        "panics",
        TaskOptions::default().retry(RetryPolicy::fixed(1, Duration::ZERO)),
        |_, _| async { panic!("the task went boom") },
    );
    let line = line!() - 2;
    let wf = WorkflowRegistration::new("panicky", "", |ctx, _| async move {
        Ok(ctx.task("panics", Value::Null).await?)
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| {
        b.workflow(wf).task(panics)
    })
    .await;
    let run = engine
        .start(StartRequest::code("panicky", Value::Null))
        .await
        .unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Failed);
    let reason = view.reason.unwrap();
    assert!(
        reason.contains(&format!("task panicked at {}:{line}:", file!()))
            && reason.contains("the task went boom"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_per_attempt_timeout_fails_the_attempt_with_kind_timeout() {
    let slow = TaskRegistration::new(
        "slow",
        TaskOptions::default()
            .retry(RetryPolicy::none())
            .timeout(Duration::from_millis(20)),
        |_, _| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(Value::Null)
        },
    );
    let wf = WorkflowRegistration::new("t", "", |ctx, _| async move {
        match ctx.task("slow", Value::Null).await {
            Err(e) => Ok(json!(e.kind)),
            Ok(_) => Ok(json!("finished")),
        }
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf).task(slow)).await;
    let run = engine
        .start(StartRequest::code("t", Value::Null))
        .await
        .unwrap();
    assert_eq!(
        engine.wait(run).await.unwrap().result,
        Some(json!("timeout"))
    );
}

#[tokio::test]
async fn an_inbox_of_one_scope_or_tenant_lists_only_its_items() {
    let wf = WorkflowRegistration::new("g", "", |ctx, _| async move {
        ctx.gate(gate(GateKind::Approval, None)).await;
        Ok(Value::Null)
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let mut runs = Vec::new();
    for scope in ["acme/shop", "acme/shopping", "acmex/shop", "globex/labs"] {
        let mut req = StartRequest::code("g", Value::Null);
        req.scope = scope.into();
        let run = engine.start(req).await.unwrap();
        assert_eq!(
            engine.wait_settled(run).await.unwrap().status,
            RunStatus::Waiting
        );
        runs.push(run);
    }
    let of = |runs: RunFilter, keep: &dyn Fn(&str) -> bool| {
        let mut found: Vec<_> = engine
            .inbox_of(magrathea_core::InboxFilter::Pending, &runs, |s| {
                keep(s.scope.as_str())
            })
            .unwrap()
            .into_iter()
            .map(|i| i.workflow_run_id)
            .collect();
        found.sort();
        found
    };
    let sorted = |mut v: Vec<RunId>| {
        v.sort();
        v
    };
    let project = RunFilter {
        scope: Some("acme/shop".into()),
        ..RunFilter::default()
    };
    assert_eq!(of(project, &|_| true), vec![runs[0]]);
    let tenant = RunFilter {
        scope_prefix: Some("acme/".into()),
        ..RunFilter::default()
    };
    assert_eq!(
        of(tenant.clone(), &|_| true),
        sorted(vec![runs[0], runs[1]])
    );
    // `keep` narrows the selection further.
    assert_eq!(of(tenant, &|s| s != "acme/shopping"), vec![runs[0]]);
    let all = engine.inbox(magrathea_core::InboxFilter::Pending).unwrap();
    assert_eq!(all.len(), 4, "{all:?}");
    // One item, looked up by id, is found only when its run's scope is kept.
    let globex = all.iter().find(|i| i.workflow_run_id == runs[3]).unwrap();
    let in_acme = |s: &magrathea_core::RunSummary| s.scope.as_str().starts_with("acme/");
    assert!(matches!(
        engine.inbox_item_of(&globex.id, in_acme),
        Err(magrathea_core::DeliverError::ItemNotFound(_))
    ));
    let own = all.iter().find(|i| i.workflow_run_id == runs[0]).unwrap();
    assert_eq!(engine.inbox_item_of(&own.id, in_acme).unwrap().id, own.id);
}

#[tokio::test]
async fn the_recent_runs_of_an_inbox_are_those_of_its_scope_not_of_the_whole_store() {
    let gated = WorkflowRegistration::new("g", "", |ctx, _| async move {
        ctx.gate(gate(GateKind::Approval, None)).await;
        Ok(Value::Null)
    });
    let quick = WorkflowRegistration::new("q", "", |_ctx, _| async move { Ok(Value::Null) });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| {
        b.workflow(gated).workflow(quick)
    })
    .await;
    let mut req = StartRequest::code("g", Value::Null);
    req.scope = "acme/shop".into();
    let run = engine.start(req).await.unwrap();
    engine.wait_settled(run).await.unwrap();
    let item = engine.inbox(magrathea_core::InboxFilter::Pending).unwrap()[0]
        .id
        .clone();
    engine
        .answer_gate(&item, GateAnswer::approve())
        .await
        .unwrap();
    assert_eq!(engine.wait(run).await.unwrap().status, RunStatus::Done);
    // Another tenant finishes more runs, later, than the inbox looks back over.
    for _ in 0..4 {
        let mut req = StartRequest::code("q", Value::Null);
        req.scope = "globex/labs".into();
        let other = engine.start(req).await.unwrap();
        assert_eq!(engine.wait(other).await.unwrap().status, RunStatus::Done);
    }
    let acme = RunFilter {
        scope: Some("acme/shop".into()),
        ..RunFilter::default()
    };
    let answered = engine
        .inbox_of(magrathea_core::InboxFilter::Recent(2), &acme, |_| true)
        .unwrap();
    assert_eq!(
        answered.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
        vec![item.as_str()]
    );
    assert_eq!(answered[0].status, magrathea_core::InboxStatus::Answered);
    // Runs of the scope started later that have not ended (here waiting on their gates) do
    // not count among the recent finished ones: the answered item stays, beside theirs.
    for _ in 0..3 {
        let mut req = StartRequest::code("g", Value::Null);
        req.scope = "acme/shop".into();
        let run = engine.start(req).await.unwrap();
        engine.wait_settled(run).await.unwrap();
    }
    let listed = engine
        .inbox_of(magrathea_core::InboxFilter::Recent(2), &acme, |_| true)
        .unwrap();
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert!(listed.iter().any(|i| i.id == item), "{listed:?}");
}

#[tokio::test]
async fn gates_are_answered_through_the_engine_and_answering_twice_is_ignored() {
    let wf = WorkflowRegistration::new("g", "", |ctx, _| async move {
        match ctx.gate(gate(GateKind::Approval, None)).await {
            GateOutcome::Answered(a) => Ok(a.value),
            other => Err(WorkflowError::failed(format!("{other:?}"))),
        }
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let run = engine
        .start(StartRequest::code("g", Value::Null))
        .await
        .unwrap();
    let view = engine.wait_settled(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Waiting);
    let items = engine.inbox(magrathea_core::InboxFilter::Pending).unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].workflow_run_id, run);
    let bad = engine
        .answer_gate(&items[0].id, GateAnswer::text("hi"))
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("[MAG-GT002]"), "{bad}");
    let ack = engine
        .answer_gate(&items[0].id, GateAnswer::approve())
        .await
        .unwrap();
    assert_eq!(ack, AnswerAck::Applied);
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.result, Some(json!({"approved": true})));
    let again = engine
        .answer_gate(&items[0].id, GateAnswer::reject())
        .await
        .unwrap();
    assert_eq!(again, AnswerAck::Ignored);
    assert!(
        engine
            .journal(run)
            .unwrap()
            .iter()
            .any(|e| matches!(e.record, Record::Ignored { .. }))
    );
    assert!(
        engine
            .inbox(magrathea_core::InboxFilter::Pending)
            .unwrap()
            .is_empty()
    );
    // The item keeps the answer that decided it, not the one that came after.
    let item = engine.inbox_item(&items[0].id).unwrap();
    assert_eq!(item.status, magrathea_core::InboxStatus::Answered);
    assert_eq!(
        item.answer.map(|a| a.value),
        Some(json!({"approved": true}))
    );
}

/// Answers and signals sent to a run that has ended are acknowledged as ignored, and the first
/// hundred of them journaled: past that, nothing more is written, so whoever may answer cannot
/// grow an ended run's journal without bound. A comment beyond 16 KiB is refused outright.
#[tokio::test]
async fn an_ended_run_journals_a_bounded_number_of_late_answers_and_signals() {
    let wf = WorkflowRegistration::new("g", "", |ctx, _| async move {
        match ctx.gate(gate(GateKind::Approval, None)).await {
            GateOutcome::Answered(a) => Ok(a.value),
            other => Err(WorkflowError::failed(format!("{other:?}"))),
        }
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let run = engine
        .start(StartRequest::code("g", Value::Null))
        .await
        .unwrap();
    engine.wait_settled(run).await.unwrap();
    let id = engine.inbox(magrathea_core::InboxFilter::Pending).unwrap()[0]
        .id
        .clone();
    let long = GateAnswer {
        comment: Some("x".repeat(magrathea_core::MAX_ANSWER_COMMENT_BYTES + 1)),
        ..GateAnswer::approve()
    };
    let refused = engine.answer_gate(&id, long).await.unwrap_err();
    assert!(refused.to_string().contains("[MAG-GT002]"), "{refused}");
    assert_eq!(
        engine
            .answer_gate(&id, GateAnswer::approve())
            .await
            .unwrap(),
        AnswerAck::Applied
    );
    assert_eq!(engine.wait(run).await.unwrap().status, RunStatus::Done);
    let records = || engine.journal(run).unwrap().len();
    let ended = records();
    for i in 0..120 {
        let ack = engine.answer_gate(&id, GateAnswer::reject()).await.unwrap();
        assert_eq!(ack, AnswerAck::Ignored, "answer {i}");
        engine.signal(run, "late", json!(i)).await.unwrap();
    }
    let late = engine.journal(run).unwrap()[ended..]
        .iter()
        .filter(|e| matches!(e.record, Record::Ignored { .. }))
        .count();
    assert_eq!((late, records() - ended), (100, 100));
    // The decided answer stands.
    let item = engine.inbox_item(&id).unwrap();
    assert_eq!(
        item.answer.map(|a| a.value),
        Some(json!({"approved": true}))
    );
}

#[tokio::test]
async fn a_gate_answered_after_its_timeout_fired_is_ignored_and_recorded() {
    let wf = WorkflowRegistration::new("gt", "", |ctx, _| async move {
        match ctx.gate(gate(GateKind::Decision, Some(30))).await {
            GateOutcome::TimedOut => Ok(json!("timeout")),
            GateOutcome::Answered(a) => Ok(a.value),
            GateOutcome::Cancelled(r) => Err(WorkflowError::cancelled(r)),
        }
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let run = engine
        .start(StartRequest::code("gt", Value::Null))
        .await
        .unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.result, Some(json!("timeout")));
    let id = format!("{run}-0");
    let ack = engine
        .answer_gate(&id, GateAnswer::choose("retry"))
        .await
        .unwrap();
    assert_eq!(ack, AnswerAck::Ignored);
    let journal = engine.journal(run).unwrap();
    assert!(
        journal
            .iter()
            .any(|e| matches!(&e.record, Record::Ignored { what, .. } if what == "gate answer"))
    );
    assert!(
        !journal
            .iter()
            .any(|e| matches!(e.record, Record::GateAnswered { .. }))
    );
    // The answer still lands on the inbox item (reference §3.4), which stays timed out; a
    // later one does not replace it.
    let item = engine.inbox_item(&id).unwrap();
    assert_eq!(item.status, magrathea_core::InboxStatus::TimedOut);
    assert_eq!(
        item.answer.as_ref().map(|a| &a.value),
        Some(&json!({"chosen": "retry"}))
    );
    assert!(item.answered_at.is_some());
    let again = engine
        .answer_gate(&id, GateAnswer::choose("abort"))
        .await
        .unwrap();
    assert_eq!(again, AnswerAck::Ignored);
    let item = engine.inbox_item(&id).unwrap();
    assert_eq!(
        item.answer.map(|a| a.value),
        Some(json!({"chosen": "retry"}))
    );
    assert_eq!(
        engine.wait(run).await.unwrap().result,
        Some(json!("timeout"))
    );
}

/// Two answers to one gate (a race between two approvers): the first decides and stays on the
/// inbox item; the second is journaled as ignored with what it said and who said it, so the
/// journal tells who lost the race and how they would have decided.
#[tokio::test]
async fn a_second_answer_to_a_gate_is_journaled_with_its_content() {
    let wf = WorkflowRegistration::new("two", "", |ctx, _| async move {
        let first = match ctx.gate(gate(GateKind::Approval, None)).await {
            GateOutcome::Answered(a) => a.value,
            other => return Err(WorkflowError::failed(format!("{other:?}"))),
        };
        // A second gate keeps the run going while the first is answered again.
        ctx.gate(gate(GateKind::Approval, None)).await;
        Ok(first)
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let run = engine
        .start(StartRequest::code("two", Value::Null))
        .await
        .unwrap();
    engine.wait_settled(run).await.unwrap();
    let id = format!("{run}-0");
    let first = GateAnswer::approve().with_comment("ship it").by("alice");
    assert_eq!(
        engine.answer_gate(&id, first).await.unwrap(),
        AnswerAck::Applied
    );
    let second = GateAnswer::reject().with_comment("not yet").by("bob");
    assert_eq!(
        engine.answer_gate(&id, second.clone()).await.unwrap(),
        AnswerAck::Ignored
    );
    let journal = engine.journal(run).unwrap();
    let kept = journal.iter().find_map(|e| match &e.record {
        Record::Ignored {
            what,
            answer: Some(a),
            ..
        } if what == "gate answer" => Some(a.clone()),
        _ => None,
    });
    assert_eq!(kept, Some(second));
    let item = engine.inbox_item(&id).unwrap();
    let decided = item.answer.unwrap();
    assert_eq!(
        (decided.answered_by.as_str(), decided.comment.as_deref()),
        ("alice", Some("ship it"))
    );
}

#[tokio::test]
async fn signals_are_delivered_in_order_even_when_sent_before_the_wait() {
    let wf = WorkflowRegistration::new("s", "", |ctx, _| async move {
        ctx.sleep(Duration::from_millis(50)).await?;
        let a = ctx.signal("go").await?;
        let b = ctx.signal("go").await?;
        Ok(json!([a, b]))
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let run = engine
        .start(StartRequest::code("s", Value::Null))
        .await
        .unwrap();
    engine.signal(run, "go", json!(1)).await.unwrap();
    engine.signal(run, "go", json!(2)).await.unwrap();
    assert_eq!(engine.wait(run).await.unwrap().result, Some(json!([1, 2])));
}

#[tokio::test]
async fn a_child_run_names_its_parent_and_returns_its_result() {
    let child = WorkflowRegistration::new("child", "", |ctx, input| async move {
        Ok(ctx
            .task("echo", json!({"doubled": input.as_i64().unwrap_or(0) * 2}))
            .await?)
    });
    let parent = WorkflowRegistration::new("parent", "", |ctx, _| async move {
        let out = ctx.child(ChildRequest::code("child", json!(21))).await;
        Ok(json!({"status": out.status, "result": out.result, "child": out.run_id}))
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| {
        b.workflow(child).workflow(parent)
    })
    .await;
    let run = engine
        .start(StartRequest::code("parent", Value::Null))
        .await
        .unwrap();
    let view = engine.wait(run).await.unwrap();
    let result = view.result.unwrap();
    assert_eq!(result["status"], "DONE");
    assert_eq!(result["result"], json!({"doubled": 42}));
    let child_id = result["child"].as_str().unwrap().parse().unwrap();
    let child_start = engine.journal(child_id).unwrap().remove(0);
    match child_start.record {
        Record::Start(s) => assert_eq!(s.parent.unwrap().run_id, run),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn cancellation_reaches_the_workflow_which_can_clean_up() {
    let wf = WorkflowRegistration::new("c", "", |ctx, _| async move {
        match ctx.sleep(Duration::from_secs(3600)).await {
            Ok(()) => Ok(json!("slept")),
            Err(e) if e.is_cancelled() => {
                let cleaned = ctx.task("echo", json!("cleanup")).await?;
                Err(WorkflowError::cancelled(format!(
                    "cancelled after {cleaned}"
                )))
            }
            Err(e) => Err(e.into()),
        }
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let run = engine
        .start(StartRequest::code("c", Value::Null))
        .await
        .unwrap();
    assert_eq!(
        engine.cancel(run, "user asked").await.unwrap(),
        CancelAck::Requested
    );
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Cancelled);
    assert!(view.reason.unwrap().contains("cleanup"));
    assert_eq!(
        engine.cancel(run, "again").await.unwrap(),
        CancelAck::AlreadyFinished
    );
}

#[tokio::test]
async fn the_same_idempotency_key_returns_the_same_run() {
    let wf = WorkflowRegistration::new("i", "", |_, v| async move { Ok(v) });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let a = engine
        .start(StartRequest::code("i", json!(1)).idempotency_key("k"))
        .await
        .unwrap();
    let b = engine
        .start(StartRequest::code("i", json!(2)).idempotency_key("k"))
        .await
        .unwrap();
    assert_eq!(a, b);
    assert_eq!(engine.wait(a).await.unwrap().result, Some(json!(1)));
    assert_eq!(engine.list_runs(&Default::default()).unwrap().len(), 1);
}

/// A key names one run: a start of another workflow with it is refused, not handed the run of
/// the first (whose result would be of another type).
#[tokio::test]
async fn an_idempotency_key_of_another_workflow_is_refused() {
    let i = WorkflowRegistration::new("i", "", |_, v| async move { Ok(v) });
    let j = WorkflowRegistration::new("j", "", |_, v| async move { Ok(v) });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(i).workflow(j)).await;
    let a = engine
        .start(StartRequest::code("i", json!(1)).idempotency_key("k"))
        .await
        .unwrap();
    let err = engine
        .start(StartRequest::code("j", json!(2)).idempotency_key("k"))
        .await
        .unwrap_err();
    match &err {
        magrathea_core::StartError::KeyOfOtherRun {
            key,
            run,
            workflow,
            version: None,
        } => {
            assert_eq!((key.as_str(), *run, workflow.as_str()), ("k", a, "i"));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().starts_with("[MAG-EN006]"), "{err}");
    assert_eq!(engine.list_runs(&Default::default()).unwrap().len(), 1);
}

#[tokio::test]
async fn select_picks_the_completion_journaled_first() {
    let wf = WorkflowRegistration::new("sel", "", |ctx, _| async move {
        let slow = ctx.sleep(Duration::from_secs(3600)).map(|_| "timer");
        let fast = ctx.task("echo", json!("task")).map(|_| "task");
        let (i, which) = ctx.select(vec![slow, fast]).await;
        Ok(json!([i, which]))
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let run = engine
        .start(StartRequest::code("sel", Value::Null))
        .await
        .unwrap();
    assert_eq!(
        engine.wait(run).await.unwrap().result,
        Some(json!([1, "task"]))
    );
}

#[tokio::test]
async fn unknown_workflow_is_refused_before_anything_is_journaled() {
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b).await;
    let err = engine
        .start(StartRequest::code("nope", Value::Null))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("[MAG-EN002]"), "{err}");
    assert!(engine.list_runs(&Default::default()).unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tasks_of_a_fan_out_run_concurrently() {
    // Each task waits until all three have started: they finish only if they run at once.
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let meet = TaskRegistration::new("meet", TaskOptions::default(), move |v, _| {
        let barrier = barrier.clone();
        async move {
            barrier.wait().await;
            Ok(v)
        }
    });
    let wf = WorkflowRegistration::new("fan", "", |ctx, _| async move {
        let (a, b, c) = tokio::join!(
            ctx.task("meet", json!(1)),
            ctx.task("meet", json!(2)),
            ctx.task("meet", json!(3))
        );
        Ok::<_, WorkflowError>(json!([a?, b?, c?]))
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf).task(meet)).await;
    let run = engine
        .start(StartRequest::code("fan", Value::Null))
        .await
        .unwrap();
    let view = tokio::time::timeout(Duration::from_secs(20), engine.wait(run))
        .await
        .expect("the three tasks met")
        .unwrap();
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!([1, 2, 3])));
}

#[tokio::test]
async fn cancelling_a_run_stops_its_running_task() {
    struct SetOnDrop(Arc<std::sync::atomic::AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let started = Arc::new(tokio::sync::Notify::new());
    let stopped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hang = {
        let (started, stopped) = (started.clone(), stopped.clone());
        TaskRegistration::new("hang", TaskOptions::default(), move |_, _| {
            let guard = SetOnDrop(stopped.clone());
            let started = started.clone();
            async move {
                let _guard = guard;
                started.notify_one();
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(Value::Null)
            }
        })
    };
    let wf = WorkflowRegistration::new("h", "", |ctx, _| async move {
        ctx.task("hang", Value::Null).await?;
        Ok::<_, WorkflowError>(json!("finished"))
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf).task(hang)).await;
    let run = engine
        .start(StartRequest::code("h", Value::Null))
        .await
        .unwrap();
    started.notified().await;
    assert_eq!(
        engine.cancel(run, "user asked").await.unwrap(),
        CancelAck::Requested
    );
    let view = tokio::time::timeout(Duration::from_secs(20), engine.wait(run))
        .await
        .expect("the run ended")
        .unwrap();
    assert_eq!(view.status, RunStatus::Cancelled);
    assert!(
        stopped.load(Ordering::SeqCst),
        "the task's future was dropped"
    );
}

/// `Engine::recovered_at_build` names the runs a build took up even once they have finished,
/// when the store's active runs no longer show them: a command that reports what it recovered
/// cannot miss a run that ended at once.
#[tokio::test(flavor = "multi_thread")]
async fn the_runs_a_build_recovered_stay_listed_after_they_finish() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let nap = || {
        WorkflowRegistration::new("nap", "", |ctx, _| async move {
            ctx.sleep(Duration::from_millis(200)).await?;
            Ok::<_, WorkflowError>(json!("woke"))
        })
    };
    let build = |recover: bool| {
        Engine::builder()
            .path(&path)
            .workflow(nap())
            .recover(recover)
            .build()
    };
    let first = build(true).await.unwrap();
    assert_eq!(first.recovered_at_build(), &[] as &[RunId]);
    let run = first
        .start(StartRequest::code("nap", Value::Null))
        .await
        .unwrap();
    drop(first);

    let second = build(true).await.unwrap();
    assert_eq!(second.recovered_at_build(), [run]);
    let view = second.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert!(!second.store().active_runs().unwrap().contains(&run));
    assert_eq!(second.recovered_at_build(), [run]);
    drop(second);

    // An engine that recovers nothing took nothing up.
    let third = build(false).await.unwrap();
    assert_eq!(third.recovered_at_build(), &[] as &[RunId]);
}

/// The milestones of a run (its start and its status) reach a milestone reader; its steps do
/// not, so a run of many steps sends that reader no more than a run of one.
#[tokio::test]
async fn a_milestone_reader_hears_starts_and_statuses_and_no_steps() {
    let wf = WorkflowRegistration::new("steps", "1", |ctx, _| async move {
        for i in 0..50 {
            ctx.task("echo", json!(i)).await?;
        }
        Ok(Value::Null)
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let mut milestones = engine.subscribe_milestones();
    let mut journal = engine.subscribe_journal();
    let run = engine
        .start(StartRequest::code("steps", json!(null)))
        .await
        .unwrap();
    assert_eq!(engine.wait(run).await.unwrap().status, RunStatus::Done);
    let mut heard = Vec::new();
    while let Ok(update) = milestones.try_recv() {
        assert_eq!(update.run_id, run);
        heard.extend(update.entries.iter().map(|e| e.record.type_name()));
    }
    assert_eq!(heard, ["StartRecord", "StatusRecord"]);
    let mut steps = 0;
    while let Ok(update) = journal.try_recv() {
        steps += update
            .entries
            .iter()
            .filter(|e| matches!(e.record, Record::TaskResult { .. }))
            .count();
    }
    assert_eq!(steps, 50, "the full journal stream carries every step");
}

/// Listings give runs newest first by id; a run's `createdAt` is when its id was made, so that
/// runs started together are in the same order by either (no two trade places because one's
/// driver began before the other's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_started_together_list_newest_first_by_their_start_time_too() {
    let wf = WorkflowRegistration::new("quick", "", |ctx, v| async move {
        Ok(ctx.task("echo", v).await?)
    });
    let engine = engine_with(Arc::new(MemoryStore::new()), |b| b.workflow(wf)).await;
    let starts: Vec<_> = (0..300)
        .map(|i| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let before = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis() as u64;
                let run = engine
                    .start(StartRequest::code("quick", json!(i)))
                    .await
                    .unwrap();
                (run, before)
            })
        })
        .collect();
    let mut started = Vec::new();
    for s in starts {
        started.push(s.await.unwrap());
    }
    for (run, _) in &started {
        engine.wait(*run).await.unwrap();
    }
    let listed = engine
        .list_runs(&RunFilter {
            limit: 1_000,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed.len(), 300);
    for pair in listed.windows(2) {
        assert!(pair[0].run_id > pair[1].run_id, "newest first by id");
        assert!(
            pair[0].created_ms >= pair[1].created_ms,
            "run {} is listed before run {} but was created earlier ({} < {})",
            pair[0].run_id,
            pair[1].run_id,
            pair[0].created_ms,
            pair[1].created_ms
        );
    }
    // The start time is not before the call that started the run.
    for (run, before) in started {
        let summary = listed.iter().find(|s| s.run_id == run).unwrap();
        assert!(summary.created_ms >= before, "{run}");
    }
}
