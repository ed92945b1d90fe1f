//! Structural pass for one state: common fields and type-specific fields (its routing is
//! read in `transitions`).

use serde_json::Value;

use crate::ast::{
    ConditionRule, ScriptSource, Spanned, Splice, StateSpec, TaskSpec, TaskType, TerminalOutcome,
};
use crate::diagnostic::{Code, Span};
use crate::duration::parse_duration;
use crate::node::{YamlKind, YamlNode};
use crate::suggest;

use super::checks::{check_item_placeholders, check_templates, parse_condition};
use super::ctx::{self, Ctx};
use super::transitions::{catch_block, on_block, retry_block, target};

pub(crate) const COMMON: &[&str] = &[
    "type",
    "description",
    "timeoutSeconds",
    "storeAs",
    "on",
    "catch",
    "retry",
    "compensate",
];

pub(crate) fn type_fields(t: TaskType) -> &'static [&'static str] {
    match t {
        TaskType::AgentTask => &["recipe", "params"],
        TaskType::ShellTask => &["run", "dirName", "splice"],
        TaskType::ScriptTask => &["source", "path", "dirName"],
        TaskType::ToolTask => &["tool", "params"],
        TaskType::GateTask => &["inbox", "onReject"],
        TaskType::TimerTask => &["duration"],
        TaskType::ConditionTask => &["transitions"],
        TaskType::WorkflowTask => &["workflow", "params"],
        TaskType::ParallelTask => &["branches", "maxParallelism", "toleratedFailures"],
        TaskType::ForeachTask => &[
            "items",
            "workflow",
            "params",
            "start",
            "states",
            "maxParallelism",
            "toleratedFailures",
        ],
        TaskType::Terminal => &["outcome", "result"],
    }
}

/// Builds one state; `None` when its type is missing or unknown (already reported).
pub(super) fn build_state(
    ctx: &mut Ctx<'_>,
    name: &str,
    span: Span,
    node: &YamlNode,
) -> Option<StateSpec> {
    let what = format!("state '{name}'");
    let node = ctx.map(node, &what)?;
    check_templates(ctx, node);
    let Some(task_type) = task_type(ctx, node, &what) else {
        // The state is left out, but what every state has is still read, so that one pass
        // reports the rest of its mistakes: its routes, their targets, its retry.
        let on = on_block(ctx, node, &what);
        let catch = catch_block(ctx, node, &what);
        let _ = retry_block(ctx, node, &what);
        let targets = on.into_iter().map(|t| (t.target, t.target_span));
        let targets = targets.chain(catch.into_iter().map(|c| (c.target, c.target_span)));
        ctx.dropped_targets.extend(targets);
        return None;
    };
    check_item_placeholders(ctx, node, task_type == TaskType::ForeachTask);
    let mut allowed: Vec<&str> = COMMON.to_vec();
    allowed.extend_from_slice(type_fields(task_type));
    if task_type == TaskType::Terminal {
        for key in ["on", "catch", "retry", "transitions"] {
            if let Some(v) = node.get(key) {
                let key_span = key_span(node, key).unwrap_or(v.span);
                ctx.error(
                    key_span,
                    Code::TerminalTransitions,
                    format_args!(
                        "terminal {what} has '{key}:': expected no transitions or retry on a \
                         terminal state (it ends the run)"
                    ),
                );
            }
        }
    }
    // A terminal's transition keys and `compensate:` are refused by checks of their own: not
    // reported again, nor offered as what a terminal takes.
    let reported: &[&str] = if task_type == TaskType::Terminal {
        allowed.retain(|k| !matches!(*k, "on" | "catch" | "retry" | "compensate"));
        &["on", "catch", "retry", "compensate", "transitions"]
    } else {
        &[]
    };
    let what_typed = format!("{what} ({})", task_type.as_str());
    // A gate's inbox fields written on the state itself: said where they belong.
    let mut reported = reported.to_vec();
    if task_type == TaskType::GateTask {
        for (k, _) in node.as_map().unwrap_or_default() {
            let Some(key) = k.key_text() else { continue };
            if let Some(field) = super::inbox::INBOX_FIELDS
                .iter()
                .find(|f| **f == key && !allowed.contains(f))
            {
                ctx.error(
                    k.span,
                    Code::UnknownField,
                    format_args!(
                        "unknown field '{field}' in {what_typed}: it belongs under 'inbox:' \
                         (`inbox: {{ {field}: … }}`)"
                    ),
                );
                reported.push(field);
            }
        }
    }
    // Routes written beside an empty `on:` (or `catch:`, `retry:`) at its indentation rather
    // below it: said where they belong.
    let beside = fields_beside_an_empty_block(node, &allowed, &reported);
    for (k, key, block) in &beside {
        ctx.error(
            k.span,
            Code::UnknownField,
            format_args!(
                "unknown field '{key}' in {what_typed}: it belongs under the empty '{block}:' \
                 above it; indent it below '{block}:' (`{block}: {{ {key}: … }}`)"
            ),
        );
    }
    reported.extend(beside.iter().map(|(_, key, _)| key.as_str()));
    ctx.check_fields_except(node, &allowed, &reported, &what_typed);

    let description = ctx.opt_str(node, "description", &what);
    let timeout_seconds = node
        .get("timeoutSeconds")
        .and_then(|v| match ctx::seconds(v) {
            Some(n) if n > 0.0 => {
                let field = format!("timeoutSeconds of {what}");
                ctx::within_duration_limit(ctx, v, Code::InvalidTimeout, &field, n).then_some(n)
            }
            _ => {
                ctx.error(
                    v.span,
                    Code::InvalidTimeout,
                    format_args!(
                        "timeoutSeconds of {what} is {}: expected a positive number of seconds",
                        ctx::found(v)
                    ),
                );
                None
            }
        });
    check_inert_timeout(ctx, node, task_type, &what);
    let store_as = node.get("storeAs").and_then(|v| match v.as_str() {
        Some(s) if is_variable_key(s) => Some(s.to_owned()),
        _ => {
            ctx.error(
                v.span,
                Code::InvalidStoreAs,
                format_args!(
                    "storeAs of {what} is {}: expected a variable key of 1 to {MAX_KEY} bytes \
                     without '.', spaces, quotes, brackets, braces, '$' or '\\' (e.g. \
                     `review` or `check-output`)",
                    ctx::found(v)
                ),
            );
            None
        }
    });
    let (on, catch, retry) = if task_type == TaskType::Terminal {
        (Vec::new(), Vec::new(), None)
    } else {
        (
            on_block(ctx, node, &what),
            catch_block(ctx, node, &what),
            retry_block(ctx, node, &what),
        )
    };
    let compensate = node.get("compensate").and_then(|v| match v.as_str() {
        Some(s) if task_type != TaskType::Terminal => Some(Spanned {
            value: s.to_owned(),
            span: v.span,
        }),
        _ => {
            ctx.error(
                v.span,
                Code::InvalidValue,
                format_args!(
                    "compensate of {what} is {}: expected the name of a state (and no compensate on a terminal)",
                    ctx::found(v)
                ),
            );
            None
        }
    });
    let task = task_spec(ctx, task_type, node, &what);
    Some(StateSpec {
        compensate,
        name: name.to_owned(),
        span,
        task_type,
        description,
        timeout_seconds,
        store_as,
        on,
        catch,
        retry,
        task,
        raw: node.to_json(),
    })
}

/// `MAG-Y039`: `timeoutSeconds` on a task type that never times out (a warning, not an error:
/// the reference lists it among the fields common to every state, §2.2): a `timer_task` always
/// ends `fired` after its `duration` (§3.5), and a `condition_task` is decided at once (§3.6).
fn check_inert_timeout(ctx: &mut Ctx<'_>, node: &YamlNode, task_type: TaskType, what: &str) {
    let why = match task_type {
        TaskType::TimerTask => {
            "which always ends 'fired' once its 'duration' has passed (the wait is 'duration')"
        }
        TaskType::ConditionTask => "which is decided at once by its transitions",
        _ => return,
    };
    let Some(span) = key_span(node, "timeoutSeconds") else {
        return;
    };
    ctx.warn(
        span,
        Code::InertField,
        format_args!(
            "timeoutSeconds of {what} has no effect on a {}, {why}: remove it",
            task_type.as_str()
        ),
    );
}

fn key_span(map: &YamlNode, key: &str) -> Option<Span> {
    map.as_map()?
        .iter()
        .find(|(k, _)| k.key_text().as_deref() == Some(key))
        .map(|(k, _)| k.span)
}

/// The longest variable key, in bytes.
const MAX_KEY: usize = 256;

/// Whether `s` can be a variable key (`storeAs`). The reference sets no form, and reads
/// variables as `#state['<key>']`, so a key may be `check-output` as well as `review`; it
/// may not hold what the syntax that reads it gives a meaning: `.` (a nested value of
/// `${state.a.b}`), quotes and brackets (`#state['k']`), braces and `$` (a placeholder),
/// spaces and control characters.
fn is_variable_key(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_KEY
        && !s
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || ".{}$[]'\"\\".contains(c))
}

fn task_type(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) -> Option<TaskType> {
    let names = TaskType::ALL.iter().map(|(n, _)| *n);
    let Some(t) = node.get("type") else {
        // A key that is `type` misspelt is named, where it stands.
        let misspelt = node.as_map().unwrap_or_default().iter().find_map(|(k, _)| {
            let key = k.key_text()?;
            (suggest::did_you_mean(&key, ["type"]).is_some()).then_some((key, k.span))
        });
        match misspelt {
            Some((key, span)) => ctx.error(
                span,
                Code::MissingField,
                format_args!(
                    "{what} has no 'type' (did you mean 'type' for '{key}'?): expected one of {}",
                    suggest::list(names)
                ),
            ),
            None => ctx.error(
                node.span,
                Code::MissingField,
                format_args!(
                    "{what} has no 'type': expected one of {}",
                    suggest::list(names)
                ),
            ),
        }
        return None;
    };
    let parsed = t.as_str().and_then(TaskType::parse);
    if t.as_str().is_none() {
        ctx.wrong_type(
            t,
            &format!("the type of {what}"),
            &format!("one of {}", suggest::list(names)),
        );
        return None;
    }
    if parsed.is_none() {
        let hint = t
            .as_str()
            .map(|s| suggest::hint(s, names.clone()))
            .unwrap_or_default();
        let shown = t.as_str().map_or_else(
            || ctx::found(t),
            |s| {
                let (name, note) = ctx::shown_name(s);
                format!("'{name}'{note}")
            },
        );
        ctx.error(
            t.span,
            Code::UnknownTaskType,
            format_args!(
                "unknown task type {shown} in {what}: expected one of {}{hint}",
                suggest::list(names)
            ),
        );
    }
    parsed
}

/// Reads an optional word field matched case-insensitively against `choices`.
pub(super) fn word<T: Copy>(
    ctx: &mut Ctx<'_>,
    map: &YamlNode,
    key: &str,
    choices: &[(&'static str, T)],
    what: &str,
) -> Option<T> {
    let v = map.get(key)?;
    let names = choices.iter().map(|(n, _)| *n);
    let hit = v
        .as_str()
        .and_then(|s| choices.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)));
    if hit.is_none() {
        let hint = v
            .as_str()
            .map(|s| suggest::hint(s, names.clone()))
            .unwrap_or_default();
        ctx.error(
            v.span,
            Code::InvalidValue,
            format_args!(
                "'{key}' of {what} is {}: expected one of {}{hint}",
                ctx::found(v),
                suggest::list(names)
            ),
        );
    }
    hit.map(|(_, t)| *t)
}

/// A `workflow_task`'s `params:` are the sub-run's parameters: a mapping, or one `${…}` that
/// resolves to one at run time. A list or another scalar could only fail the sub-run's start.
fn sub_run_params(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) {
    params_mapping(ctx, node, what, "the sub-workflow's parameters");
}

/// `MAG-Y007` when a state's `params:` is neither a mapping (of `whose` parameters), nor null,
/// nor one `${…}` that gives a mapping.
fn params_mapping(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str, whose: &str) {
    let Some(params) = node.get("params") else {
        return;
    };
    let templated = params
        .as_str()
        .is_some_and(|t| t.trim_start().starts_with("${") && t.trim_end().ends_with('}'));
    let null = matches!(params.kind, crate::node::YamlKind::Null);
    if params.as_map().is_none() && !null && !templated {
        ctx.wrong_type(
            params,
            &format!("the 'params' of {what}"),
            &format!("a mapping of {whose} (or one ${{…}} that gives one)"),
        );
    }
}

/// `MAG-Y043` (a warning): a literal `params.schema` that a run would refuse (`[MAG-AG004]`)
/// with a recipe that asks for a structured reply; said by `validate`, not first at run time.
/// A schema with placeholders is the run's to check.
fn check_agent_schema(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) {
    let Some(schema) = node.get("params").and_then(|p| p.get("schema")) else {
        return;
    };
    let value = schema.to_json();
    if value.is_null() || value.to_string().contains("${") {
        return;
    }
    if let Err(e) = magrathea_exec::agent::check_reply_schema(&value) {
        ctx.warn(
            schema.span,
            Code::AgentSchema,
            format_args!(
                "params.schema of {what}: {e}; expected a JSON Schema (`{{type: object, \
                 properties: …}}`) or a map of the reply's fields to their schemas (`{{risk: \
                 {{type: string}}}}`): with a recipe that asks for a structured reply the task \
                 would end technical_error [MAG-AG004]"
            ),
        );
    }
}

fn json_field(node: &YamlNode, key: &str) -> Value {
    node.get(key).map_or(Value::Null, YamlNode::to_json)
}

/// `MAG-Y028`: a placeholder in a shell command is code injection waiting for a value with a
/// quote or `;`. One error per placeholder, naming the variable that carries its value.
fn check_splice(ctx: &mut Ctx<'_>, node: &YamlNode, run: &str, what: &str) {
    for p in crate::template::parse_placeholders(run) {
        let (shown, env) = splice_names(&p);
        ctx.error(
            placeholder_span(node, run, &p),
            Code::ShellSplice,
            format_args!(
                "run of {what} splices '{shown}' into the shell command under `splice: none`: \
                 use \"${env}\" instead (double-quoted), or drop `splice: none` to pass each \
                 value through a variable of its own (or set `splice: quoted` to splice each \
                 value single-quoted)"
            ),
        );
    }
}

/// `MAG-Y028` under `splice: variables`: a placeholder where no splice is safe (arithmetic,
/// a quoted here-document).
fn check_splice_spots(ctx: &mut Ctx<'_>, node: &YamlNode, run: &str, what: &str) {
    let Some(command) = crate::shell_splice::ShellCommand::parse(run) else {
        return;
    };
    for (p, place) in command.unsafe_spots() {
        let (shown, env) = splice_names(p);
        ctx.error(
            placeholder_span(node, run, p),
            Code::ShellSplice,
            format_args!(
                "run of {what} has '{shown}' {place}, where no value can be spliced as data: \
                 use \"${env}\" (double-quoted) outside it instead"
            ),
        );
    }
}

/// Where placeholder `p` of the state's `run:` text stands in the document (the start of
/// `run:`'s value where the scalar's text is not the document's, folded or escaped).
fn placeholder_span(node: &YamlNode, run: &str, p: &crate::template::Placeholder) -> Span {
    node.get("run").map_or(node.span, |n| {
        n.span_at(
            run.get(..p.offset)
                .map_or(0, |before| before.chars().count()),
        )
    })
}

/// A placeholder as written, and the variable that carries its value.
fn splice_names(p: &crate::template::Placeholder) -> (String, String) {
    let (root, prefix) = match p.root {
        crate::template::TemplateRoot::Params => ("params", "PARAM"),
        _ => ("state", "VAR"),
    };
    let path = p.path.join(".");
    (
        format!("${{{root}.{path}}}"),
        crate::runtime::env_name(prefix, &path),
    )
}

fn task_spec(ctx: &mut Ctx<'_>, t: TaskType, node: &YamlNode, what: &str) -> TaskSpec {
    let req = |ctx: &mut Ctx<'_>, key: &str| ctx.required_str(node, key, what).unwrap_or_default();
    match t {
        TaskType::AgentTask => {
            params_mapping(
                ctx,
                node,
                what,
                "the agent's parameters (prompt, schema, …)",
            );
            check_agent_schema(ctx, node, what);
            TaskSpec::Agent {
                recipe: req(ctx, "recipe"),
                params: json_field(node, "params"),
            }
        }
        TaskType::ShellTask => {
            let run = req(ctx, "run");
            let splice = word(
                ctx,
                node,
                "splice",
                &[
                    ("none", Splice::None),
                    ("quoted", Splice::Quoted),
                    ("variables", Splice::Variables),
                ],
                what,
            )
            .unwrap_or(Splice::Variables);
            match splice {
                Splice::None => check_splice(ctx, node, &run, what),
                Splice::Variables => check_splice_spots(ctx, node, &run, what),
                _ => {}
            }
            let dir_name = ctx.opt_str(node, "dirName", what);
            if dir_name.is_none() && node.get("dirName").is_none() {
                ctx.warn(
                    node.span,
                    Code::ShellWithoutWorkspace,
                    format_args!(
                        "{what} (shell_task) has no 'dirName': expected the workspace it runs \
                         in (e.g. 'dirName: workspace'); without one the step ends \
                         technical_error ([MAG-SH001])"
                    ),
                );
            }
            TaskSpec::Shell {
                run,
                dir_name,
                splice,
            }
        }
        TaskType::ScriptTask => TaskSpec::Script {
            source: word(
                ctx,
                node,
                "source",
                &[
                    ("document", ScriptSource::Document),
                    ("workspace", ScriptSource::Workspace),
                ],
                what,
            )
            .unwrap_or(ScriptSource::Document),
            path: req(ctx, "path"),
            dir_name: ctx.opt_str(node, "dirName", what),
        },
        TaskType::ToolTask => {
            params_mapping(ctx, node, what, "the tool's parameters");
            TaskSpec::Tool {
                tool: req(ctx, "tool"),
                params: json_field(node, "params"),
            }
        }
        TaskType::WorkflowTask => {
            sub_run_params(ctx, node, what);
            TaskSpec::Workflow {
                workflow: req(ctx, "workflow"),
                params: json_field(node, "params"),
            }
        }
        TaskType::TimerTask => {
            // A number alone has no unit: said with the units it may take.
            if let Some(v) = node
                .get("duration")
                .filter(|v| matches!(v.kind, YamlKind::Int(_) | YamlKind::Float(_)))
            {
                let n = match (&v.written, &v.kind) {
                    (Some(w), _) => w.to_string(),
                    (None, YamlKind::Int(i)) => i.to_string(),
                    (None, YamlKind::Float(f)) => f.to_string(),
                    _ => String::new(),
                };
                // A number of seconds is offered as the fix only where it would be one.
                let offered = if n.starts_with('-') || n.eq_ignore_ascii_case("nan") {
                    "a duration of at least 0 such as '30s'".to_owned()
                } else {
                    format!("a duration such as '{n}s'")
                };
                ctx.error(
                    v.span,
                    Code::InvalidDuration,
                    format_args!(
                        "the duration of {what} is a number ({n}) without a unit: expected \
                         {offered}, '5m', '2h' or 'PT1H'"
                    ),
                );
                return TaskSpec::Timer {
                    duration: String::new(),
                    parsed: None,
                };
            }
            let duration = req(ctx, "duration");
            // A missing or empty duration is said once, by `req`. Text that only looks like a
            // placeholder (`${param.d}`, an unclosed `${params.d`) stays as written, and is
            // judged as a duration.
            let templated = crate::template::Template::parse(&duration)
                .as_literal()
                .is_none();
            let parsed = if templated || duration.trim().is_empty() {
                None
            } else {
                match parse_duration(&duration) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        if let Some(v) = node.get("duration").filter(|v| v.as_str().is_some()) {
                            ctx.error(v.span, Code::InvalidDuration, format_args!("{e} in {what}"));
                        }
                        None
                    }
                }
            };
            TaskSpec::Timer { duration, parsed }
        }
        TaskType::Terminal => TaskSpec::Terminal {
            outcome: word(
                ctx,
                node,
                "outcome",
                &[
                    ("success", TerminalOutcome::Success),
                    ("failure", TerminalOutcome::Failure),
                ],
                what,
            )
            .unwrap_or(TerminalOutcome::Success),
            result: node.get("result").map(YamlNode::to_json),
        },
        TaskType::GateTask => TaskSpec::Gate(super::inbox::inbox(ctx, node, what)),
        TaskType::ParallelTask => super::fanout::parallel(ctx, node, what),
        TaskType::ForeachTask => super::fanout::foreach(ctx, node, what),
        TaskType::ConditionTask => condition(ctx, node, what),
    }
}

fn condition(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) -> TaskSpec {
    let mut rules = Vec::new();
    let mut otherwise: Option<Spanned<String>> = None;
    let empty = TaskSpec::Condition {
        rules: Vec::new(),
        otherwise: None,
    };
    let Some(list) = node.get("transitions") else {
        ctx.error(
            node.span,
            Code::MissingField,
            format_args!("{what} has no 'transitions': expected a list of {{if, to}} rules ending with an optional {{else: <state>}}"),
        );
        return empty;
    };
    let Some(items) = list.as_seq() else {
        ctx.wrong_type(list, &format!("'transitions' of {what}"), "a list of rules");
        return empty;
    };
    if items.is_empty() {
        ctx.error(
            list.span,
            Code::MissingField,
            format_args!(
                "{what} has an empty 'transitions' list: expected at least one {{if, to}} rule \
                 or an {{else: <state>}}"
            ),
        );
        return empty;
    }
    let last = items.len().saturating_sub(1);
    for (i, item) in items.iter().enumerate() {
        let rw = format!("rule {} of {what}", i + 1);
        let Some(item) = ctx.map(item, &rw) else {
            continue;
        };
        if let Some(e) = item.get("else") {
            // Said at the `else` key, the word at fault.
            let at = item
                .as_map()
                .and_then(|m| m.iter().find(|(k, _)| k.as_str() == Some("else")))
                .map_or(item.span, |(k, _)| k.span);
            if item.get("if").is_some() || item.get("to").is_some() {
                ctx.error(
                    at,
                    Code::MalformedRule,
                    format_args!(
                        "{rw} has 'else' beside 'if'/'to': expected a rule {{if: <condition>, \
                         to: <state>}} or, as the last rule, {{else: <state>}} alone"
                    ),
                );
            } else {
                ctx.check_fields(item, &["else"], &format!("the else rule of {what}"));
            }
            if otherwise.is_some() {
                ctx.error(
                    at,
                    Code::MisplacedElse,
                    format_args!("a second 'else' in {what}: expected at most one else rule"),
                );
            } else if i != last {
                ctx.error(
                    at,
                    Code::MisplacedElse,
                    format_args!(
                        "'else' is rule {} of {} in {what}: expected it to be the last rule",
                        i + 1,
                        items.len()
                    ),
                );
            }
            if let Some(t) = target(ctx, e, &format!("the else target of {what}")) {
                if otherwise.is_some() {
                    // Not kept, yet a target to report when it names no state.
                    ctx.dropped_targets.push((t, e.span));
                } else {
                    otherwise = Some(Spanned {
                        value: t,
                        span: e.span,
                    });
                }
            }
            continue;
        }
        ctx.check_fields(item, &["if", "to"], &rw);
        let (cond, to) = (item.get("if"), item.get("to"));
        for (key, present) in [("if", cond.is_some()), ("to", to.is_some())] {
            if !present {
                ctx.error(item.span, Code::MalformedRule, format_args!("{rw} has no '{key}': expected a rule {{if: <condition>, to: <state>}} or {{else: <state>}}"));
            }
        }
        let condition = cond.and_then(|c| parse_condition(ctx, c, &rw));
        let target = to.and_then(|t| target(ctx, t, &format!("the target of {rw}")));
        match (condition, target, to) {
            (Some(condition), Some(target), Some(to)) => rules.push(ConditionRule {
                condition,
                target,
                span: item.span,
                target_span: to.span,
            }),
            (None, Some(target), Some(to)) => ctx.dropped_targets.push((target, to.span)),
            _ => {}
        }
    }
    TaskSpec::Condition { rules, otherwise }
}

/// The fields of the state `node` that no state takes, written after an empty `on:`,
/// `catch:` or `retry:` at its indentation: what was meant below it. Each with its key's name
/// and the block's.
fn fields_beside_an_empty_block<'n>(
    node: &'n YamlNode,
    allowed: &[&str],
    reported: &[&str],
) -> Vec<(&'n YamlNode, String, &'static str)> {
    let entries = node.as_map().unwrap_or_default();
    let mut found = Vec::new();
    for block in ["on", "catch", "retry"] {
        let Some((bk, _)) = entries.iter().find(|(k, v)| {
            k.key_text().as_deref() == Some(block) && matches!(v.kind, crate::node::YamlKind::Null)
        }) else {
            continue;
        };
        for (k, _) in entries {
            let Some(key) = k.key_text() else { continue };
            if k.span.line > bk.span.line
                && k.span.column == bk.span.column
                && !allowed.contains(&key.as_str())
                && !reported.contains(&key.as_str())
                && !found
                    .iter()
                    .any(|(_, f, _): &(&YamlNode, String, &str)| *f == key)
            {
                found.push((k, key, block));
            }
        }
    }
    found
}
