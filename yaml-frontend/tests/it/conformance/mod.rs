//! Conformance with the Vancetope reference, section by section, through the library: each
//! test names the section it checks. The CLI-level suite lives with the `magrathea` command.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use magrathea_core::{GateAnswer, MemoryStore, Record, RunStatus, RunView, Store};
use magrathea_yaml::YamlStartError;
use serde_json::{Value, json};

use crate::common;
use common::Project;

mod gates_and_timers;
mod routing;
mod shell;
mod sub_runs;

async fn project(docs: &[(&str, &str)]) -> Project {
    project_on(Arc::new(MemoryStore::new()), docs).await
}

async fn project_on(store: Arc<dyn Store>, docs: &[(&str, &str)]) -> Project {
    let p = Project::on(store, |r| r).await;
    for (name, body) in docs {
        p.workflow(name, body);
    }
    p
}

fn write_doc(project: &Path, name: &str, body: &str) {
    std::fs::write(
        project
            .join("_vance/workflows")
            .join(format!("{name}.yaml")),
        body,
    )
    .unwrap();
}

impl Project {
    /// Answers the one pending inbox item with `answer`, then waits for `view`'s run to end.
    async fn answer_pending(&self, view: &RunView, answer: GateAnswer) -> RunView {
        let item = self
            .engine
            .inbox(magrathea_core::InboxFilter::Pending)
            .unwrap()
            .remove(0);
        self.engine.answer_gate(&item.id, answer).await.unwrap();
        self.engine.wait(view.workflow_run_id).await.unwrap()
    }

    fn count(&self, view: &RunView, type_name: &str) -> usize {
        self.records(view)
            .iter()
            .filter(|r| r.type_name() == type_name)
            .count()
    }
}
