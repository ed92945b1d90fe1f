//! Reading and validating a scheduler document into a [`Schedule`].

use std::time::Duration;

use jiff::Timestamp;
use serde_json::Map;

use super::cron::{self, CronTicks};
use super::{DEFAULT_CATCHUP_WINDOW, Overlap, Schedule, When};
use crate::build::Ctx;
use crate::diagnostic::{Code, Diagnostics};
use crate::duration::parse_duration;
use crate::loader::{LoadOptions, parse_yaml};
use crate::node::{YamlKind, YamlNode};
use crate::suggest;

/// The fields of a scheduler document, as the loader reads them.
pub(crate) const FIELDS: &[&str] = &[
    "description",
    "cron",
    "at",
    "workflow",
    "recipe",
    "params",
    "runAs",
    "timezone",
    "enabled",
    "overlap",
    "catchupWindow",
    "jitter",
];

const WHAT: &str = "the scheduler document";

/// Parses and validates `_vance/scheduler/<name>.yaml`. `path_label` labels the diagnostics;
/// `name` is the schedule's name (the file name without `.yaml`), which the default `runAs`
/// (`schedule:<name>`) uses. On failure returns every error, sorted by position.
pub fn load_schedule(path_label: &str, name: &str, text: &str) -> Result<Schedule, Diagnostics> {
    let root = parse_yaml(path_label, text, &LoadOptions::default())?;
    let mut ctx = Ctx::new(path_label, text);
    let schedule = build(&mut ctx, name, &root);
    let mut diags = ctx.diags;
    diags.sort();
    match schedule {
        Some(s) if !diags.has_errors() => Ok(s),
        _ => Err(diags),
    }
}

fn build(ctx: &mut Ctx<'_>, name: &str, root: &YamlNode) -> Option<Schedule> {
    let root = ctx.map(root, "the document root")?;
    ctx.check_fields(root, FIELDS, WHAT);
    let description = ctx.opt_str(root, "description", WHAT);
    let workflow = workflow(ctx, root);
    let when = when(ctx, root);
    let params = match root.get("params") {
        None => Some(Map::new()),
        Some(p) => match p.to_json() {
            serde_json::Value::Object(m) => Some(m),
            _ => {
                ctx.wrong_type(p, "'params'", "a mapping of parameter name to value");
                None
            }
        },
    };
    let run_as = run_as(ctx, root, name);
    let enabled = match root.get("enabled") {
        None => Some(true),
        Some(v) => match v.kind {
            YamlKind::Bool(b) => Some(b),
            _ => {
                ctx.wrong_type(v, "'enabled'", "true or false");
                None
            }
        },
    };
    let overlap = overlap(ctx, root);
    let catchup_window = duration(ctx, root, "catchupWindow", DEFAULT_CATCHUP_WINDOW);
    let jitter = duration(ctx, root, "jitter", Duration::ZERO);
    Some(Schedule {
        name: name.to_owned(),
        description,
        when: when?,
        workflow: workflow?,
        params: params?,
        run_as: run_as?,
        enabled: enabled?,
        overlap: overlap?,
        catchup_window: catchup_window?,
        jitter: jitter?,
    })
}

/// The words a trigger's own runs begin their `startedBy` with: a run a schedule starts may
/// not pass for a hook's, an event's or another schedule's (seed §8.5: `hook:<hookName>`
/// attributes a run to its hook).
const TRIGGER_PREFIXES: [&str; 4] = ["hook:", "event:", "webhook:", "schedule:"];

/// `runAs:`, the run's `startedBy`: `schedule:<name>` when absent or blank; a name that
/// begins as a trigger's runs do is refused (`None`), unless it is this schedule's own.
fn run_as(ctx: &mut Ctx<'_>, root: &YamlNode, name: &str) -> Option<String> {
    let own = format!("schedule:{name}");
    let Some(value) = ctx.opt_str(root, "runAs", WHAT) else {
        return Some(own);
    };
    let value = value.trim();
    if value.is_empty() || value == own {
        return Some(own);
    }
    // In any case: `Hook:nightly` reads as a hook's run to a person as `hook:nightly` does.
    let lower = value.to_ascii_lowercase();
    if let Some(prefix) = TRIGGER_PREFIXES.iter().find(|p| lower.starts_with(*p)) {
        let span = root.get("runAs").map_or(root.span, |v| v.span);
        ctx.error(
            span,
            Code::InvalidValue,
            format_args!(
                "'runAs' is '{value}', but '{prefix}…' names the runs a trigger starts itself: \
                 expected the user or service the runs act for (e.g. 'ops'), or no 'runAs' \
                 ('{own}')"
            ),
        );
        return None;
    }
    Some(value.to_owned())
}

/// `workflow:`; `recipe:` is the reference's other target, which Magrathea does not schedule.
fn workflow(ctx: &mut Ctx<'_>, root: &YamlNode) -> Option<String> {
    let entry = |key: &str| {
        root.as_map()
            .unwrap_or_default()
            .iter()
            .find(|(k, _)| k.key_text().as_deref() == Some(key))
    };
    let workflow = entry("workflow");
    match (entry("recipe"), workflow) {
        (Some((recipe, _)), Some((wf, _))) => {
            // Point at whichever of the two comes second.
            let second = if recipe.span > wf.span { recipe } else { wf };
            ctx.error(
                second.span,
                Code::ScheduleRecipeAndWorkflow,
                "'recipe' and 'workflow' are mutually exclusive: expected only 'workflow: <name>'",
            );
            None
        }
        (Some((recipe, _)), None) => {
            ctx.error(
                recipe.span,
                Code::ScheduleRecipe,
                "recipe schedules are not supported by Magrathea; use workflow:",
            );
            None
        }
        (None, None) => {
            ctx.error(
                root.span,
                Code::ScheduleNoWorkflow,
                "the scheduler document has no 'workflow': expected 'workflow: <name of the \
                 workflow to start>'",
            );
            None
        }
        (None, Some((_, value))) => {
            let name = ctx.opt_str(root, "workflow", WHAT)?;
            if name.trim().is_empty() {
                ctx.wrong_type(value, "'workflow'", "the name of a workflow");
                return None;
            }
            // A name, as a `workflow_task`'s: never a path out of `_vance/workflows/`.
            if magrathea_exec::check_name(&name).is_err() {
                ctx.error(
                    value.span,
                    Code::InvalidValue,
                    format_args!(
                        "'workflow' is '{name}', which is not a workflow's name: expected the \
                         name of _vance/workflows/<name>.yaml (ASCII letters, digits, '.', '_', '-')"
                    ),
                );
                return None;
            }
            Some(name)
        }
    }
}

/// `cron:` (with `timezone:`) or `at:`, exactly one of them.
fn when(ctx: &mut Ctx<'_>, root: &YamlNode) -> Option<When> {
    let zone_node = root.get("timezone");
    match (root.get("cron"), root.get("at")) {
        (Some(_), Some(at)) => {
            ctx.error(
                at.span,
                Code::ScheduleCronAndAt,
                "'cron' and 'at' are mutually exclusive: expected 'cron:' for a repeating \
                 schedule or 'at:' for a single run",
            );
            None
        }
        (None, None) => {
            ctx.error(
                root.span,
                Code::ScheduleNoTime,
                "the scheduler document has neither 'cron' nor 'at': expected 'cron: \"<pattern>\"' \
                 or 'at: <ISO-8601 instant>'",
            );
            None
        }
        (None, Some(at)) => {
            if let Some(z) = zone_node {
                ctx.error(
                    z.span,
                    Code::ScheduleTimezoneWithAt,
                    "'timezone' applies to 'cron' only: 'at' carries its own offset; expected \
                     no 'timezone' with 'at'",
                );
            }
            let text = ctx.opt_str(root, "at", WHAT)?;
            match text.trim().parse::<Timestamp>() {
                Ok(ts) => Some(When::At(ts.as_millisecond())),
                Err(e) => {
                    ctx.error(
                        at.span,
                        Code::ScheduleAt,
                        format_args!(
                            "'at' is '{text}': expected an ISO-8601 instant with an offset or Z, \
                             e.g. '2026-12-24T18:00:00+01:00' ({e})"
                        ),
                    );
                    None
                }
            }
        }
        (Some(c), None) => {
            let zone = zone(ctx, root);
            let expression = ctx.opt_str(root, "cron", WHAT)?;
            let pattern = match cron::parse_pattern(&expression) {
                Ok(p) => p,
                Err(why) => {
                    // Point at the field at fault when the pattern is verbatim on its line.
                    let span = why.offset.map_or(c.span, |o| c.span_at(o));
                    ctx.error(
                        span,
                        Code::ScheduleCron,
                        format_args!("invalid cron expression '{expression}': {}", why.message),
                    );
                    return None;
                }
            };
            if !cron::ever_matches(&pattern) {
                ctx.error(
                    c.span,
                    Code::ScheduleNeverFires,
                    format_args!(
                        "cron expression '{expression}' matches no date: expected days that \
                         exist in the months given"
                    ),
                );
                return None;
            }
            let (zone_name, zone) = zone?;
            Some(When::Cron(Box::new(CronTicks::new(
                expression, pattern, zone_name, zone,
            ))))
        }
    }
}

/// `timezone:` (default UTC) from the compiled-in IANA database.
fn zone(ctx: &mut Ctx<'_>, root: &YamlNode) -> Option<(String, jiff::tz::TimeZone)> {
    let Some(node) = root.get("timezone") else {
        return Some(("UTC".to_owned(), jiff::tz::TimeZone::UTC));
    };
    let name = ctx.opt_str(root, "timezone", WHAT)?;
    match cron::zone(&name) {
        Some(z) => Some((name, z)),
        None => {
            ctx.error(
                node.span,
                Code::ScheduleTimezone,
                format_args!(
                    "unknown time zone '{name}': expected an IANA name such as 'Europe/Berlin', \
                     'America/New_York' or 'UTC'"
                ),
            );
            None
        }
    }
}

fn overlap(ctx: &mut Ctx<'_>, root: &YamlNode) -> Option<Overlap> {
    let Some(node) = root.get("overlap") else {
        return Some(Overlap::default());
    };
    let words = Overlap::ALL.iter().map(|(w, _)| *w);
    let found = node
        .as_str()
        .and_then(|s| Overlap::ALL.iter().find(|(w, _)| *w == s));
    if found.is_none() {
        let hint = node
            .as_str()
            .map(|s| suggest::hint(s, words.clone()))
            .unwrap_or_default();
        ctx.error(
            node.span,
            Code::InvalidValue,
            format_args!(
                "'overlap' is {}: expected one of {}{hint}",
                crate::build::found(node),
                suggest::list(words)
            ),
        );
    }
    found.map(|(_, o)| *o)
}

fn duration(ctx: &mut Ctx<'_>, root: &YamlNode, key: &str, default: Duration) -> Option<Duration> {
    let Some(node) = root.get(key) else {
        return Some(default);
    };
    let Some(text) = node.as_str() else {
        ctx.wrong_type(
            node,
            &format!("'{key}'"),
            "a duration such as '60s' or 'PT5M'",
        );
        return None;
    };
    match parse_duration(text) {
        Ok(d) => Some(d),
        Err(e) => {
            ctx.error(
                node.span,
                Code::InvalidDuration,
                format_args!("'{key}': {e}"),
            );
            None
        }
    }
}
