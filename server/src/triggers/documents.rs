//! Reading trigger documents: which projects exist, what each project's scheduler, event and
//! hook documents declare, and the parsed forms the scheduler and the hub run on.

use std::path::Path;

use magrathea_yaml::Condition;
use magrathea_yaml::Scope;
use magrathea_yaml::scheduler::Schedule;
use magrathea_yaml::schema::{CheckedHook, EventDocument, HookDocument};
use serde_json::{Map, Value};

use super::registry::{Registration, TriggerKind};
use crate::tree::{project_names, tenant_names};
use magrathea_yaml::DocumentSource;

/// Most documents read from one directory.
const MAX_DOCUMENTS: usize = 1000;
/// The largest trigger document (or hook script) read.
const MAX_BYTES: u64 = 256 * 1024;

/// The projects of a document tree: `<root>/<tenant>/<project>/` with a `_vance/` directory.
pub fn projects(root: &Path) -> Vec<Scope> {
    let mut out = Vec::new();
    for tenant in tenant_names(root) {
        for project in project_names(&root.join(&tenant)) {
            if !root.join(&tenant).join(&project).join("_vance").is_dir() {
                continue;
            }
            out.push(Scope::new(&tenant, &project));
        }
    }
    out
}

/// The names of the `.yaml` documents of `_vance/<dir>/` of a project that a scan reads (at
/// most [`MAX_DOCUMENTS`], regular files only), in the directory's order.
fn document_names(project: &Path, dir: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(project.join("_vance").join(dir)) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let file = e.file_name().to_str()?.to_owned();
            let name = file.strip_suffix(".yaml")?.to_owned();
            magrathea_yaml::runtime::check_name(&name).ok()?;
            Some(name)
        })
        .take(MAX_DOCUMENTS)
        .collect()
}

/// The `.yaml` documents of `_vance/<dir>/` of a project, by name (symlinks are not followed
/// out of the project: only regular files are read).
fn documents(docs: &DocumentSource, project: &Path, dir: &str) -> Vec<(String, String)> {
    let path = project.join("_vance").join(dir);
    let mut out: Vec<(String, String)> = document_names(project, dir)
        .into_iter()
        .filter_map(|name| {
            let text = read_bounded(docs, &path.join(format!("{name}.yaml")))?;
            Some((name, text))
        })
        .collect();
    out.sort();
    out
}

/// Whether the trigger document `doc` (`_vance/<dir>/<name>.yaml`, `dir` one of `scheduler`,
/// `events`, `hooks`) is read: not one in a subdirectory; of a schedule or a hook, not one
/// past its directory's first [`MAX_DOCUMENTS`] or over [`MAX_BYTES`] either (a scan reads
/// those; an event's route reads its document at each call). Anything else under those
/// directories (a hook's script) is no document of its own: `None`.
pub(crate) fn read_by_scan(docs: &DocumentSource, scope: &Scope, doc: &str) -> Option<bool> {
    let rest = doc.strip_prefix("_vance/")?;
    let (dir, file) = rest.split_once('/')?;
    if !matches!(dir, "scheduler" | "events" | "hooks") {
        return None;
    }
    let Some(name) = file.strip_suffix(".yaml") else {
        // A file deeper down: only a `.yaml` one would have been meant as a document.
        return file.ends_with(".yaml").then_some(false);
    };
    if name.contains('/') {
        return Some(false);
    }
    if dir == "events" {
        return Some(true);
    }
    let project = docs.project_dir(scope);
    let small = std::fs::symlink_metadata(project.join("_vance").join(dir).join(file))
        .is_ok_and(|m| m.is_file() && m.len() <= MAX_BYTES);
    Some(small && document_names(&project, dir).iter().any(|n| n == name))
}

/// A regular file of at most `MAX_BYTES`, read inside its project (a link in its directories
/// that leads out of the project is not followed either).
fn read_bounded(docs: &DocumentSource, path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return None;
    }
    docs.read_text(path).ok()
}

/// The registrations a project's documents declare.
pub fn scan_scope(docs: &DocumentSource, scope: &Scope) -> Vec<Registration> {
    let project = docs.project_dir(scope);
    let mut regs = Vec::new();
    for (name, text) in documents(docs, &project, "scheduler") {
        regs.push(schedule_registration(scope, &name, &text));
    }
    for (name, text) in documents(docs, &project, "events") {
        regs.extend(event_registrations(docs, scope, &name, &text));
    }
    for (name, text) in documents(docs, &project, "hooks") {
        regs.push(hook_registration(scope, &name, &text));
    }
    regs
}

fn schedule_registration(scope: &Scope, name: &str, text: &str) -> Registration {
    let mut reg = Registration::new(scope, TriggerKind::Cron, name, text);
    let label = reg.document.clone();
    match magrathea_yaml::scheduler::load_schedule(&label, name, text) {
        Ok(s) => {
            reg.workflow = Some(s.workflow().to_owned());
            reg.trigger_node_id = trigger_node_id(s.params());
            reg.description = s.description().map(str::to_owned);
            reg.enabled_in_document = s.enabled();
            reg.cron = s.cron().map(str::to_owned);
            reg.at = s.at_ms().map(super::iso);
            reg.timezone = Some(s.timezone().to_owned());
            reg.overlap = Some(s.overlap().as_str().to_owned());
        }
        Err(diags) => reg.error = Some(diags.to_string().trim().to_owned()),
    }
    reg
}

/// Parses an event document: unknown keys and methods that are not HTTP methods are errors
/// (the message names the line and column of a key's error).
pub(crate) fn parse_event(text: &str) -> Result<EventDocument, String> {
    parse_event_at("", text)
}

/// [`parse_event`], its errors named after the document `label`: a parse error at its
/// place (`label:line:column: …`), a check of the parsed document as `label: …`.
pub(crate) fn parse_event_at(label: &str, text: &str) -> Result<EventDocument, String> {
    let doc = magrathea_exec::yaml_text::from_str::<EventDocument>(text)
        .map_err(|e| e.located(label, "MAG-TR005"))?;
    doc.check().map_err(|e| {
        if label.is_empty() {
            e
        } else {
            format!("{label}: {e}")
        }
    })?;
    Ok(doc)
}

/// Checks an event document (`_vance/events/<name>.yaml`) as the server reads it: its keys
/// and methods, its `webhook:` block's bounds and its `subscribe:` block's event and filter.
/// The message names the document as `label`.
///
/// Once its keys read, every problem is said, each at the value it is about
/// (`label:line:column: [code] message`), one per line.
pub fn check_event_document(label: &str, text: &str) -> Result<(), String> {
    // Its keys first, every mistake among them at once (a misspelt key, `workflow` missing):
    // the typed reading below stops at the first.
    let parsed = magrathea_yaml::parse_yaml(label, text, &magrathea_yaml::LoadOptions::default());
    if let Ok(root) = &parsed {
        key_problems(
            label,
            root,
            EVENT_KEYS,
            &[("workflow", "the name of the workflow the event starts")],
        )?;
    }
    let doc = magrathea_exec::yaml_text::from_str::<EventDocument>(text).map_err(|e| {
        let located = e.located(label, "MAG-TR005");
        match &parsed {
            Ok(root) => at_the_value(label, root, located),
            Err(_) => located,
        }
    })?;
    let root = parsed.map_err(|d| d.to_string())?;
    let at = |path: &[&str]| -> magrathea_yaml::Span {
        let mut node = &root;
        for key in path {
            match node.get(key) {
                Some(next) => node = next,
                None => break,
            }
        }
        node.span
    };
    let mut problems: Vec<(magrathea_yaml::Span, String)> = Vec::new();
    if magrathea_exec::check_name(&doc.workflow).is_err() {
        problems.push((
            at(&["workflow"]),
            format!(
                "[MAG-TR005] workflow '{}' is not a workflow's name: expected the name of \
                 _vance/workflows/<name>.yaml (ASCII letters, digits, '.', '_', '-')",
                doc.workflow
            ),
        ));
    }
    if let Err(e) = doc.check() {
        // The method at fault, else the list.
        let span = root
            .get("methods")
            .and_then(|m| m.as_seq())
            .and_then(|items| {
                items
                    .iter()
                    .find(|i| i.as_str().is_none_or(|m| !EventDocument::accepts_method(m)))
            })
            .map_or_else(|| at(&["methods"]), |i| i.span);
        problems.push((span, format!("[MAG-TR005] {e}")));
    }
    if let Some(hook) = &doc.webhook
        && let Err(e) = hook.check()
    {
        // The field the message names (`signature.tolerance`), as far as the text has it.
        let field = e
            .split_once("invalid webhook block: ")
            .and_then(|(_, rest)| rest.split([' ', ':', ';']).next())
            .unwrap_or_default();
        let mut path = vec!["webhook"];
        path.extend(field.split('.').filter(|p| !p.is_empty()));
        problems.push((at(&path), e));
    }
    if let Some(sub) = &doc.subscribe
        && let Err(e) = magrathea_yaml::events::check_subscription(sub)
    {
        let field = if e.contains("MAG-HK011") {
            "filter"
        } else {
            "event"
        };
        problems.push((at(&["subscribe", field]), e.to_string()));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(render(label, problems))
}

/// A typed reader's error about a value of a nested block (`webhook.signature: invalid
/// duration '5 minutes'…`), which the reader places at the block, placed at the value itself
/// when the block holds it as written; any other error as it was.
fn at_the_value(label: &str, root: &magrathea_yaml::YamlNode, located: String) -> String {
    let Some(at) = located.find("[MAG-TR005] ").filter(|_| !label.is_empty()) else {
        return located;
    };
    let why = &located[at..];
    let said = &why["[MAG-TR005] ".len()..];
    let Some((path, rest)) = said.split_once(": ") else {
        return located;
    };
    let Some(value) = rest
        .split_once('\'')
        .and_then(|(_, after)| after.split_once('\''))
        .map(|(v, _)| v)
    else {
        return located;
    };
    let mut node = root;
    for key in path.split('.') {
        match node.get(key) {
            Some(next) => node = next,
            None => return located,
        }
    }
    fn find<'n>(
        node: &'n magrathea_yaml::YamlNode,
        value: &str,
    ) -> Option<&'n magrathea_yaml::YamlNode> {
        if node.as_str() == Some(value) {
            return Some(node);
        }
        match &node.kind {
            magrathea_yaml::YamlKind::Map(entries) => {
                entries.iter().find_map(|(_, v)| find(v, value))
            }
            magrathea_yaml::YamlKind::Seq(items) => items.iter().find_map(|v| find(v, value)),
            _ => None,
        }
    }
    match find(node, value) {
        Some(found) => format!("{label}:{}:{}: {why}", found.span.line, found.span.column),
        None => located,
    }
}

/// Every unknown key of the document `root` (with the near one it may mean) and every
/// missing `required` key (with what it holds), at once: the typed reading that follows stops
/// at its first mistake.
fn key_problems(
    label: &str,
    root: &magrathea_yaml::YamlNode,
    keys: &[&str],
    required: &[(&str, &str)],
) -> Result<(), String> {
    let Some(entries) = root.as_map() else {
        return Ok(());
    };
    let mut problems: Vec<(magrathea_yaml::Span, String)> = Vec::new();
    for (k, _) in entries {
        let Some(key) = k.key_text() else { continue };
        if !keys.contains(&key.as_str()) {
            problems.push((
                k.span,
                format!(
                    "[MAG-TR005] unknown field `{key}`: expected one of {}{}",
                    magrathea_exec::suggest::list(keys.iter().copied()),
                    magrathea_exec::suggest::hint(&key, keys.iter().copied())
                ),
            ));
        }
    }
    for (key, holds) in required {
        // A key said to be a misspelt one already says that it is missing.
        let misspelt = problems
            .iter()
            .any(|(_, m)| m.ends_with(&format!("(did you mean '{key}'?)")));
        if root.get(key).is_none() && !misspelt {
            problems.push((
                root.span,
                format!("[MAG-TR005] missing field `{key}`: expected {holds}"),
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(render(label, problems))
    }
}

/// The keys of a hook document.
const HOOK_KEYS: &[&str] = &[
    "description",
    "on",
    "filter",
    "script",
    "timeoutSeconds",
    "enabled",
];

/// The keys of an event document.
const EVENT_KEYS: &[&str] = &[
    "description",
    "workflow",
    "methods",
    "auth",
    "params",
    "webhook",
    "subscribe",
    "enabled",
];

/// `problems` as `label:line:column: message` lines, in the document's order.
fn render(label: &str, mut problems: Vec<(magrathea_yaml::Span, String)>) -> String {
    problems.sort_by_key(|(span, _)| (span.line, span.column));
    problems
        .iter()
        .map(|(span, m)| format!("{label}:{}:{}: {m}", span.line, span.column))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks a hook document (`_vance/hooks/<name>.yaml`) as the server reads it: its keys, its
/// event, filter, script and timeout. The message names the document as `label`.
pub fn check_hook_document(label: &str, text: &str) -> Result<(), String> {
    if let Ok(root) =
        magrathea_yaml::parse_yaml(label, text, &magrathea_yaml::LoadOptions::default())
    {
        key_problems(
            label,
            &root,
            HOOK_KEYS,
            &[
                ("on", "the event the hook reacts to"),
                ("script", "the path of the hook's script"),
            ],
        )?;
    }
    let doc: HookDocument =
        magrathea_exec::yaml_text::from_str(text).map_err(|e| e.located(label, "MAG-TR005"))?;
    let problems = doc.problems();
    if problems.is_empty() {
        return Ok(());
    }
    let root = magrathea_yaml::parse_yaml(label, text, &magrathea_yaml::LoadOptions::default())
        .map_err(|d| d.to_string())?;
    // Each problem at the value it is about, every one of them.
    Err(problems
        .into_iter()
        .map(|(field, message)| {
            let span = root.get(field).map_or(root.span, |v| v.span);
            format!("{label}:{}:{}: {message}", span.line, span.column)
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// The workflow and the editor graph's trigger node of a trigger document (`dir` is
/// `scheduler` or `events`) that a graph import wrote: one with `params.triggerNodeId`.
pub(crate) fn graph_trigger_of(dir: &str, name: &str, text: &str) -> Option<(String, String)> {
    let (workflow, params) = match dir {
        "scheduler" => {
            let s = magrathea_yaml::scheduler::load_schedule("", name, text).ok()?;
            (s.workflow().to_owned(), s.params().clone())
        }
        "events" => {
            let doc = parse_event(text).ok()?;
            (doc.workflow, doc.params)
        }
        _ => return None,
    };
    Some((workflow, trigger_node_id(&params)?))
}

/// Checks a trigger document a draft carries (`dir` is `scheduler` or `events`, where it goes
/// when published): that it is valid and starts `workflow`, and, for an event document, that
/// it declares a webhook or a subscription. The message names the document as `label`.
pub(crate) fn check_trigger_draft(
    label: &str,
    dir: &str,
    name: &str,
    text: &str,
    workflow: &str,
) -> Result<(), String> {
    let starts = match dir {
        "scheduler" => magrathea_yaml::scheduler::load_schedule(label, name, text)
            .map_err(|d| d.to_string().trim().to_owned())?
            .workflow()
            .to_owned(),
        "events" => {
            let doc = parse_event_at(label, text)?;
            if let Some(hook) = &doc.webhook {
                hook.check().map_err(|e| format!("{label}: {e}"))?;
            }
            if let Some(sub) = &doc.subscribe {
                magrathea_yaml::events::check_subscription(sub)
                    .map_err(|e| format!("{label}: {e}"))?;
            }
            if doc.webhook.is_none() && doc.subscribe.is_none() {
                return Err(format!(
                    "{label}: declares neither a `webhook:` nor a `subscribe:` block"
                ));
            }
            doc.workflow
        }
        other => return Err(format!("_vance/{other}/ holds no trigger documents")),
    };
    if starts != workflow {
        return Err(format!(
            "{label}: starts the workflow '{starts}'; a draft's triggers start that draft's \
             workflow '{workflow}' only"
        ));
    }
    Ok(())
}

fn event_registrations(
    docs: &DocumentSource,
    scope: &Scope,
    name: &str,
    text: &str,
) -> Vec<Registration> {
    let doc = match parse_event(text) {
        Ok(doc) => doc,
        Err(e) => {
            // Not a trigger unless it has a block; a broken document shows under both kinds
            // only if it mentions them.
            let mut out = Vec::new();
            for (kind, word) in [
                (TriggerKind::Webhook, "webhook:"),
                (TriggerKind::Event, "subscribe:"),
            ] {
                if text.contains(word) {
                    let mut reg = Registration::new(scope, kind, name, text);
                    reg.error = Some(format!("invalid event document: {e}"));
                    out.push(reg);
                }
            }
            return out;
        }
    };
    let mut out = Vec::new();
    let enabled = doc.enabled.unwrap_or(true);
    if let Some(hook) = &doc.webhook {
        let mut reg = Registration::new(scope, TriggerKind::Webhook, name, text);
        reg.trigger_node_id = trigger_node_id(&doc.params);
        reg.enabled_in_document = enabled;
        reg.workflow = Some(doc.workflow.clone());
        reg.description.clone_from(&doc.description);
        // Only a webhook with `dedupe:` deduplicates: without it every delivery starts a run,
        // and a window shown for it would say otherwise.
        reg.dedupe_window_sec = hook
            .dedupe
            .as_ref()
            .map(|_| crate::webhook::dedupe_window_ms(hook).unsigned_abs() / 1000);
        if let Err(e) = hook.check() {
            reg.error = Some(e);
        } else {
            match crate::http::setting::text(docs, scope, &hook.token_setting) {
                Some(token) => match crate::webhook::check_path_token(&token) {
                    Ok(()) => {
                        reg.webhook_token_sha256 = Some(crate::webhook::path_token_hash(&token));
                    }
                    Err(e) => {
                        reg.error = Some(format!("the setting `{}`: {e}", hook.token_setting))
                    }
                },
                None => {
                    reg.error = Some(
                        match crate::http::setting::unreadable(docs, scope, &hook.token_setting) {
                            Some(why) => format!(
                                "[MAG-TR002] the setting `{}` (the webhook's path token) cannot \
                                 be read: {why}",
                                hook.token_setting
                            ),
                            None => format!(
                                "[MAG-TR002] the setting `{}` (the webhook's path token) is not set in the project's or the tenant's _vance/settings.yaml",
                                hook.token_setting
                            ),
                        },
                    );
                }
            }
        }
        out.push(reg);
    }
    if let Some(sub) = &doc.subscribe {
        let mut reg = Registration::new(scope, TriggerKind::Event, name, text);
        reg.trigger_node_id = trigger_node_id(&doc.params);
        reg.enabled_in_document = enabled;
        reg.workflow = Some(doc.workflow.clone());
        reg.description.clone_from(&doc.description);
        match magrathea_yaml::events::check_subscription(sub) {
            Ok(checked) => {
                reg.event = Some(checked.event.as_str().to_owned());
                reg.filter = checked.filter.as_ref().map(|f| f.source().to_owned());
            }
            Err(e) => reg.error = Some(e),
        }
        out.push(reg);
    }
    out
}

/// `params.triggerNodeId` of a trigger document, as a graph import writes it.
fn trigger_node_id(params: &Map<String, Value>) -> Option<String> {
    params
        .get("triggerNodeId")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn hook_registration(scope: &Scope, name: &str, text: &str) -> Registration {
    let mut reg = Registration::new(scope, TriggerKind::Hook, name, text);
    match parse_hook(text) {
        Ok(h) => {
            reg.description.clone_from(&h.doc.description);
            reg.enabled_in_document = h.doc.enabled.unwrap_or(true);
            reg.event = Some(h.checked.event.as_str().to_owned());
            reg.filter = h.checked.filter.as_ref().map(|f| f.source().to_owned());
        }
        Err(e) => reg.error = Some(e),
    }
    reg
}

/// A hook document, checked.
#[derive(Debug, Clone)]
pub(super) struct Hook {
    /// The document.
    pub doc: HookDocument,
    /// Its checked form: event, filter, script, timeout.
    pub checked: CheckedHook,
}

fn parse_hook(text: &str) -> Result<Hook, String> {
    let doc: HookDocument = magrathea_exec::yaml_text::from_str(text)
        .map_err(|e| format!("invalid hook document: {}", e.located("", "MAG-TR005")))?;
    let checked = doc.check()?;
    Ok(Hook { doc, checked })
}

/// The text of a registration's document now, and its digest.
fn read_document(docs: &DocumentSource, reg: &Registration) -> Option<(String, String)> {
    let path = docs.project_dir(&reg.scope()).join(&reg.document);
    let text = read_bounded(docs, &path)?;
    Some((super::registry::sha256_hex(&text), text))
}

/// The parsed schedule of a registration and the digest of the text it came from.
pub fn load_schedule(docs: &DocumentSource, reg: &Registration) -> Option<(String, Schedule)> {
    let (digest, text) = read_document(docs, reg)?;
    let schedule =
        magrathea_yaml::scheduler::load_schedule(&reg.document, &reg.name, &text).ok()?;
    Some((digest, schedule))
}

/// A subscription, ready to match events.
#[derive(Debug, Clone)]
pub(super) struct Subscription {
    /// The workflow it starts.
    pub workflow: String,
    /// The filter.
    pub filter: Option<Condition>,
    /// The static parameters.
    pub params: Map<String, Value>,
}

/// The parsed subscription of an event registration and its document's digest.
pub(super) fn load_subscription(
    docs: &DocumentSource,
    reg: &Registration,
) -> Option<(String, Subscription)> {
    let (digest, text) = read_document(docs, reg)?;
    let doc = parse_event(&text).ok()?;
    let sub = doc.subscribe.as_ref()?;
    let checked = magrathea_yaml::events::check_subscription(sub).ok()?;
    Some((
        digest,
        Subscription {
            workflow: doc.workflow.clone(),
            filter: checked.filter,
            params: doc.params.clone(),
        },
    ))
}

/// The parsed hook of a hook registration, its script's source, and the document's digest.
pub(super) fn load_hook(docs: &DocumentSource, reg: &Registration) -> Option<(String, Hook)> {
    let (digest, text) = read_document(docs, reg)?;
    let hook = parse_hook(&text).ok()?;
    Some((digest, hook))
}

/// The script `hook` runs, as the project holds it now: read at each delivery, so an edited
/// script runs from the next event on (the hook's own document may not have changed).
pub(super) fn hook_source(
    docs: &DocumentSource,
    reg: &Registration,
    hook: &Hook,
) -> Option<String> {
    let project = docs.project_dir(&reg.scope());
    read_bounded(docs, &project.join(&hook.checked.script))
}

/// The webhook block of a webhook registration, with the document's workflow and static
/// parameters.
pub(crate) fn load_webhook(docs: &DocumentSource, reg: &Registration) -> Option<EventDocument> {
    let (digest, text) = read_document(docs, reg)?;
    if digest != reg.digest {
        return None;
    }
    parse_event(&text).ok().filter(|d| d.webhook.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_said_are_the_keys_an_event_document_has() {
        let schema = serde_json::to_value(schemars::schema_for!(EventDocument)).unwrap();
        let mut read: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut said = EVENT_KEYS.to_vec();
        read.sort_unstable();
        said.sort_unstable();
        assert_eq!(said, read);
    }
}
