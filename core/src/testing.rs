//! Test helpers: canned journals for replay tests (with the `test-util` feature).

use serde_json::Value;

use crate::codec::input_hash;
use crate::id::RunId;
use crate::record::{Entry, GateAnswer, GateKind, GateSpec, Record, RunStatus, StartRecord, Step};
use crate::vocabulary::TimerPurpose;

/// Builds a journal record by record, numbering seqs and steps the way the engine does.
///
/// [`JournalBuilder::start`] writes the `StartRecord` (seq 0). Each step-opening method
/// ([`task`](Self::task), [`sleep`](Self::sleep), [`gate`](Self::gate),
/// [`signal_wait`](Self::signal_wait), [`child`](Self::child),
/// [`side_effect`](Self::side_effect)) takes the next step number, in call order, exactly as
/// a workflow's context numbers the steps it asks for; the completion methods take the step
/// they complete. For example
///
/// ```
/// # use magrathea_core::testing::JournalBuilder;
/// # use serde_json::json;
/// let journal = JournalBuilder::start("order", json!({"id": 1}))
///     .task("charge", json!(1))      // seq 1: TaskStartedRecord   step 0, attempt 1
///     .task_ok(0, 1, json!("paid"))  // seq 2: TaskResultRecord    step 0, final
///     .sleep(1_000)                  // seq 3: TimerSetRecord      step 1
///     .timer_fired(1)                // seq 4: TimerFiredRecord    step 1
///     .build();
/// assert_eq!(journal.len(), 5);
/// ```
#[derive(Debug, Clone)]
pub struct JournalBuilder {
    entries: Vec<Entry>,
    next_step: Step,
}

/// A gate of `kind` titled `title`, with everything else empty (criticality `NORMAL`, no
/// timeout), as a canned journal or a test workflow needs it.
pub fn gate_spec(kind: GateKind, title: &str) -> GateSpec {
    GateSpec {
        kind,
        title: title.into(),
        body: String::new(),
        options: Vec::new(),
        assigned_to: String::new(),
        criticality: "NORMAL".into(),
        tags: Vec::new(),
        timeout_ms: None,
        meta: Value::Null,
    }
}

/// The hash the engine journals for a task call's input.
pub fn task_input_hash(task: &str, input: &Value) -> u64 {
    input_hash(input) ^ crate::codec::str_hash(task)
}

impl JournalBuilder {
    /// A journal of the code workflow `workflow`, started with `params`.
    pub fn start(workflow: &str, params: Value) -> Self {
        let start = StartRecord {
            workflow_name: workflow.into(),
            workflow_version: String::new(),
            frontend: "code".into(),
            params,
            definition: None,
            parent: None,
            started_by: String::new(),
            idempotency_key: None,
            scope: Default::default(),
            requested_by: None,
            bounds: None,
            entry: None,
        };
        Self {
            entries: Vec::new(),
            next_step: 0,
        }
        .record(Record::Start(Box::new(start)))
    }

    /// Appends any record.
    pub fn record(mut self, record: Record) -> Self {
        let seq = self.entries.len() as u64;
        self.entries.push(Entry {
            seq,
            at_ms: 1_000 + seq,
            record,
        });
        self
    }

    /// The step number the next step-opening method takes.
    pub fn next_step(&self) -> Step {
        self.next_step
    }

    fn step(&mut self) -> Step {
        let step = self.next_step;
        self.next_step += 1;
        step
    }

    /// A task step: its first attempt's `TaskStartedRecord`.
    pub fn task(mut self, task: &str, input: Value) -> Self {
        let step = self.step();
        self.record(Record::TaskStarted {
            step,
            attempt: 1,
            task: task.into(),
            name: task.into(),
            input_hash: task_input_hash(task, &input),
            input,
        })
    }

    /// A later attempt of the task at `step`.
    pub fn task_attempt(self, step: Step, attempt: u32) -> Self {
        let Some((task, input)) = self.entries.iter().find_map(|e| match &e.record {
            Record::TaskStarted {
                step: s,
                task,
                input,
                ..
            } if *s == step => Some((task.clone(), input.clone())),
            _ => None,
        }) else {
            return self;
        };
        self.record(Record::TaskStarted {
            step,
            attempt,
            name: task.clone(),
            input_hash: task_input_hash(&task, &input),
            task,
            input,
        })
    }

    /// A successful, final result of attempt `attempt` of `step`.
    pub fn task_ok(self, step: Step, attempt: u32, output: Value) -> Self {
        self.record(Record::TaskResult {
            step,
            attempt,
            outcome: "success".into(),
            output,
            error: None,
            is_final: true,
        })
    }

    /// A failed attempt: final, or followed by a retry.
    pub fn task_failed(self, step: Step, attempt: u32, kind: &str, is_final: bool) -> Self {
        self.record(Record::TaskResult {
            step,
            attempt,
            outcome: kind.into(),
            output: Value::Null,
            error: Some(format!("attempt {attempt} failed")),
            is_final,
        })
    }

    /// The backoff timer before the next attempt of `step`.
    pub fn retry_timer(self, step: Step, fire_at_ms: u64) -> Self {
        self.record(Record::TimerSet {
            step,
            fire_at_ms,
            purpose: TimerPurpose::Retry,
        })
    }

    /// A `sleep` step due at `fire_at_ms`.
    pub fn sleep(mut self, fire_at_ms: u64) -> Self {
        let step = self.step();
        self.record(Record::TimerSet {
            step,
            fire_at_ms,
            purpose: TimerPurpose::Sleep,
        })
    }

    /// A timer of `step` fired (a sleep, a retry backoff or a gate's timeout).
    pub fn timer_fired(self, step: Step) -> Self {
        self.record(Record::TimerFired { step })
    }

    /// A gate step; with a timeout, its timer is set to `fire_at_ms`.
    pub fn gate(mut self, spec: GateSpec, timeout_at_ms: Option<u64>) -> Self {
        let step = self.step();
        let mut b = self.record(Record::GateOpened {
            step,
            gate: Box::new(spec),
        });
        if let Some(fire_at_ms) = timeout_at_ms {
            b = b.record(Record::TimerSet {
                step,
                fire_at_ms,
                purpose: TimerPurpose::GateTimeout,
            });
        }
        b
    }

    /// An answer to the gate at `step`.
    pub fn answer(self, step: Step, answer: GateAnswer) -> Self {
        self.record(Record::GateAnswered { step, answer })
    }

    /// A wait for signal `name`.
    pub fn signal_wait(mut self, name: &str) -> Self {
        let step = self.step();
        self.record(Record::SignalAwaited {
            step,
            name: name.into(),
        })
    }

    /// A signal arrived; `step` is the wait it completed, if one was waiting.
    pub fn signal(self, name: &str, payload: Value, step: Option<Step>) -> Self {
        self.record(Record::SignalReceived {
            name: name.into(),
            payload,
            step,
        })
    }

    /// A child-workflow step.
    pub fn child(mut self, workflow: &str, child_run_id: RunId, input: &Value) -> Self {
        let step = self.step();
        self.record(Record::ChildStarted {
            step,
            child_run_id,
            workflow: workflow.into(),
            input_hash: input_hash(input),
        })
    }

    /// The child of `step` ended.
    pub fn child_finished(self, step: Step, status: RunStatus, result: Value) -> Self {
        self.record(Record::ChildFinished {
            step,
            status,
            result,
            reason: None,
        })
    }

    /// A recorded value (`now()`, `random()`, a patch marker `patch:<id>`).
    pub fn side_effect(mut self, name: &str, value: Value) -> Self {
        let step = self.step();
        self.record(Record::SideEffect {
            step,
            name: name.into(),
            value,
        })
    }

    /// Cancellation was requested.
    pub fn cancel(self, reason: &str) -> Self {
        self.record(Record::CancelRequested {
            reason: reason.into(),
        })
    }

    /// A status change.
    pub fn status(self, status: RunStatus, reason: Option<&str>) -> Self {
        self.record(Record::Status {
            status,
            reason: reason.map(str::to_string),
        })
    }

    /// The journal.
    pub fn build(self) -> Vec<Entry> {
        self.entries
    }
}
