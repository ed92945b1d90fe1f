//! The editor graph: a workflow document as the React Flow graph of the Friday editor
//! (`FridayWorkflowEditorGraphV1`), and the layout file that keeps where its nodes stand.
//!
//! The document is the truth: nodes are its states, edges its transitions. Only positions,
//! sizes and the viewport are the editor's, kept in the project's layout file
//! `_vance/workflows/<name>.layout.json` ([`layout_path`]), beside the document and never part
//! of it, so a run (which freezes the document) never reads layout. Without a layout, or for
//! states the layout does not name, positions come from a deterministic layered layout
//! ([`auto_layout`]). `docs/editor-graph.md` has the mapping between the two models.
//!
//! - [`export`]: a loaded document (and its layout) → [`EditorGraph`].
//! - [`Layout::from_editor_graph`]: a graph an editor sends back → the [`Layout`] to store.
//! - [`import`]: a Friday editor graph → a workflow draft (series-parallel graphs only).
//! - [`GraphFormat`]: the formats the graph is served in (React Flow, Mermaid, DOT).

use std::path::{Path, PathBuf};

use magrathea_yaml::Scope;

pub mod auto_layout;
mod error;
mod export;
mod format;
mod import;
mod layout;
mod model;

pub use error::GraphError;
pub use export::{export, node_type_of};
pub use format::GraphFormat;
pub use import::{
    ImportError, TriggerDocument, design_node_ids, first_cycle, import, trigger_documents,
};
pub use layout::{LAYOUT_SCHEMA_VERSION, Layout, MAX_NODE_NAME, NodeLayout};
pub use model::{
    EdgeData, EditorGraph, GraphEdge, GraphNode, NodeData, NodeType, Position, REACT_FLOW_VERSION,
    SCHEMA_VERSION, Viewport,
};

/// The layout file of workflow `name` in a project: `<project>/_vance/workflows/<name>.layout.json`.
///
/// It is always the project's, even when the workflow comes from the tenant, so one
/// project's layout does not move another's nodes. It ends in `.json`, so nothing that reads
/// `_vance/workflows/*.yaml` takes it for a workflow.
pub fn layout_path(project_dir: &Path, name: &str) -> PathBuf {
    project_dir
        .join("_vance")
        .join("workflows")
        .join(format!("{name}.layout.json"))
}

/// The layout file of `name` in `scope` of a document tree rooted at `root`.
pub fn layout_path_in(root: &Path, scope: &Scope, name: &str) -> PathBuf {
    layout_path(&root.join(&scope.tenant).join(&scope.project), name)
}
