//! The compiled plan of a validated document: what the interpreter runs, `graph` draws and the
//! static analysis reads.
//!
//! The loader turns text into a [`WorkflowDoc`] with positions for diagnostics; [`Plan::compile`]
//! turns a valid document into typed states whose targets are indices, whose conditions are
//! parsed once and whose text fields are parsed [`Template`]s. Nothing in the plan is read from
//! raw JSON at run time, and nothing in it can be invalid: the loader has checked it all.

mod fanout;
mod graph;

use std::time::Duration;

use serde_json::{Map, Value};

use crate::ast::{
    Bounds, Criticality, InboxKind, ParamSchema, Splice, StateSpec, TaskSpec, TaskType,
    TerminalOutcome, WorkflowDoc,
};
use crate::condition::Condition;
use crate::error_kind::ErrorKind;
use crate::shell_splice::{ShellCommand, ShellRun};
use crate::template::{Template, TemplateValue};

pub(crate) use fanout::item_word;
pub use fanout::{BodyPlan, FanKind, FanOutPlan, INDEX_VAR, ITEM_VAR};
pub use graph::{Edge, StateGraph};

/// The index of a state in [`Plan::states`].
pub type StateId = usize;

/// A compiled workflow.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The state runs start in.
    pub start: StateId,
    /// The states, in document order.
    pub states: Vec<PlanState>,
    /// `onFailure:`.
    pub on_failure: OnFailure,
    /// `onFailure.approvers` of `pause_for_approval`: who may answer its decision.
    pub on_failure_approvers: Option<crate::ast::Approvers>,
    /// The run's bounds (reference §8); all limits absent when the document has none.
    pub bounds: Bounds,
    /// `allowedTools:` of the document, when it restricts tools.
    pub allowed_tools: Option<Vec<String>>,
    /// The declared parameters.
    pub parameters: Vec<ParamSchema>,
    /// `version:` as written.
    pub version: Option<String>,
    /// `description:`.
    pub description: Option<String>,
    /// `tags:`.
    pub tags: Vec<String>,
}

/// One state of the plan.
#[derive(Debug, Clone)]
pub struct PlanState {
    /// The state's name.
    pub name: String,
    /// Its task type.
    pub task_type: TaskType,
    /// What the state does.
    pub step: Step,
    /// `storeAs:`.
    pub store_as: Option<String>,
    /// `on:` transitions: outcome → state.
    pub on: Vec<(String, StateId)>,
    /// `catch:` transitions: error kind → state.
    pub catch: Vec<(ErrorKind, StateId)>,
    /// `retry:`.
    pub retry: Option<Retry>,
    /// `timeoutSeconds:`.
    pub timeout: Option<Duration>,
    /// `compensate:`: the state that undoes this one.
    pub compensate: Option<StateId>,
}

/// What an outcome nothing routes does (`onFailure:`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// The run fails.
    #[default]
    FailFast,
    /// The state's `on: success` target.
    ContinueOnError,
    /// This state.
    Fallback(StateId),
    /// The compensations of the completed states, in reverse order; then the run fails.
    Compensate,
    /// A DECISION gate: `retry` the state, go to `fallback` (when given), or `abort`.
    PauseForApproval {
        /// The state the `fallback` answer goes to.
        fallback: Option<StateId>,
        /// How long the decision waits before the run aborts.
        timeout: Option<Duration>,
    },
}

impl PlanState {
    /// Whether the state is a `gate_task` asking for an APPROVAL.
    pub fn is_approval_gate(&self) -> bool {
        matches!(&self.step, Step::Gate(g) if g.kind == InboxKind::Approval)
    }
}

/// A state's `retry:` block.
#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The error kinds that are retried.
    pub on: Vec<ErrorKind>,
    /// The pause between attempts.
    pub backoff: Duration,
}

/// What a state does.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Step {
    /// `shell_task`, `script_task`, `tool_task` or `agent_task`: an executor outside the
    /// workflow, given the state's task fields (the routing fields removed), resolved.
    External {
        /// The task fields (`run`, `dirName`, `tool`, `params`, `recipe`, `timeoutSeconds`…).
        spec: TemplateValue,
        /// `tool:` of a `tool_task` (the permission check needs it before the call).
        tool: Option<Template>,
        /// `run:` of a `shell_task` that holds placeholders: rendered as its `splice:` says,
        /// in place of the plain rendering in `spec`.
        shell_run: Option<ShellRun>,
    },
    /// `condition_task`: the first rule whose condition holds, else `else:`.
    Condition {
        /// `(condition, target)` in order.
        rules: Vec<(Condition, StateId)>,
        /// `else:`.
        otherwise: Option<StateId>,
    },
    /// `timer_task`.
    Timer(TimerDuration),
    /// `gate_task`.
    Gate(GatePlan),
    /// `workflow_task`.
    Workflow {
        /// The sub-workflow's name.
        workflow: Template,
        /// Its parameters.
        params: TemplateValue,
    },
    /// `parallel_task` or `foreach_task`: sub-runs side by side.
    FanOut(Box<FanOutPlan>),
    /// `terminal`.
    Terminal {
        /// Success or failure.
        outcome: TerminalOutcome,
        /// `result:`.
        result: Option<TemplateValue>,
    },
}

/// A timer's duration: fixed, or a template read when the timer starts.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TimerDuration {
    /// Known at load time.
    Fixed(Duration),
    /// `duration: "${params.wait}"`: parsed when the state is entered.
    Templated(Template),
}

/// A gate's inbox item, with templated texts.
#[derive(Debug, Clone)]
pub struct GatePlan {
    /// APPROVAL, DECISION or FEEDBACK.
    pub kind: InboxKind,
    /// `title:` (the state's name when absent).
    pub title: Option<Template>,
    /// `body:`.
    pub body: Option<Template>,
    /// `assignedTo:` (the run's starter when absent).
    pub assigned_to: Option<Template>,
    /// `criticality:`.
    pub criticality: Criticality,
    /// `tags:`.
    pub tags: Vec<Template>,
    /// `options:` of a DECISION: each a text, or one `${…}` that gives a list of them.
    pub options: Vec<TemplateValue>,
    /// `approvers:` of an APPROVAL.
    pub approvers: Option<crate::ast::Approvers>,
    /// `quorum:` (1 unless declared).
    pub quorum: u32,
    /// `selfApproval:` (true unless declared).
    pub self_approval: bool,
}

/// The fields of a state that route or describe it rather than configure its task.
const ROUTING_FIELDS: [&str; 6] = ["type", "description", "storeAs", "on", "catch", "retry"];

impl Plan {
    /// Compiles a validated document.
    ///
    /// # Panics
    /// Never for a document [`crate::load_workflow`] accepted: every target it names exists.
    #[must_use]
    pub fn compile(doc: &WorkflowDoc) -> Self {
        let index = |name: &str| {
            doc.states
                .get_index_of(name)
                .expect("the loader checked every transition target")
        };
        let states = doc
            .states
            .values()
            .map(|s| compile_state(s, &index, &doc.defaults, doc.allowed_tools.as_deref()))
            .collect();
        let on_failure = match &doc.on_failure {
            crate::ast::FailurePolicy::FailFast => OnFailure::FailFast,
            crate::ast::FailurePolicy::ContinueOnError => OnFailure::ContinueOnError,
            crate::ast::FailurePolicy::Fallback(f) => OnFailure::Fallback(index(&f.value)),
            crate::ast::FailurePolicy::Compensate => OnFailure::Compensate,
            crate::ast::FailurePolicy::PauseForApproval {
                fallback,
                timeout_seconds,
                ..
            } => OnFailure::PauseForApproval {
                fallback: fallback.as_ref().map(|f| index(&f.value)),
                timeout: timeout_seconds.map(crate::saturating_secs),
            },
        };
        Self {
            start: index(&doc.start.value),
            states,
            on_failure,
            on_failure_approvers: match &doc.on_failure {
                crate::ast::FailurePolicy::PauseForApproval { approvers, .. } => approvers.clone(),
                _ => None,
            },
            bounds: doc.bounds.unwrap_or_default(),
            allowed_tools: doc.allowed_tools.clone(),
            parameters: doc.parameters.values().cloned().collect(),
            version: doc.version.clone(),
            description: doc.description.clone(),
            tags: doc.tags.clone(),
        }
    }

    /// The state called `name`.
    #[must_use]
    pub fn state_named(&self, name: &str) -> Option<StateId> {
        self.states.iter().position(|s| s.name == name)
    }

    /// The graph of states and labelled transitions.
    #[must_use]
    pub fn graph(&self) -> StateGraph {
        StateGraph::from_plan(self)
    }
}

impl PlanState {
    /// Where the outcome `outcome` goes by `on:` then `catch:` (reference §4.1, without the
    /// condition override).
    ///
    /// A timeout that nothing routes goes where the kind it stands for in this task type goes
    /// ([`TaskType::timeout_stands_for`]); a failure of the task that nothing routes goes
    /// where `failure` goes ([`ErrorKind::is_task_failure`]).
    #[must_use]
    pub fn route(&self, outcome: &str) -> Option<StateId> {
        let kind = ErrorKind::parse(outcome);
        self.route_exactly(outcome)
            .or_else(|| {
                let stands_for = self.task_type.timeout_stands_for()?;
                (kind == Some(ErrorKind::Timeout))
                    .then(|| self.route_exactly(stands_for.as_str()))?
            })
            .or_else(|| {
                kind.is_some_and(ErrorKind::is_task_failure)
                    .then(|| self.route_exactly(ErrorKind::Failure.as_str()))?
            })
    }

    fn route_exactly(&self, outcome: &str) -> Option<StateId> {
        if let Some((_, to)) = self.on.iter().find(|(o, _)| o == outcome) {
            return Some(*to);
        }
        let kind = ErrorKind::parse(outcome)?;
        self.catch
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, to)| *to)
    }

    /// Every state this one can go to next: its condition's rules and `else`, `on:`, `catch:`.
    pub fn targets(&self) -> impl Iterator<Item = StateId> + '_ {
        let (rules, otherwise) = match &self.step {
            Step::Condition { rules, otherwise } => (rules.as_slice(), *otherwise),
            _ => (&[][..], None),
        };
        rules
            .iter()
            .map(|(_, to)| *to)
            .chain(otherwise)
            .chain(self.on.iter().map(|(_, to)| *to))
            .chain(self.catch.iter().map(|(_, to)| *to))
    }

    /// Whether `retry:` retries the outcome `outcome`.
    #[must_use]
    /// As in routing, a timeout is retried as the kind it stands for in this task type when
    /// `on` does not name `timeout` itself, and `failure` retries every failure of the task.
    pub fn retries(&self, outcome: &str) -> bool {
        let Some(retry) = &self.retry else {
            return false;
        };
        let Some(kind) = ErrorKind::parse(outcome) else {
            return false;
        };
        retry.on.contains(&kind)
            || (kind == ErrorKind::Timeout
                && self
                    .task_type
                    .timeout_stands_for()
                    .is_some_and(|k| retry.on.contains(&k)))
            || (kind.is_task_failure() && retry.on.contains(&ErrorKind::Failure))
    }
}

fn compile_state(
    s: &StateSpec,
    index: &impl Fn(&str) -> StateId,
    defaults: &crate::ast::Defaults,
    allowed_tools: Option<&[String]>,
) -> PlanState {
    let text = |t: &Option<String>| t.as_deref().map(Template::parse);
    // A state without its own timeout takes the document's default for its kind.
    let default_timeout = match &s.task {
        TaskSpec::Gate(_) => defaults.gate_timeout_seconds,
        TaskSpec::Shell { .. }
        | TaskSpec::Agent { .. }
        | TaskSpec::Script { .. }
        | TaskSpec::Tool { .. }
        | TaskSpec::Workflow { .. } => defaults.task_timeout_seconds,
        _ => None,
    }
    .filter(|_| s.timeout_seconds.is_none());
    let raw_with_default;
    let raw = match (default_timeout, s.raw.as_object()) {
        (Some(t), Some(fields)) => {
            let mut fields = fields.clone();
            fields.insert("timeoutSeconds".into(), serde_json::json!(t));
            raw_with_default = Value::Object(fields);
            &raw_with_default
        }
        _ => &s.raw,
    };
    let step = match &s.task {
        TaskSpec::Shell { run, splice, .. } => Step::External {
            spec: task_fields(raw),
            tool: None,
            shell_run: match splice {
                Splice::Quoted => Some(ShellRun::Quoted(Template::parse(run))),
                Splice::Variables => ShellCommand::parse(run).map(ShellRun::Variables),
                _ => None,
            },
        },
        TaskSpec::Agent { .. } | TaskSpec::Script { .. } => Step::External {
            spec: task_fields(raw),
            tool: None,
            shell_run: None,
        },
        TaskSpec::Tool { tool, .. } => Step::External {
            spec: task_fields(raw),
            tool: Some(Template::parse(tool)),
            shell_run: None,
        },
        TaskSpec::Condition { rules, otherwise } => Step::Condition {
            rules: rules
                .iter()
                .map(|r| (r.condition.clone(), index(&r.target)))
                .collect(),
            otherwise: otherwise.as_ref().map(|o| index(&o.value)),
        },
        TaskSpec::Timer { duration, parsed } => Step::Timer(match parsed {
            Some(d) => TimerDuration::Fixed(*d),
            None => TimerDuration::Templated(Template::parse(duration)),
        }),
        TaskSpec::Gate(inbox) => Step::Gate(GatePlan {
            kind: inbox.kind,
            title: text(&inbox.title),
            body: text(&inbox.body),
            assigned_to: text(&inbox.assigned_to),
            criticality: inbox.criticality,
            tags: inbox.tags.iter().map(|t| Template::parse(t)).collect(),
            options: inbox
                .options
                .iter()
                .map(|t| TemplateValue::compile(&Value::String(t.clone())))
                .collect(),
            approvers: inbox.approvers.clone(),
            quorum: inbox.quorum,
            self_approval: inbox.self_approval,
        }),
        TaskSpec::Workflow { workflow, params } => Step::Workflow {
            workflow: Template::parse(workflow),
            params: TemplateValue::compile(params),
        },
        TaskSpec::Parallel { .. } | TaskSpec::Foreach { .. } => Step::FanOut(Box::new(
            FanOutPlan::of(&s.task, allowed_tools, defaults).expect("a fan-out spec"),
        )),
        TaskSpec::Terminal { outcome, result } => Step::Terminal {
            outcome: *outcome,
            result: result.as_ref().map(TemplateValue::compile),
        },
    };
    PlanState {
        name: s.name.clone(),
        task_type: s.task_type,
        step,
        store_as: s.store_as.clone(),
        on: s
            .on
            .iter()
            .map(|t| (t.outcome.clone(), index(&t.target)))
            .collect(),
        catch: s.catch.iter().map(|c| (c.kind, index(&c.target))).collect(),
        retry: s.retry.as_ref().map(|r| Retry {
            max_attempts: r.max_attempts,
            on: r.on.clone(),
            backoff: if r.backoff_seconds > 0.0 {
                crate::saturating_secs(r.backoff_seconds)
            } else {
                Duration::ZERO
            },
        }),
        compensate: s.compensate.as_ref().map(|c| index(&c.value)),
        timeout: s
            .timeout_seconds
            .or(default_timeout)
            .filter(|t| *t > 0.0)
            .map(crate::saturating_secs),
    }
}

/// The state's task fields: its raw spec without the routing fields.
fn task_fields(raw: &Value) -> TemplateValue {
    let fields: Map<String, Value> = raw
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !ROUTING_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    TemplateValue::compile(&Value::Object(fields))
}

#[cfg(test)]
mod tests;
