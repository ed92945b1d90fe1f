//! The Vancetope YAML front end of Magrathea: everything between workflow text and the
//! interpreter.
//!
//! - [`load_workflow`] reads a document with a span-preserving YAML 1.2 reader
//!   ([`parse_yaml`]), builds the typed [`WorkflowDoc`] and validates it, reporting every
//!   problem at once as [`Diagnostics`] rendered `path:line:column: [MAG-Ynnn] message`;
//!   a valid document is then analysed (outcomes nothing routes, transitions never taken,
//!   unreachable states, loops that can run forever) into warnings, and
//!   [`Loaded::check_sub_workflows`] looks up the workflows its `workflow_task`s start
//!   ([`load_workflow_checked`] does both, also for a document with errors, and checks the
//!   scripts of its `script_task`s against a [`DocumentLookup`] such as [`ProjectDocuments`]).
//! - [`Outcome`]: what each task type can end with, the one table of outcomes.
//! - [`schema`]: JSON Schemas of workflow, settings, recipe, event and hook documents,
//!   generated from the types that describe them (checked in under `schemas/`).
//! - [`events`]: the engine's internal events, their JSON, and the `subscribe:` block of
//!   event documents; hooks subscribe with [`schema::HookDocument`].
//! - [`Plan`]: a valid document compiled for the interpreter and `graph`.
//! - [`Template`] / [`TemplateValue`] (and [`resolve_value`]) resolve `${params.X}` /
//!   `${state.X}`: a whole placeholder keeps its JSON type, one inside text becomes text.
//! - [`Condition`] parses and evaluates the sandboxed SpEL subset of `condition_task`, and
//!   event filters over `#event` ([`Condition::parse_filter`]).
//! - [`parse_duration`] reads `timer_task` durations.
//! - [`validate_params`] checks caller parameters against `parameters:`.
//! - [`scheduler`] reads `_vance/scheduler/<name>.yaml` ([`scheduler::load_schedule`]) and
//!   computes its ticks, across time zones and daylight saving.

mod analysis;
mod api;
mod ast;
mod build;
mod condition;
mod diagnostic;
mod duration;
mod error_kind;
pub mod events;
pub mod load_cache;
mod loader;
mod node;
mod outcome;
mod params;
pub mod plan;
pub mod runtime;
mod scalar;
pub mod scheduler;
pub mod schema;
mod shell_splice;
mod syntax_error;
use magrathea_exec::suggest;
mod template;
mod validate;

pub use analysis::{
    DocumentLookup, ProjectDocuments, RecipeRef, ScriptRef, SubParams, TimeoutRef, WorkflowRef,
    WorkspaceRef,
};
pub use api::{Loaded, load_workflow, load_workflow_checked};
pub use ast::{
    Bounds, Branch, BranchBody, CatchTransition, ConditionRule, Criticality, FanOut, InboxKind,
    InboxSpec, OnTransition, ParamSchema, ParamType, RetrySpec, ScriptSource, Spanned, StateSpec,
    TaskSpec, TaskType, TerminalOutcome, Tolerance, WorkflowDoc,
};
pub use condition::{
    CompareOp, Condition, ConditionError, ConditionErrorKind, EvalError, Expr, ExprKind, Variable,
};
pub use diagnostic::{Code, Diagnostic, Diagnostics, Severity, Span};
pub use duration::{
    DurationError, MAX_DURATION, MAX_DURATION_SECS, parse_duration, saturating_secs,
};
pub use error_kind::ErrorKind;
pub use load_cache::load_workflow_shared;
pub use loader::{LoadOptions, parse_yaml};
pub use node::{YamlKind, YamlNode};
pub use outcome::{Outcome, Outcomes, PossibleOutcome, Routing, catch_kind};
pub use params::{ParamError, ParamErrors, validate_params};
pub use plan::{Plan, StateGraph};
pub use runtime::{
    DocumentError, DocumentSource, Scope, YamlRuntime, YamlStartError, is_held_task,
};
pub use shell_splice::{ShellCommand, ShellRun};
pub use template::{
    Placeholder, Template, TemplateRoot, TemplateValue, TemplateWarning, likely_typos,
    parse_placeholders, resolve_str, resolve_value,
};
