//! What a written document needs to work, said to its writer: after trigger documents are
//! written (over the documents API or by publishing a version) their writer is recorded, the
//! project's registrations are rebuilt, and the write answers with what keeps each trigger from
//! working — a registration error, a document the scan never reads, a setting set nowhere, a
//! workflow that does not exist.

use magrathea_yaml::Scope;

use super::state::AppState;

/// After `who` wrote the trigger documents `docs` (`_vance/…`, with their `texts`): records
/// them as the writer, rebuilds the project's registrations and returns each document's
/// registration errors (`<document>: <error>`).
pub(crate) fn triggers_published(
    state: &AppState,
    scope: &Scope,
    who: &super::auth::Principal,
    docs: &[String],
    texts: &[String],
) -> Vec<String> {
    // The runs a trigger starts carry its document's writer as `requestedBy`, so that a gate's
    // `selfApproval: false` refuses whoever wrote the trigger as well as whoever its `runAs`
    // names.
    for (doc, text) in docs.iter().zip(texts) {
        if let Err(e) = state.triggers.catalog().and_then(|catalog| {
            crate::triggers::registry::record_writer(catalog, scope, doc, text, &who.subject)
                .map_err(Into::into)
        }) {
            tracing::warn!(error = %e, "could not record who wrote the trigger document");
        }
    }
    // Registrations follow the documents at once.
    if let Err(e) = state.triggers.resync(state, scope) {
        tracing::warn!(error = %e, "could not resync the project's triggers");
    }
    let mut warnings = Vec::new();
    if let Ok(catalog) = state.triggers.catalog()
        && let Ok(regs) = crate::triggers::registry::list(catalog, scope, None)
    {
        for doc in docs {
            // Only what the scan reads starts anything: a document in a subdirectory, past
            // the directory's first thousand or over 256 KiB would start nothing, unsaid. (A
            // plain event document is read at each call and has no registration; a hook's
            // script is read by its hook.)
            if crate::triggers::documents::read_by_scan(state.docs(), scope, doc) == Some(false) {
                warnings.push(format!(
                    "{doc}: not registered, so it starts nothing: trigger documents are read \
                     directly under _vance/scheduler/, events/ and hooks/ only, at most 1000 \
                     of a directory, each of at most 256 KiB"
                ));
            }
            warnings.extend(
                regs.iter()
                    .filter(|r| &r.document == doc)
                    .filter_map(|r| r.error.as_ref())
                    .map(|e| located_warning(doc, e)),
            );
            // A hook runs JavaScript: where the tenant does not let the project run scripts,
            // every delivery of it would be rejected.
            let hook = regs.iter().any(|r| {
                &r.document == doc
                    && r.error.is_none()
                    && r.kind == crate::triggers::registry::TriggerKind::Hook
            });
            if hook
                && let Err(why) = magrathea_exec::policy::check(
                    state.docs(),
                    scope,
                    magrathea_exec::policy::TaskType::Script,
                )
            {
                warnings.push(format!(
                    "{doc}: a hook runs a script, which this project may not: every delivery \
                     will be rejected (scripts_not_allowed) until the tenant allows it: {why}"
                ));
            }
        }
    }
    for (doc, text) in docs.iter().zip(texts) {
        warnings.extend(event_setting_warnings(state, scope, doc, text));
    }
    warnings
}

/// The settings an event document names that are set nowhere: its `auth.tokenSetting` (every
/// call to its route is refused, 401) and its webhook's `signature.secretSetting` (every
/// delivery is refused, 401 `no_secret`), until they are written.
fn event_setting_warnings(state: &AppState, scope: &Scope, doc: &str, text: &str) -> Vec<String> {
    let Some(name) = doc
        .strip_prefix("_vance/events/")
        .and_then(|n| n.strip_suffix(".yaml"))
    else {
        return Vec::new();
    };
    if name.contains('/') {
        return Vec::new();
    }
    let Ok(event) = crate::triggers::parse_event(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(setting) = event.auth.and_then(|a| a.token_setting)
        && super::setting::text(state.docs(), scope, &setting).is_none()
    {
        out.push(format!(
            "{doc}: auth.tokenSetting `{setting}` is set neither in the project's nor in the \
             tenant's _vance/settings.yaml: every call to the event is refused (401) until it is"
        ));
    }
    if let Some(signature) = event.webhook.as_ref().and_then(|w| w.signature.as_ref())
        && super::setting::texts(state.docs(), scope, &signature.secret_setting).is_empty()
    {
        out.push(format!(
            "{doc}: webhook.signature.secretSetting `{}` is set neither in the project's nor in \
             the tenant's _vance/settings.yaml: every delivery is refused (401 no_secret) until \
             it is",
            signature.secret_setting
        ));
    }
    out
}

/// A registration's error as a warning about `doc`: `doc:line:column: why` when the error
/// names its place (`… line L, column C: why`), as every diagnostic is written; else
/// `doc: error`.
fn located_warning(doc: &str, error: &str) -> String {
    let placed = error.split_once("line ").and_then(|(_, rest)| {
        let (line, rest) = rest.split_once(", column ")?;
        let (column, why) = rest.split_once(": ")?;
        let line: u32 = line.parse().ok()?;
        let column: u32 = column.parse().ok()?;
        Some(format!("{doc}:{line}:{column}: {why}"))
    });
    placed.unwrap_or_else(|| format!("{doc}: {error}"))
}

/// The warning for a trigger document `label` whose `workflow` is neither a document of the
/// project or its tenant nor a registered code workflow: `what` ("each tick", …) would fail
/// to start. None for a name that is empty or a template, resolved at run time.
pub(super) fn missing_workflow(
    state: &AppState,
    scope: &Scope,
    label: &str,
    workflow: &str,
    what: &str,
) -> Option<String> {
    let unknown = !workflow.is_empty()
        && !workflow.contains("${")
        && state.docs().workflow(scope, workflow).is_err()
        && !state.engine.has_code_workflow(workflow);
    unknown.then(|| {
        format!(
            "{label}: workflow `{workflow}` is not a workflow of the project or its tenant: \
             expected _vance/workflows/{workflow}.yaml; {what} would fail to start"
        )
    })
}
