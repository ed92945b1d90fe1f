//! Project lanes (reference §11): a project's synchronous tasks run one at a time by default,
//! so two runs never race in one workspace; `lanes.maxConcurrentTasks` in the project's
//! settings raises the limit. Lanes of different projects are independent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::documents::{DocumentSource, Scope};

pub(crate) struct Lanes {
    docs: DocumentSource,
    lanes: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Lanes {
    pub(crate) fn new(docs: DocumentSource) -> Self {
        Self {
            docs,
            lanes: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for a place in the scope's lane.
    pub(crate) async fn enter(&self, scope_key: &str) -> OwnedSemaphorePermit {
        let lane = {
            let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
            lanes
                .entry(scope_key.to_string())
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
        lane.acquire_owned()
            .await
            .expect("lane semaphores are never closed")
    }
}
