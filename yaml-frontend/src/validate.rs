//! Semantic pass over a built document: `start` and every transition target must name a
//! state; warns about states with no way out. What the document does when it runs (states
//! never reached, outcomes nothing routes, ...) is `analysis/`'s.

use crate::ast::{TaskSpec, TaskType, WorkflowDoc};
use crate::build::Ctx;
use crate::diagnostic::{Code, Span};
use crate::suggest;

/// Reports every cross-reference error and warning of `doc`.
pub(crate) fn validate(ctx: &mut Ctx<'_>, doc: &WorkflowDoc) {
    let declared = ctx.declared_states.clone();
    let names: Vec<&str> = declared.iter().map(String::as_str).collect();
    let exists = |n: &str| names.contains(&n);
    let check = |ctx: &mut Ctx<'_>, target: &str, span: Span, what: &str| {
        if !exists(target) {
            let hint = suggest::hint(target, names.iter().copied());
            ctx.error(
                span,
                Code::UnknownTarget,
                format_args!(
                    "unknown {what} '{target}': expected one of the states {}{hint}",
                    suggest::list(names.iter().copied())
                ),
            );
        }
    };
    if !doc.start.value.is_empty() && !names.is_empty() && !exists(&doc.start.value) {
        let hint = suggest::hint(&doc.start.value, names.iter().copied());
        ctx.error(
            doc.start.span,
            Code::UnknownStart,
            format_args!(
                "start state '{}' is not defined: expected one of the states {}{hint}",
                doc.start.value,
                suggest::list(names.iter().copied())
            ),
        );
    }
    match &doc.on_failure {
        crate::ast::FailurePolicy::Fallback(f)
        | crate::ast::FailurePolicy::PauseForApproval {
            fallback: Some(f), ..
        } => check(ctx, &f.value, f.span, "fallback state"),
        _ => {}
    }
    for (target, span) in std::mem::take(&mut ctx.dropped_targets) {
        check(ctx, &target, span, "transition target");
    }
    // A state that only undoes others (a `compensate:` target no transition or start leads
    // to) runs its task and reports its outcome among the compensations: its transitions
    // are never followed, so it needs none.
    let compensation_only = |name: &str| {
        let is_compensation = doc
            .states
            .values()
            .any(|s| s.compensate.as_ref().is_some_and(|c| c.value == name));
        let is_entered = doc.start.value == name
            || doc.states.values().any(|s| {
                s.on.iter().any(|t| t.target == name)
                    || s.catch.iter().any(|t| t.target == name)
                    || matches!(&s.task, TaskSpec::Condition { rules, otherwise }
                        if rules.iter().any(|r| r.target == name)
                            || otherwise.as_ref().is_some_and(|o| o.value == name))
            })
            || matches!(&doc.on_failure,
                crate::ast::FailurePolicy::Fallback(f)
                | crate::ast::FailurePolicy::PauseForApproval { fallback: Some(f), .. }
                    if f.value == name);
        is_compensation && !is_entered
    };
    for s in doc.states.values() {
        if let Some(c) = &s.compensate {
            check(ctx, &c.value, c.span, "compensation state");
        }
        for t in &s.on {
            check(ctx, &t.target, t.target_span, "transition target");
        }
        for t in &s.catch {
            check(ctx, &t.target, t.target_span, "transition target");
        }
        if let TaskSpec::Condition { rules, otherwise } = &s.task {
            for r in rules {
                check(ctx, &r.target, r.target_span, "transition target");
            }
            if let Some(o) = otherwise {
                check(ctx, &o.value, o.span, "transition target");
            }
        }
        // An `on:` or `catch:` whose entries were refused (reported as errors already, a
        // null one too) is not reported again as missing.
        let declared = |key: &str| match s.raw.get(key) {
            None => false,
            Some(serde_json::Value::Object(m)) => !m.is_empty(),
            Some(_) => true,
        };
        // A condition routes by its `transitions:`, whose absence or emptiness is an error
        // of its own (MAG-Y006).
        let has_way_out = !s.on.is_empty()
            || !s.catch.is_empty()
            || declared("on")
            || declared("catch")
            || s.task_type == TaskType::ConditionTask;
        if s.task_type != TaskType::Terminal && !has_way_out && !compensation_only(&s.name) {
            ctx.warn(
                s.span,
                Code::NoWayOut,
                format_args!(
                    "state '{}' ({}) has no 'on:' or 'catch:' transitions: expected a way out; \
                     the run will fail with \"no transition for outcome\"",
                    s.name,
                    s.task_type.as_str()
                ),
            );
        }
    }
}
