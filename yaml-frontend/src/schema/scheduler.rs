//! The shape of `_vance/scheduler/<name>.yaml`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// `_vance/scheduler/<name>.yaml`: starts `workflow` on each tick of `cron` (or once at `at`),
/// reference §8.4. [`crate::scheduler::load_schedule`] reads and validates it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    deny_unknown_fields,
    title = "Magrathea schedule",
    description = "A scheduler trigger, `_vance/scheduler/<name>.yaml`: starts `workflow` on each tick of `cron` (in `timezone`), or once at `at`.",
    extend("oneOf" = [{ "required": ["cron"] }, { "required": ["at"] }]),
    extend("not" = { "required": ["at", "timezone"] })
)]
#[non_exhaustive]
pub struct SchedulerDocument {
    /// Audit marker.
    pub description: Option<String>,
    /// A cron pattern: 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds
    /// first, e.g. `0 0 6 * * *`; read in `timezone`. Exactly one of `cron` and `at`.
    #[schemars(regex(pattern = r"^\s*\S+(\s+\S+){4,5}\s*$"))]
    pub cron: Option<String>,
    /// A one-shot ISO-8601 instant with its offset or `Z`, e.g. `2026-12-24T18:00:00+01:00`.
    /// Exactly one of `cron` and `at`.
    pub at: Option<String>,
    /// The workflow to start (project, then tenant). `recipe:` is not supported.
    #[schemars(regex(pattern = r"\S"))]
    pub workflow: String,
    /// Parameters of each run.
    #[serde(default)]
    pub params: Map<String, Value>,
    /// The run's `startedBy` (default `schedule:<name>`).
    pub run_as: Option<String>,
    /// The IANA time zone `cron` is read in (default `UTC`); not with `at`. A wall-clock time
    /// skipped by a daylight-saving gap fires once at the shift; one repeated by a fold fires
    /// at its first occurrence.
    pub timezone: Option<String>,
    /// False registers the schedule without firing it (default true).
    pub enabled: Option<bool>,
    /// What a tick does while the previous run is still going (default `skip`).
    pub overlap: Option<OverlapWord>,
    /// How old a tick missed while no scheduler ran may be and still fire (default `60s`;
    /// beyond the tick's jitter and a second of the scheduler's delay; older ones are skipped).
    /// A duration: `90s`, `5m`, `PT1H`.
    pub catchup_window: Option<String>,
    /// A random delay below this for each tick, the same on every worker (default `0s`).
    pub jitter: Option<String>,
}

/// `overlap:` of a scheduler document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OverlapWord {
    /// The tick starts nothing and is recorded as skipped.
    Skip,
    /// The tick starts once the previous run ends; later ones meanwhile are skipped.
    BufferOne,
    /// Every tick starts a run.
    AllowAll,
    /// The tick cancels the previous run, then starts its own.
    CancelOther,
}
