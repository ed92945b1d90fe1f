//! The runs a run started (its `workflow_task`s and fan-outs), read from its journal's
//! `ChildStartedRecord`s, so a client can link a run to its sub-runs as well as a sub-run to
//! its parent (`parentRunId`).

use magrathea_core::{Engine, Entry, Record, RunId, RunStatus, RunSummary, Step};
use serde::{Deserialize, Serialize};

/// Most sub-runs a run's DTO lists.
pub const MAX_SUB_RUNS: usize = 1000;

/// A run that a run started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubRun {
    /// The sub-run.
    pub run_id: RunId,
    /// Its workflow.
    pub workflow: String,
    /// The parent's state that started it (YAML runs); `null` for a code workflow.
    pub state: Option<String>,
    /// Its status: how it finished, as the parent journaled it, else where it stands now;
    /// absent when neither is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
}

/// The sub-runs of the run of `summary` whose journal is `entries` (at most
/// [`MAX_SUB_RUNS`]), and how many it started in all (of the listed ones, those refused
/// before they started left out). A sub-run that has not finished in the
/// parent's journal shows its own status, when it belongs to the parent's project.
pub fn sub_runs(engine: &Engine, summary: &RunSummary, entries: &[Entry]) -> (Vec<SubRun>, usize) {
    let mut state: Option<&str> = None;
    let mut runs: Vec<(Step, SubRun)> = Vec::new();
    let mut count = 0;
    for e in entries {
        match &e.record {
            Record::StateEntered { state: s, .. } => state = Some(s),
            Record::ChildStarted {
                step,
                child_run_id,
                workflow,
                ..
            } => {
                count += 1;
                if runs.len() < MAX_SUB_RUNS {
                    runs.push((
                        *step,
                        SubRun {
                            run_id: *child_run_id,
                            workflow: workflow.clone(),
                            state: state.map(str::to_owned),
                            status: None,
                        },
                    ));
                }
            }
            Record::ChildFinished { step, status, .. } => {
                if let Some((_, run)) = runs.iter_mut().rev().find(|(s, _)| s == step) {
                    run.status = Some(*status);
                }
            }
            _ => {}
        }
    }
    // A sub-run refused before it started (deeper than the nesting limit, past its tree's
    // bound, cancelled before its start) has its id in the parent's journal but is no run:
    // it is not listed. One that ended DONE ran; any other is looked up.
    let mut never_started = 0;
    let subs = runs
        .into_iter()
        .filter_map(|(_, mut run)| {
            if run.status == Some(RunStatus::Done) {
                return Some(run);
            }
            match engine.summary(run.run_id) {
                Err(magrathea_core::RunError::NotFound(_)) => {
                    never_started += 1;
                    None
                }
                found => {
                    if run.status.is_none() {
                        run.status = found
                            .ok()
                            .filter(|s| s.scope == summary.scope)
                            .map(|s| s.status);
                    }
                    Some(run)
                }
            }
        })
        .collect();
    (subs, count - never_started)
}
