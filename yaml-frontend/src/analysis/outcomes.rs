//! Transitions against the outcome table: transitions that can never be taken, outcomes that
//! nothing routes, and conditions that may fall through.

use crate::ast::{Defaults, FailurePolicy, InboxKind, StateSpec, TaskSpec, TaskType, WorkflowDoc};
use crate::build::Ctx;
use crate::condition::{Condition, ExprKind};
use crate::diagnostic::{Code, Span};
use crate::error_kind::ErrorKind;
use crate::outcome::{Outcome, Outcomes, Routing};

/// `failure` is the reference's generic word for a task that did not succeed, and its own
/// example writes `on: failure` on an `agent_task`: it routes every failure of the task that
/// no route of its own kind takes ([`ErrorKind::is_task_failure`]). A transition on it where
/// the task cannot fail (a timer, a gate without a timeout) is reported as a warning rather
/// than refused. So is a `catch:` of a kind the task never ends with: `catch:` takes the seven
/// kinds of the reference's vocabulary (§4.2) on any state, and a block of them written once
/// for every state is harmless where one of them cannot happen.
const GENERIC_FAILURE: &str = "failure";

/// Whether a task that ends with one of `o` can fail in a way `failure` routes.
fn can_fail(o: &Outcomes) -> bool {
    o.iter().any(|p| {
        p.outcome
            .catch_kind()
            .is_some_and(ErrorKind::is_task_failure)
    })
}

pub(super) fn check(ctx: &mut Ctx<'_>, doc: &WorkflowDoc, settings: Defaults) {
    check_states(ctx, doc, settings, |_| true);
}

/// [`check`] of the states `checked` takes (those without errors of their own, in a
/// document that has errors: a state read only in part would be judged by its defaults).
pub(crate) fn check_states(
    ctx: &mut Ctx<'_>,
    doc: &WorkflowDoc,
    settings: Defaults,
    checked: impl Fn(&crate::ast::StateSpec) -> bool,
) {
    // What a run takes where the state sets no timeout: the document's defaults, then the
    // settings'.
    let defaults = doc.defaults.or(settings);
    for s in doc.states.values().filter(|s| checked(s)) {
        if s.task_type == TaskType::Terminal {
            continue;
        }
        let of_type = match &s.task {
            TaskSpec::Gate(inbox) => inbox.outcomes(),
            _ => s.task_type.outcomes(),
        };
        let configured = s.outcomes(&defaults);
        for t in &s.on {
            let key = t.outcome.as_str();
            let taken =
                |o: &Outcomes| o.can_end_with(key) || (key == GENERIC_FAILURE && can_fail(o));
            transition(
                ctx,
                s,
                &of_type,
                &configured,
                t.span,
                &format!("on: {key}"),
                key,
                taken,
            );
        }
        for c in &s.catch {
            let key = c.kind.as_str();
            // An entry that `on:` leaves no outcome to is never taken: of the outcomes the
            // task can end with, those the resolver would give this entry without `on:`, it
            // gives to an `on:` entry (said once, where one leads elsewhere). Whether an
            // outcome can happen is said at its own entry.
            let outcomes: Vec<&str> = of_type.iter().map(|p| p.outcome.as_str()).collect();
            let reached: Vec<&str> = outcomes
                .iter()
                .copied()
                .filter(|o| resolved(s, o, false) == Some(Taker::Catch(c.kind)))
                .collect();
            if !reached.is_empty()
                && !outcomes
                    .iter()
                    .any(|o| resolved(s, o, true) == Some(Taker::Catch(c.kind)))
            {
                let first = reached.iter().find_map(|o| match resolved(s, o, true) {
                    Some(Taker::On(i)) if s.on[i].target != c.target => Some(&s.on[i]),
                    _ => None,
                });
                if let Some(on) = first {
                    ctx.warn(
                        c.span,
                        Code::ShadowedCatch,
                        format_args!(
                            "state '{}' has 'catch: {key}' to '{}', which is never taken: \
                             'on: {}' (at {}:{}) routes the outcome to '{}' first",
                            s.name, c.target, on.outcome, on.span.line, on.span.column, on.target
                        ),
                    );
                }
                continue;
            }
            let taken = |o: &Outcomes| {
                o.can_be_caught_as(c.kind) || (c.kind == ErrorKind::Failure && can_fail(o))
            };
            transition(
                ctx,
                s,
                &of_type,
                &configured,
                c.span,
                &format!("catch: {key}"),
                key,
                taken,
            );
        }
        // A retry on a kind the task never ends with never retries: said as for `catch:`.
        for (kind, span) in s
            .retry
            .iter()
            .flat_map(|r| r.on.iter().zip(r.on_spans.iter()))
        {
            let key = kind.as_str();
            let taken = |o: &Outcomes| {
                o.can_be_caught_as(*kind) || (*kind == ErrorKind::Failure && can_fail(o))
            };
            transition(
                ctx,
                s,
                &of_type,
                &configured,
                *span,
                &format!("retry.on: {key}"),
                key,
                taken,
            );
        }
        if !policy_routes(&doc.on_failure, s) {
            unrouted(ctx, s, &configured);
        }
        fall_through(ctx, s);
    }
}

/// What a task of `s`'s kind ends with, for messages: `fired`, `success, failure, timeout`.
fn listing(o: &Outcomes) -> String {
    let names: Vec<&str> = o
        .iter()
        .filter(|p| p.routing == Routing::Expected)
        .map(|p| p.outcome.as_str())
        .collect();
    if names.is_empty() {
        "no outcome that reaches 'on:' (its rules route by themselves)".to_owned()
    } else {
        names.join(", ")
    }
}

fn kind_of(s: &StateSpec) -> String {
    match &s.task {
        TaskSpec::Gate(inbox) => {
            let kind = match inbox.kind {
                InboxKind::Approval => "APPROVAL",
                InboxKind::Decision => "DECISION",
                _ => "FEEDBACK",
            };
            format!("{} {kind} gate_task", article(kind))
        }
        _ => format!("{} {}", article(s.task_type.as_str()), s.task_type.as_str()),
    }
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U']) {
        "an"
    } else {
        "a"
    }
}

/// Which entry of a state routes an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taker {
    /// The `on:` entry at this index.
    On(usize),
    /// The `catch:` entry of this kind.
    Catch(ErrorKind),
}

/// The entry that routes `outcome` in state `s`, as `PlanState::route` resolves it: an exact
/// `on:` entry, else the `catch:` entry of its kind; a timeout then as the kind it stands for
/// in this task type; a failure of the task then as `failure`. Without `on:` entries when
/// `with_on` is false.
fn resolved(s: &StateSpec, outcome: &str, with_on: bool) -> Option<Taker> {
    let exactly = |o: &str| {
        with_on
            .then(|| s.on.iter().position(|t| t.outcome == o))
            .flatten()
            .map(Taker::On)
            .or_else(|| {
                let kind = ErrorKind::parse(o)?;
                s.catch
                    .iter()
                    .any(|c| c.kind == kind)
                    .then_some(Taker::Catch(kind))
            })
    };
    let kind = ErrorKind::parse(outcome);
    exactly(outcome)
        .or_else(|| {
            let stands_for = s.task_type.timeout_stands_for()?;
            (kind == Some(ErrorKind::Timeout)).then(|| exactly(stands_for.as_str()))?
        })
        .or_else(|| {
            kind.is_some_and(ErrorKind::is_task_failure)
                .then(|| exactly(ErrorKind::Failure.as_str()))?
        })
}

#[allow(
    clippy::too_many_arguments,
    reason = "one call site per transition block"
)]
fn transition(
    ctx: &mut Ctx<'_>,
    s: &StateSpec,
    of_type: &Outcomes,
    configured: &Outcomes,
    span: Span,
    written: &str,
    key: &str,
    taken: impl Fn(&Outcomes) -> bool,
) {
    let name = &s.name;
    if !taken(of_type) {
        let outcomes: Vec<&str> = of_type.iter().map(|p| p.outcome.as_str()).collect();
        let never = if written.starts_with("retry.on:") {
            "it is never retried"
        } else {
            "the transition can never be taken"
        };
        let text = format!(
            "state '{name}' has '{written}', but {} never ends that way: it ends with {}; \
             {never}{}",
            kind_of(s),
            listing(of_type),
            crate::suggest::hint(key, outcomes.iter().copied())
        );
        if key == GENERIC_FAILURE {
            ctx.warn(
                span,
                Code::ImpossibleOutcome,
                format_args!("{text} ('failure' routes the errors of a task that can fail)"),
            );
        } else {
            // A warning, never an error: the reference's loader checks `start`, the states and
            // where `else` stands, and a transition that is never taken changes nothing; the
            // outcome the task does end with is named as unrouted (MAG-YA003) if it is.
            ctx.warn(span, Code::ImpossibleOutcome, text);
        }
    } else if !taken(configured) {
        let why = match &s.task {
            TaskSpec::Condition { .. } => {
                "a condition_task with 'else' always routes by its rules".to_owned()
            }
            TaskSpec::Timer { .. } => {
                "only a timer whose duration is a ${…} template can fail".to_owned()
            }
            _ if key == "timeout" => format!(
                "it has no timeoutSeconds (nor a default in 'defaults:' or the settings), so {} \
                 never times out",
                kind_of(s)
            ),
            _ => format!("as configured it ends with {}", listing(configured)),
        };
        ctx.warn(
            span,
            Code::InertTransition,
            format_args!("state '{name}' has '{written}', which is never taken: {why}"),
        );
    }
}

/// Whether the document's `onFailure:` takes over the outcomes `s` does not route, instead of
/// failing the run: a fallback (to another state), a person's decision, or continuing to
/// the state's `on: success` target. `compensate` still fails the run, after its saga.
fn policy_routes(policy: &FailurePolicy, s: &StateSpec) -> bool {
    match policy {
        FailurePolicy::Fallback(to) => to.value != s.name,
        FailurePolicy::PauseForApproval { .. } => true,
        FailurePolicy::ContinueOnError => s.on.iter().any(|t| t.outcome == "success"),
        FailurePolicy::FailFast | FailurePolicy::Compensate => false,
    }
}

fn unrouted(ctx: &mut Ctx<'_>, s: &StateSpec, configured: &Outcomes) {
    // A state with no transitions at all is reported once, as MAG-Y014; a condition's
    // fall-through as MAG-YA004.
    if (s.on.is_empty() && s.catch.is_empty()) || matches!(s.task, TaskSpec::Condition { .. }) {
        return;
    }
    let missing: Vec<&Outcome> = configured
        .iter()
        .filter(|p| p.routing == Routing::Expected)
        .map(|p| &p.outcome)
        .filter(|o| {
            let routes = |outcome: &str, kind: Option<ErrorKind>| {
                s.on.iter().any(|t| t.outcome == outcome)
                    || kind.is_some_and(|k| s.catch.iter().any(|c| c.kind == k))
            };
            let stands_for = s
                .task_type
                .timeout_stands_for()
                .filter(|_| o.catch_kind() == Some(ErrorKind::Timeout));
            let failure = o
                .catch_kind()
                .is_some_and(ErrorKind::is_task_failure)
                .then_some(ErrorKind::Failure);
            !(routes(o.as_str(), o.catch_kind())
                || stands_for.is_some_and(|k| routes(k.as_str(), Some(k)))
                || failure.is_some_and(|k| routes(k.as_str(), Some(k))))
        })
        .collect();
    if missing.is_empty() {
        return;
    }
    let names: Vec<String> = missing.iter().map(|o| format!("`{o}`")).collect();
    let (list, them) = match names.as_slice() {
        [one] => (one.clone(), "it"),
        [init @ .., last] => (format!("{} or {last}", init.join(", ")), "them"),
        [] => return,
    };
    // Answers and options are outcomes, not error kinds: only `on:` routes them.
    let routes = if missing.iter().all(|o| o.catch_kind().is_none()) {
        "no 'on:'"
    } else {
        "no 'on:' or 'catch:'"
    };
    ctx.warn(
        s.span,
        Code::UnroutedOutcome,
        format_args!(
            "{} {list} of {} `{}` would fail the run: {routes} routes {them}",
            article(&list[1..]),
            s.task_type.as_str(),
            s.name
        ),
    );
}

/// A condition without `else` whose rules may all be false ends with `success` and no
/// target; unless `on: success` routes that, the run fails.
fn fall_through(ctx: &mut Ctx<'_>, s: &StateSpec) {
    let TaskSpec::Condition {
        rules,
        otherwise: None,
    } = &s.task
    else {
        return;
    };
    if rules.is_empty()
        || s.on.iter().any(|t| t.outcome == "success")
        || rules.iter().any(|r| always_true(&r.condition))
    {
        return;
    }
    ctx.warn(
        s.span,
        Code::NoElse,
        format_args!(
            "condition_task '{}' has no 'else' and its rules may all be false: then the run \
             fails with \"no transition for outcome 'success'\"; expected a last rule \
             '- else: <state>' (or 'on: success')",
            s.name
        ),
    );
}

/// True for a condition that reads no variable and evaluates to true.
fn always_true(c: &Condition) -> bool {
    fn reads_variables(e: &crate::condition::Expr) -> bool {
        use ExprKind as K;
        match &e.kind {
            K::Var(_) | K::Placeholder(_) | K::Template(_) => true,
            K::Literal(_) => false,
            K::Index(a, b) | K::Compare(_, a, b) | K::Elvis(a, b) => {
                reads_variables(a) || reads_variables(b)
            }
            K::And(terms) | K::Or(terms) => terms.iter().any(reads_variables),
            K::Property(a, _) | K::Not(a) | K::Matches(a, _) => reads_variables(a),
            K::In(a, items) => reads_variables(a) || items.iter().any(reads_variables),
            K::Ternary(a, b, c) => reads_variables(a) || reads_variables(b) || reads_variables(c),
        }
    }
    let null = serde_json::Value::Null;
    !reads_variables(c.expr()) && c.evaluate(&null, &null) == Ok(true)
}
