//! The shape of `_vance/hooks/<name>.yaml`: a JavaScript hook run on an internal event
//! (reference §8.5).

use std::path::{Component, Path};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::condition::{Condition, EvalError};
use crate::events::{InternalEvent, InternalEventName, check_filter, event_matches};

/// The timeout of a hook without `timeoutSeconds:`.
pub const DEFAULT_HOOK_TIMEOUT_SECONDS: u32 = 10;
/// The longest `timeoutSeconds:` a hook may have.
pub const MAX_HOOK_TIMEOUT_SECONDS: u32 = 60;

/// `_vance/hooks/<name>.yaml`: when the internal event `on` passes `filter`, run the script.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(
    title = "Magrathea hook",
    description = "A hook, `_vance/hooks/<name>.yaml`: a JavaScript script run whenever the internal event `on` passes `filter`; the script may start workflows of its own project."
)]
#[non_exhaustive]
pub struct HookDocument {
    /// Audit marker.
    #[serde(default)]
    pub description: Option<String>,
    /// The internal event that runs the hook, e.g. `workflow.run.failed`.
    #[serde(rename = "on")]
    #[schemars(with = "InternalEventName")]
    pub on: String,
    /// A condition over `#event` (the event's JSON), e.g.
    /// `#event['workflowName'] == 'deploy'`; without it every event of the kind runs the hook.
    #[serde(default)]
    pub filter: Option<String>,
    /// The script, a document path relative to the project directory, under
    /// `_vance/hooks/` (e.g. `_vance/hooks/review.js`): no `..`, ending in `.js`.
    #[schemars(regex(pattern = r"^(\./)*_vance/hooks/.+\.js$"))]
    pub script: String,
    /// The script is interrupted after this many seconds (default 10, at most 60).
    #[serde(default)]
    #[schemars(range(min = 1, max = 60))]
    pub timeout_seconds: Option<u32>,
    /// Whether the hook runs (default `true`).
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// Whether a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookState {
    /// It runs on its event.
    Enabled,
    /// `enabled: false`: it does not run.
    Disabled,
}

/// A checked [`HookDocument`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CheckedHook {
    /// The event that runs the hook.
    pub event: InternalEvent,
    /// The filter, parsed with [`Condition::parse_filter`].
    pub filter: Option<Condition>,
    /// The script's document path, relative to the project directory.
    pub script: String,
    /// How long the script may run.
    pub timeout: Duration,
    /// Whether the hook runs.
    pub state: HookState,
}

impl CheckedHook {
    /// Whether `event` (an internal event's JSON) runs this hook: it is the hook's event and
    /// passes the filter. A disabled hook matches nothing.
    pub fn matches(&self, event: &serde_json::Value) -> Result<bool, EvalError> {
        if self.state == HookState::Disabled {
            return Ok(false);
        }
        event_matches(self.event, self.filter.as_ref(), event)
    }
}

impl HookDocument {
    /// Every problem of the document, each with the field it is about (`on`, `filter`,
    /// `script`, `timeoutSeconds`): what [`Self::check`] refuses, all at once.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut found = Vec::new();
        if let Err(e) = self.on.parse::<InternalEvent>() {
            found.push(("on", e));
        }
        if let Err(e) = check_filter("filter", self.filter.as_deref()) {
            found.push(("filter", e));
        }
        if let Err(e) = check_script_path(&self.script) {
            found.push(("script", e));
        }
        if let Err(e) = self.timeout() {
            found.push(("timeoutSeconds", e));
        }
        found
    }

    fn timeout(&self) -> Result<u32, String> {
        let secs = self.timeout_seconds.unwrap_or(DEFAULT_HOOK_TIMEOUT_SECONDS);
        if (1..=MAX_HOOK_TIMEOUT_SECONDS).contains(&secs) {
            Ok(secs)
        } else {
            Err(format!(
                "[MAG-HK013] invalid hook `timeoutSeconds: {secs}`: expected 1 to \
                 {MAX_HOOK_TIMEOUT_SECONDS} seconds"
            ))
        }
    }

    /// Checks the document: a known event in `on:`, a filter over `#event`, a relative `.js`
    /// script path without `..`, and a timeout of 1 to 60 seconds.
    pub fn check(&self) -> Result<CheckedHook, String> {
        let event: InternalEvent = self.on.parse()?;
        let filter = check_filter("filter", self.filter.as_deref())?;
        check_script_path(&self.script)?;
        let secs = self.timeout()?;
        Ok(CheckedHook {
            event,
            filter,
            script: self.script.clone(),
            timeout: Duration::from_secs(u64::from(secs)),
            state: if self.enabled.unwrap_or(true) {
                HookState::Enabled
            } else {
                HookState::Disabled
            },
        })
    }
}

/// A hook's script path: relative, inside the project's `_vance/hooks/` (no `..`), a `.js`
/// file.
fn check_script_path(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    let plain = !path.contains('\0')
        && !path.contains('\\')
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && p.components().any(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(format!(
            "[MAG-HK012] invalid hook `script: {path}`: expected a path relative to the \
             project directory without `..`, e.g. `_vance/hooks/review.js`"
        ));
    }
    // Writing under `_vance/hooks/` through the API needs `workflow.run`: a script elsewhere
    // could be rewritten by a token that may only write documents, and the hook would run
    // that token's code on events of other people's runs.
    let under_hooks = {
        let mut parts = p
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .map(|c| c.as_os_str());
        parts.next().is_some_and(|c| c == "_vance")
            && parts.next().is_some_and(|c| c == "hooks")
            && parts.next().is_some()
    };
    if !under_hooks {
        return Err(format!(
            "[MAG-HK012] invalid hook `script: {path}`: expected a script under `_vance/hooks/` \
             (where writing needs `workflow.run`), e.g. `_vance/hooks/review.js`"
        ));
    }
    if !path.ends_with(".js") {
        return Err(format!(
            "[MAG-HK012] invalid hook `script: {path}`: expected a JavaScript file ending in \
             `.js`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(yaml: &str) -> Result<HookDocument, String> {
        let value = crate::parse_yaml("hook.yaml", yaml, &crate::LoadOptions::default())
            .map_err(|d| d.to_string())?
            .to_json();
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    const REVIEW: &str = "description: Start a review for every failed deploy\n\
        on: workflow.run.failed\n\
        filter: \"#event['workflowName'] == 'deploy'\"\n\
        script: _vance/hooks/review.js\n";

    #[test]
    fn a_hook_document_reads_with_its_defaults() {
        let hook = doc(REVIEW).unwrap().check().unwrap();
        assert_eq!(hook.event, InternalEvent::RunFailed);
        assert_eq!(hook.script, "_vance/hooks/review.js");
        assert_eq!(hook.timeout, Duration::from_secs(10));
        assert_eq!(hook.state, HookState::Enabled);
        let ev = json!({"event": "workflow.run.failed", "workflowName": "deploy"});
        assert_eq!(hook.matches(&ev), Ok(true));
        let other = json!({"event": "workflow.run.failed", "workflowName": "build"});
        assert_eq!(hook.matches(&other), Ok(false));
    }

    #[test]
    fn a_disabled_hook_matches_nothing() {
        let hook = doc(&format!("{REVIEW}enabled: false\ntimeoutSeconds: 60\n"))
            .unwrap()
            .check()
            .unwrap();
        assert_eq!(hook.state, HookState::Disabled);
        assert_eq!(hook.timeout, Duration::from_secs(60));
        let ev = json!({"event": "workflow.run.failed", "workflowName": "deploy"});
        assert_eq!(hook.matches(&ev), Ok(false));
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err = doc(&format!("{REVIEW}scirpt: x.js\n")).unwrap_err();
        assert!(err.contains("unknown field `scirpt`"), "{err}");
    }

    #[test]
    fn bad_hooks_are_refused_with_their_code() {
        let cases = [
            ("on: workflow.run.faild\nscript: a.js\n", "[MAG-HK010]"),
            (
                "on: workflow.run.failed\nfilter: \"#params['x']\"\nscript: a.js\n",
                "[MAG-HK011]",
            ),
            (
                "on: workflow.run.failed\nscript: ../other/a.js\n",
                "[MAG-HK012]",
            ),
            (
                "on: workflow.run.failed\nscript: /etc/a.js\n",
                "[MAG-HK012]",
            ),
            (
                "on: workflow.run.failed\nscript: _vance/hooks/a.py\n",
                "[MAG-HK012]",
            ),
            // Outside `_vance/hooks/`, a token that may only write documents could change it.
            (
                "on: workflow.run.failed\nscript: _vance/scripts/a.js\n",
                "[MAG-HK012]",
            ),
            ("on: workflow.run.failed\nscript: a.js\n", "[MAG-HK012]"),
            (
                "on: workflow.run.failed\nscript: _vance/hooks/a.js\ntimeoutSeconds: 61\n",
                "[MAG-HK013]",
            ),
            (
                "on: workflow.run.failed\nscript: _vance/hooks/a.js\ntimeoutSeconds: 0\n",
                "[MAG-HK013]",
            ),
        ];
        for (yaml, code) in cases {
            let err = doc(yaml).unwrap().check().unwrap_err();
            assert!(err.starts_with(code), "{yaml}: {err}");
        }
    }
}
