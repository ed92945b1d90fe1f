//! A temporary project for the YAML runtime's tests: `<tmp>/acme/shop/_vance/…` (tenant
//! `acme`, project `shop`) with a runtime installed on an engine.

// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use magrathea_core::{Engine, MemoryStore, Record, RunView, Store};
use magrathea_yaml::{DocumentSource, Scope, YamlRuntime};
use serde_json::Value;

/// A project directory, its runtime and an engine that runs it.
pub(crate) struct Project {
    _dir: tempfile::TempDir,
    /// `<tmp>/acme/shop`.
    pub(crate) project: PathBuf,
    /// The runtime over the project's documents.
    pub(crate) runtime: YamlRuntime,
    /// `acme/shop`.
    pub(crate) scope: Scope,
    /// The engine, with the runtime installed.
    pub(crate) engine: Engine,
}

impl Project {
    /// A project on an in-memory store; `configure` adjusts the runtime before it is installed.
    pub(crate) async fn new(configure: impl FnOnce(YamlRuntime) -> YamlRuntime) -> Self {
        Self::on(Arc::new(MemoryStore::new()), configure).await
    }

    /// A project on `store`.
    pub(crate) async fn on(
        store: Arc<dyn Store>,
        configure: impl FnOnce(YamlRuntime) -> YamlRuntime,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("acme").join("shop");
        std::fs::create_dir_all(project.join("_vance/workflows")).unwrap();
        let (source, scope) = DocumentSource::for_project_dir(&project);
        let runtime = configure(YamlRuntime::new(source));
        let engine = runtime
            .install(Engine::builder().store(store))
            .build()
            .await
            .unwrap();
        Self {
            _dir: dir,
            project,
            runtime,
            scope,
            engine,
        }
    }

    /// Writes `_vance/<kind>/<name>.yaml`.
    pub(crate) fn document(&self, kind: &str, name: &str, body: &str) {
        let dir = self.project.join("_vance").join(kind);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.yaml")), body).unwrap();
    }

    /// Writes `_vance/workflows/<name>.yaml`.
    pub(crate) fn workflow(&self, name: &str, body: &str) {
        self.document("workflows", name, body);
    }

    /// Starts `name` and waits until it is DONE, FAILED, CANCELLED, WAITING or BLOCKED.
    pub(crate) async fn run(&self, name: &str, params: Value) -> RunView {
        let run = self
            .runtime
            .start(&self.engine, &self.scope, name, params, "tester")
            .await
            .unwrap();
        self.engine.wait_settled(run).await.unwrap()
    }

    /// The run's journal records.
    pub(crate) fn records(&self, view: &RunView) -> Vec<Record> {
        self.engine
            .journal(view.workflow_run_id)
            .unwrap()
            .into_iter()
            .map(|e| e.record)
            .collect()
    }
}
