//! The layout file: where the editor put a workflow's nodes, and its viewport.
//!
//! `_vance/workflows/<name>.layout.json` holds
//! `{"schemaVersion": "1.0", "nodes": {"<state>": {"x", "y", "width"?, "height"?, "name"?}}, "viewport"?: {"x", "y", "zoom"}}`.
//! It is written whole by each `PUT` of the graph (atomically: a temporary file, then a
//! rename) and read by each export; nodes it names that are no longer states are skipped.

use std::collections::BTreeMap;
use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{Position, Viewport};
use super::{GraphError, SCHEMA_VERSION};

/// `schemaVersion` of layout files.
pub const LAYOUT_SCHEMA_VERSION: &str = "1.0";

/// Where the editor placed a workflow's nodes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Layout {
    /// Always [`LAYOUT_SCHEMA_VERSION`].
    pub schema_version: String,
    /// Placement per state name.
    pub nodes: BTreeMap<String, NodeLayout>,
    /// The viewport, when the editor sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewport: Option<Viewport>,
}

/// Where one node stands, its size when the editor sent one, and the name the editor shows
/// when it is not the state's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeLayout {
    /// Horizontal position.
    pub x: f64,
    /// Vertical position.
    pub y: f64,
    /// Width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    /// Height.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<f64>,
    /// The node's `data.name` where it differs from the state's name (a Friday editor names
    /// its nodes apart from their ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The longest node name a layout keeps, in characters.
pub const MAX_NODE_NAME: usize = 200;

/// What a `PUT` of the graph is read as: only ids, positions, sizes, the nodes' names and the
/// viewport; edges, the rest of the node data and any other field are ignored (the document is
/// the truth).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sent {
    schema_version: Option<String>,
    nodes: Vec<SentNode>,
    #[serde(default)]
    viewport: Option<Viewport>,
}

#[derive(Debug, Deserialize)]
struct SentNode {
    id: String,
    position: Position,
    #[serde(default)]
    width: Option<f64>,
    #[serde(default)]
    height: Option<f64>,
    #[serde(default)]
    data: Option<SentData>,
}

#[derive(Debug, Deserialize)]
struct SentData {
    #[serde(default)]
    name: Option<Value>,
}

impl Layout {
    /// The layout an editor graph (JSON, as the export writes it) asks for, checked against
    /// the `states` of `workflow`: every node must be a state, once; sizes and zoom above zero.
    pub fn from_editor_graph(
        body: &[u8],
        workflow: &str,
        states: &[String],
    ) -> Result<Self, GraphError> {
        let sent: Sent = serde_json::from_slice(body).map_err(|e| GraphError::NotAGraph {
            reason: crate::http::body::plain(&e),
        })?;
        if let Some(v) = &sent.schema_version
            && v != SCHEMA_VERSION
        {
            return Err(GraphError::SchemaVersion { given: v.clone() });
        }
        let known: HashSet<&str> = states.iter().map(String::as_str).collect();
        let unknown: Vec<String> = sent
            .nodes
            .iter()
            .filter(|n| !known.contains(n.id.as_str()))
            .map(|n| n.id.clone())
            .collect();
        if !unknown.is_empty() {
            return Err(GraphError::UnknownNodes {
                workflow: workflow.to_string(),
                ids: unknown,
                states: states.to_vec(),
            });
        }
        if let Some(v) = sent.viewport {
            positive("viewport.zoom".into(), Some(v.zoom))?;
        }
        let mut nodes = BTreeMap::new();
        for n in sent.nodes {
            positive(format!("the width of node `{}`", n.id), n.width)?;
            positive(format!("the height of node `{}`", n.id), n.height)?;
            let name = match n.data.and_then(|d| d.name) {
                Some(Value::String(name)) => Some(name),
                _ => None,
            };
            let placed = NodeLayout::new(n.position, n.width, n.height, name, &n.id)?;
            if nodes.insert(n.id.clone(), placed).is_some() {
                return Err(GraphError::DuplicateNode { id: n.id });
            }
        }
        Ok(Self {
            schema_version: LAYOUT_SCHEMA_VERSION.into(),
            nodes,
            viewport: sent.viewport,
        })
    }

    /// The layout of an imported editor graph: each node of `states` where the graph placed
    /// it (and its size and name), and the graph's viewport. Values that are not a layout's
    /// (a position without numbers, a size or zoom not above zero, a name too long) are left
    /// to the automatic layout. `None` when nothing is placed.
    pub fn of_imported_graph(graph: &Value, states: &[String]) -> Option<Self> {
        let number = |v: Option<&Value>| v.and_then(Value::as_f64).filter(|n| n.is_finite());
        let size = |v: Option<&Value>| number(v).filter(|n| *n > 0.0);
        let mut nodes = BTreeMap::new();
        for n in graph.get("nodes").and_then(Value::as_array)? {
            let Some(id) = n.get("id").and_then(Value::as_str) else {
                continue;
            };
            let (Some(x), Some(y)) = (
                number(n.pointer("/position/x")),
                number(n.pointer("/position/y")),
            ) else {
                continue;
            };
            if !states.iter().any(|s| s == id) || nodes.contains_key(id) {
                continue;
            }
            let name = n
                .pointer("/data/name")
                .and_then(Value::as_str)
                .filter(|name| name.chars().count() <= MAX_NODE_NAME)
                .map(str::to_owned);
            let placed = NodeLayout::new(
                Position { x, y },
                size(n.get("width")),
                size(n.get("height")),
                name,
                id,
            )
            .ok()?;
            nodes.insert(id.to_owned(), placed);
        }
        let viewport = match (
            number(graph.pointer("/viewport/x")),
            number(graph.pointer("/viewport/y")),
            size(graph.pointer("/viewport/zoom")),
        ) {
            (Some(x), Some(y), Some(zoom)) => Some(Viewport { x, y, zoom }),
            _ => None,
        };
        (!nodes.is_empty() || viewport.is_some()).then(|| Self {
            schema_version: LAYOUT_SCHEMA_VERSION.into(),
            nodes,
            viewport,
        })
    }

    /// Reads the layout file at `path`; `None` when there is none. `label` names the file in
    /// errors (relative to the project, never a path of the server's disk).
    pub fn read(path: &Path, label: &str) -> Result<Option<Self>, GraphError> {
        Self::read_opened(magrathea_exec::regular_file::open(path), label)
    }

    /// [`Layout::read`] of a file opened by the caller (beneath its project, in a served
    /// tree); `opened` is the open's result, a missing file `None`.
    pub fn read_opened(
        opened: std::io::Result<std::fs::File>,
        label: &str,
    ) -> Result<Option<Self>, GraphError> {
        let bytes = match opened.and_then(magrathea_exec::regular_file::read_opened) {
            Ok(b) => b,
            // A named pipe (or anything but a file) a step made there is no layout either.
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || magrathea_exec::regular_file::is_not_regular(&e) =>
            {
                return Ok(None);
            }
            Err(source) => {
                return Err(GraphError::LayoutIo {
                    file: label.into(),
                    source,
                });
            }
        };
        let invalid = |reason: String| GraphError::InvalidLayout {
            file: label.into(),
            reason,
        };
        // A byte-order mark (a Windows editor's) is no part of the JSON.
        let json = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        let layout: Self = serde_json::from_slice(json).map_err(|e| invalid(e.to_string()))?;
        if layout.schema_version != LAYOUT_SCHEMA_VERSION {
            return Err(invalid(format!(
                "schemaVersion `{}` is not supported; expected \"{LAYOUT_SCHEMA_VERSION}\"",
                layout.schema_version
            )));
        }
        Ok(Some(layout))
    }

    /// Writes the layout to `path` atomically (a temporary file beside it, then a rename),
    /// creating its directory.
    pub fn write(&self, path: &Path, label: &str) -> Result<(), GraphError> {
        self.write_with(label, |bytes| {
            crate::atomic_write::write_atomically(path, bytes)
        })
    }

    /// [`Layout::write`] through `write`, which writes the file's bytes (beneath its project,
    /// in a served tree).
    pub fn write_with(
        &self,
        label: &str,
        write: impl FnOnce(&[u8]) -> std::io::Result<()>,
    ) -> Result<(), GraphError> {
        let io = |source| GraphError::LayoutIo {
            file: label.into(),
            source,
        };
        let mut text = serde_json::to_string_pretty(self).map_err(|e| io(e.into()))?;
        text.push('\n');
        write(text.as_bytes()).map_err(io)
    }
}

impl NodeLayout {
    /// A node's layout, its name kept only where it is not `id` (nor blank); a name longer than
    /// [`MAX_NODE_NAME`] is refused.
    pub fn new(
        position: Position,
        width: Option<f64>,
        height: Option<f64>,
        name: Option<String>,
        id: &str,
    ) -> Result<Self, GraphError> {
        if let Some(name) = &name
            && name.chars().count() > MAX_NODE_NAME
        {
            return Err(GraphError::NotAGraph {
                reason: format!(
                    "the name of node `{id}` is longer than {MAX_NODE_NAME} characters"
                ),
            });
        }
        Ok(Self {
            x: position.x,
            y: position.y,
            width,
            height,
            name: name.filter(|n| n != id && !n.trim().is_empty()),
        })
    }
}

fn positive(what: String, value: Option<f64>) -> Result<(), GraphError> {
    match value {
        Some(v) if v <= 0.0 || !v.is_finite() => Err(GraphError::NotPositive { what, value: v }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn only_positions_sizes_and_the_viewport_are_kept() {
        let body = br#"{"schemaVersion":"1.0","reactFlowVersion":"11",
            "nodes":[{"id":"a","type":"workflow_node","position":{"x":1,"y":2},"width":100,"data":{"x":1}}],
            "edges":[{"id":"e","source":"a","target":"zzz"}],
            "viewport":{"x":3,"y":4,"zoom":0.5}}"#;
        let l = Layout::from_editor_graph(body, "w", &states()).unwrap();
        assert_eq!(l.nodes.len(), 1);
        assert_eq!(
            l.nodes["a"],
            NodeLayout {
                x: 1.0,
                y: 2.0,
                width: Some(100.0),
                height: None,
                name: None
            }
        );
        assert_eq!(l.viewport.unwrap().zoom, 0.5);
    }

    #[test]
    fn a_node_name_other_than_its_id_is_kept_and_a_long_one_refused() {
        let body = br#"{"nodes":[{"id":"a","position":{"x":1,"y":2},"data":{"name":"Check A"}},
            {"id":"b","position":{"x":1,"y":2},"data":{"name":"b"}}]}"#;
        let l = Layout::from_editor_graph(body, "w", &states()).unwrap();
        assert_eq!(l.nodes["a"].name.as_deref(), Some("Check A"));
        assert_eq!(
            l.nodes["b"].name, None,
            "the state's own name is not kept twice"
        );
        let blank = br#"{"nodes":[{"id":"a","position":{"x":1,"y":2},"data":{"name":" "}}]}"#;
        let l = Layout::from_editor_graph(blank, "w", &states()).unwrap();
        assert_eq!(l.nodes["a"].name, None, "a blank name leaves the state's");
        let long = "x".repeat(MAX_NODE_NAME + 1);
        let body = format!(
            r#"{{"nodes":[{{"id":"a","position":{{"x":1,"y":2}},"data":{{"name":"{long}"}}}}]}}"#
        );
        let e = Layout::from_editor_graph(body.as_bytes(), "w", &states()).unwrap_err();
        assert_eq!(e.code(), "MAG-GR002", "{e}");
        // A body of the wrong shape is told in JSON's words, not the reader's type.
        let e = Layout::from_editor_graph(b"[]", "w", &states()).unwrap_err();
        assert_eq!(e.code(), "MAG-GR002", "{e}");
        assert!(
            e.to_string().contains("a JSON object") && !e.to_string().contains("struct"),
            "{e}"
        );
    }

    #[test]
    fn an_imported_graph_keeps_what_a_layout_holds_of_its_states() {
        let graph = serde_json::json!({
            "nodes": [
                {"id": "a", "position": {"x": 1, "y": 2}, "width": 90, "data": {"name": "First"}},
                {"id": "t", "position": {"x": 0, "y": 0}, "data": {"type": "trigger"}},
                {"id": "b", "position": {"x": "far"}, "height": -1}
            ],
            "viewport": {"x": 3, "y": 4, "zoom": 0}
        });
        let l = Layout::of_imported_graph(&graph, &states()).unwrap();
        assert_eq!(l.nodes.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(l.nodes["a"].width, Some(90.0));
        assert_eq!(l.nodes["a"].name.as_deref(), Some("First"));
        assert_eq!(l.viewport, None, "a zoom of 0 is no viewport");
        assert_eq!(
            Layout::of_imported_graph(&serde_json::json!({"nodes": []}), &states()),
            None
        );
    }

    #[test]
    fn nodes_that_are_not_states_are_refused_by_name() {
        let body = br#"{"nodes":[{"id":"ghost","position":{"x":1,"y":2}}]}"#;
        let e = Layout::from_editor_graph(body, "w", &states()).unwrap_err();
        assert_eq!(e.code(), "MAG-GR004");
        let m = e.to_string();
        assert!(m.contains("`ghost`") && m.contains("`a`, `b`"), "{m}");
    }

    #[test]
    fn malformed_graphs_are_refused_with_what_was_expected() {
        for (body, code) in [
            (&b"not json"[..], "MAG-GR002"),
            (br#"{"nodes":[{"id":"a"}]}"#, "MAG-GR002"),
            (br#"{"schemaVersion":"2.0","nodes":[]}"#, "MAG-GR003"),
            (
                br#"{"nodes":[{"id":"a","position":{"x":1,"y":2}},{"id":"a","position":{"x":1,"y":2}}]}"#,
                "MAG-GR005",
            ),
            (
                br#"{"nodes":[],"viewport":{"x":0,"y":0,"zoom":0}}"#,
                "MAG-GR006",
            ),
            (
                br#"{"nodes":[{"id":"a","position":{"x":1,"y":2},"height":-3}]}"#,
                "MAG-GR006",
            ),
        ] {
            let e = Layout::from_editor_graph(body, "w", &states()).unwrap_err();
            assert_eq!(e.code(), code, "{e}");
        }
        let e = Layout::from_editor_graph(b"[]", "w", &states()).unwrap_err();
        assert!(e.to_string().contains("expected JSON"), "{e}");
    }

    #[test]
    fn a_written_layout_reads_back_and_a_broken_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w/x.layout.json");
        assert!(Layout::read(&path, "x").unwrap().is_none());
        let body = br#"{"nodes":[{"id":"b","position":{"x":-5.5,"y":2}}]}"#;
        let l = Layout::from_editor_graph(body, "w", &states()).unwrap();
        l.write(&path, "x").unwrap();
        assert_eq!(Layout::read(&path, "x").unwrap(), Some(l.clone()));
        // Saved by an editor that writes a byte-order mark first: the same layout.
        let mut marked = b"\xEF\xBB\xBF".to_vec();
        marked.extend(std::fs::read(&path).unwrap());
        std::fs::write(&path, marked).unwrap();
        assert_eq!(Layout::read(&path, "x").unwrap(), Some(l));
        std::fs::write(&path, "{").unwrap();
        let e = Layout::read(&path, "_vance/workflows/x.layout.json").unwrap_err();
        assert_eq!(e.code(), "MAG-GR007");
        assert!(
            e.to_string().contains("_vance/workflows/x.layout.json"),
            "{e}"
        );
    }

    #[test]
    fn a_layout_path_that_cannot_be_read_or_written_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.layout.json");
        std::fs::create_dir(&path).unwrap();
        let e = Layout::read(&path, "x.layout.json").unwrap_err();
        assert_eq!(e.code(), "MAG-GR008");
        let e = Layout::default().write(&path, "x.layout.json").unwrap_err();
        assert_eq!(e.code(), "MAG-GR008");
    }
}
