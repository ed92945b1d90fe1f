//! Project lanes (reference §11): a project's synchronous tasks run one at a time by default,
//! so two runs never race in one workspace; `lanes.maxConcurrentTasks` in the project's
//! settings raises the limit. Lanes of different projects are independent.
//!
//! Each project has two lanes of that width: one for its shell steps ([`Lane::Shell`]) and one
//! for its script and tool steps ([`Lane::Tasks`]). Shell steps are the ones that touch the
//! workspace and the ones that may run for an hour; script and tool steps are short and
//! reach the workspace only through the tool layer. Keeping them apart means a slow shell
//! step of one run never holds up another run's script or tool steps, while two shell steps of
//! a project still never run in its workspace at once (with the default width of 1).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::documents::{DocumentSource, Scope};

/// Which of a project's two lanes a step waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lane {
    /// `shell_task` steps.
    Shell,
    /// `script_task` and `tool_task` steps (and hosts' own executors, through
    /// `Executors::enter_lane`).
    Tasks,
}

pub(crate) struct Lanes {
    docs: DocumentSource,
    lanes: Mutex<HashMap<(String, Lane), Arc<Semaphore>>>,
}

impl Lanes {
    pub(crate) fn new(docs: DocumentSource) -> Self {
        Self {
            docs,
            lanes: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for a place in the scope's lane `lane`.
    pub(crate) async fn enter(&self, scope_key: &str, lane: Lane) -> OwnedSemaphorePermit {
        let semaphore = {
            let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
            lanes
                .entry((scope_key.to_string(), lane))
                .or_insert_with(|| {
                    let permits = Scope::parse(scope_key)
                        .map(|s| self.docs.settings(&s).lanes.max_concurrent_tasks)
                        .unwrap_or(1)
                        .max(1);
                    Arc::new(Semaphore::new(permits))
                })
                .clone()
        };
        // The semaphore is never closed.
        semaphore
            .acquire_owned()
            .await
            .expect("lane semaphores are never closed")
    }
}
