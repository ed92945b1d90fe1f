//! The JSON of `FridayWorkflowEditorGraphV1` (Friday design §1), as the export writes it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `schemaVersion` of the graphs this module writes and reads.
pub const SCHEMA_VERSION: &str = "1.0";

/// `reactFlowVersion` of the graphs this module writes.
pub const REACT_FLOW_VERSION: &str = "11";

/// A workflow as the editor draws it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EditorGraph {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: &'static str,
    /// Always [`REACT_FLOW_VERSION`].
    pub react_flow_version: &'static str,
    /// One node per state, in document order.
    pub nodes: Vec<GraphNode>,
    /// One edge per transition, per state in document order: condition rules, `else`, `on:`
    /// outcomes, `catch:` kinds.
    pub edges: Vec<GraphEdge>,
    /// The editor's viewport: the layout's, else `{x: 0, y: 0, zoom: 1}`.
    pub viewport: Viewport,
    /// The workflow's own settings (Friday's version `config`): the document's top-level
    /// fields other than `start:` and `states:` (`parameters`, `bounds`, `onFailure`, …), as
    /// written; absent when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

/// A state as a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphNode {
    /// The state's name.
    pub id: String,
    /// Always `workflow_node` (the editor's one node component).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Where it stands.
    pub position: Position,
    /// Its width, when the layout has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    /// Its height, when the layout has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<f64>,
    /// What the state is (`FridayWorkflowNodeDefinition`).
    pub data: NodeData,
}

/// `FridayWorkflowNodeDefinition` of a state.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeData {
    /// The state's name.
    pub id: String,
    /// Friday's node type for the state's task type.
    #[serde(rename = "type")]
    pub node_type: NodeType,
    /// The name the editor shows: the layout's name for the node, else the state's name.
    pub name: String,
    /// `true` on the state where a run starts (the document's `start:`), absent elsewhere:
    /// Friday marks a run's entry with trigger nodes, which the export has none of, and a
    /// start that a loop leads back to has incoming edges like any other node.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub start: bool,
    /// The state's spec as written, as JSON; an action also has `actionType`, its task type.
    pub config: Value,
    /// `timeoutSeconds:` in milliseconds, when the state has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// Friday's node types, and `terminal`, which Friday does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeType {
    /// Every task that does work: agent, shell, script, tool, timer and sub-workflow tasks.
    Action,
    /// A `gate_task`.
    Approval,
    /// A `condition_task`.
    Condition,
    /// A `terminal` state: the run ends there. Friday ends a run at nodes without outgoing
    /// edges; the reference names its end states, so the graph shows them as such.
    Terminal,
}

/// A transition as an edge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphEdge {
    /// `<source>.<n>`: the source state and the transition's place among its transitions.
    pub id: String,
    /// The state the transition leaves.
    pub source: String,
    /// The state it enters.
    pub target: String,
    /// What the editor shows on it, as `magrathea graph` labels it: the outcome, `catch
    /// <kind>`, `if <condition>` or `else`.
    pub label: String,
    /// Friday's edge data.
    pub data: EdgeData,
}

/// Friday's `{condition?, branch?}` of an edge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EdgeData {
    /// The condition of a `condition_task` rule, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Friday's branch word where one fits (`success`, `failure`, `approve`, `reject`,
    /// `true`, `false`), else the raw outcome or error kind.
    pub branch: String,
}

/// A point of the editor's canvas.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Position {
    /// Horizontal, growing to the right.
    pub x: f64,
    /// Vertical, growing downwards.
    pub y: f64,
}

/// The editor's viewport.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Viewport {
    /// Pan, horizontal.
    pub x: f64,
    /// Pan, vertical.
    pub y: f64,
    /// Zoom factor, above zero.
    pub zoom: f64,
}

impl Default for Viewport {
    fn default() -> Self {
        Self {
            x: 0.0,
            y: 0.0,
            zoom: 1.0,
        }
    }
}
