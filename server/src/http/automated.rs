//! What a token without `workflow.run` may not change: the documents that run without
//! anyone starting them anew. In a project with triggers, a schedule starts its workflow as
//! written now; while a run of the project is unfinished, its next steps read the project's
//! scripts, recipes and sub-workflows as they are then. Changing them there is running them.

use magrathea_yaml::Scope;

use super::auth::{ApiScope, Principal};
use super::error::ApiError;
use super::state::AppState;

/// In a project with triggers (schedules, webhooks, event subscriptions, hooks), what its
/// documents say runs without anyone starting it: a schedule starts the workflow as written
/// now, with the scripts it names, credited to the schedule's writer. Changing `what` there
/// (any document but a draft, which runs only when someone starts it) takes the right to run
/// workflows, as writing a trigger document does; so it does while runs of the project are
/// unfinished, whose next steps read its scripts, recipes and sub-workflows as they are then.
pub(crate) fn check_automated(
    state: &AppState,
    scope: &Scope,
    who: &Principal,
    what: &str,
) -> Result<(), ApiError> {
    if who.has(ApiScope::Run) {
        return Ok(());
    }
    let refuse = |trigger: &str| {
        ApiError::forbidden(format!(
            "changing {what} needs the scopes `workflow.write` and `workflow.run` while the \
             project has triggers (e.g. {trigger}): they run its workflows as its documents \
             say; write a draft under _vance/{}/ instead",
            magrathea_yaml::runtime::DRAFTS_DIR
        ))
    };
    // An event document is called from outside (with a token of its own, or an API token
    // with `workflow.run`) whether or not it declares a webhook or a subscription: changing
    // the workflow it starts is running it.
    // Only whether one is there is said, not its name.
    for (dir, shown) in [
        (
            state.docs().project_dir(scope),
            "an event document under _vance/events/",
        ),
        (
            state.docs().tenant_dir(scope),
            "an event document under _tenant/_vance/events/",
        ),
    ] {
        // A directory linked out of the project is not read (the event routes do not serve
        // what lies behind it either): whether it holds documents is nobody's business here.
        let events = dir.join("_vance").join("events");
        if state
            .docs()
            .confined(&events)
            .is_ok_and(|real| has_document(&real))
        {
            return Err(refuse(shown));
        }
    }
    // A store without a catalog holds no triggers.
    let Ok(catalog) = state.triggers.catalog() else {
        return Ok(());
    };
    let triggers = crate::triggers::registry::list(catalog, scope, None)?;
    if let Some(t) = triggers.first() {
        return Err(refuse(&t.document));
    }
    // A run in flight reads the project's scripts, recipes and sub-workflows as they are when
    // each of its steps begins (only its own definition is frozen): changing them changes what
    // a run someone else started runs next, as a trigger's documents do.
    if let Some(run) = unfinished_run(state, scope)? {
        return Err(ApiError::forbidden(format!(
            "changing {what} needs the scopes `workflow.write` and `workflow.run` while runs of \
             the project are unfinished (e.g. {run}): each keeps its own workflow's definition, \
             but their next steps read the project's scripts, recipes and sub-workflows as they \
             are then; write a draft under _vance/{}/ instead, or wait until they end",
            magrathea_yaml::runtime::DRAFTS_DIR
        )));
    }
    Ok(())
}

/// Run summaries [`unfinished_run`] reads at most; past them it answers as if one were
/// unfinished (the check fails closed).
const MAX_SCAN: usize = 10_000;

/// A run of `scope` that has not ended, if any (`"one of many"` past [`MAX_SCAN`] runs).
fn unfinished_run(state: &AppState, scope: &Scope) -> Result<Option<String>, ApiError> {
    const PAGE: usize = 500;
    let mut filter = magrathea_core::RunFilter {
        scope: Some(scope.key()),
        limit: PAGE,
        ..Default::default()
    };
    let mut seen = 0;
    loop {
        let page = state
            .engine
            .list_runs(&filter)
            .map_err(ApiError::internal)?;
        if let Some(s) = page.iter().find(|s| !s.status.is_terminal()) {
            return Ok(Some(format!("run {}", s.run_id)));
        }
        seen += page.len();
        match page.last() {
            Some(last) if page.len() == PAGE => {
                if seen >= MAX_SCAN {
                    return Ok(Some(format!("one of its more than {MAX_SCAN} runs")));
                }
                filter.before = Some(last.run_id);
            }
            _ => return Ok(None),
        }
    }
}

/// Whether `dir` holds a `*.yaml` file.
fn has_document(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().ends_with(".yaml"))
    })
}
