//! The StateGraph: states and labelled transitions of a document, and its renderings.

use crate::ast::{TaskSpec, WorkflowDoc};

/// One labelled transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// From state.
    pub from: String,
    /// To state.
    pub to: String,
    /// The outcome (`on:`), error kind (`catch:`), condition (`if …`) or `else`.
    pub label: String,
}

/// A compiled document: its states (with their task types) and every transition.
#[derive(Debug, Clone)]
pub struct StateGraph {
    /// The start state.
    pub start: String,
    /// `(name, task type)` in document order.
    pub states: Vec<(String, String)>,
    /// Every transition.
    pub edges: Vec<Edge>,
}

impl StateGraph {
    /// Compiles the graph of a validated document.
    pub fn from_doc(doc: &WorkflowDoc) -> Self {
        let mut edges = Vec::new();
        for (name, state) in &doc.states {
            let mut add = |to: &str, label: String| {
                edges.push(Edge {
                    from: name.clone(),
                    to: to.to_string(),
                    label,
                });
            };
            if let TaskSpec::Condition { rules, otherwise } = &state.task {
                for r in rules {
                    add(&r.target, format!("if {}", r.condition.source()));
                }
                if let Some(o) = otherwise {
                    add(&o.value, "else".into());
                }
            }
            for t in &state.on {
                add(&t.target, t.outcome.clone());
            }
            for c in &state.catch {
                add(&c.target, format!("catch {}", c.kind));
            }
        }
        Self {
            start: doc.start.value.clone(),
            states: doc
                .states
                .iter()
                .map(|(n, s)| (n.clone(), s.task_type.as_str().to_string()))
                .collect(),
            edges,
        }
    }

    /// Mermaid `stateDiagram-v2` text.
    pub fn to_mermaid(&self) -> String {
        let mut out = String::from("stateDiagram-v2\n");
        out.push_str(&format!("    [*] --> {}\n", self.start));
        for (name, ty) in &self.states {
            out.push_str(&format!("    {name} : {name} ({ty})\n"));
            if ty == "terminal" {
                out.push_str(&format!("    {name} --> [*]\n"));
            }
        }
        for e in &self.edges {
            let label = e.label.replace(':', "#colon;");
            out.push_str(&format!("    {} --> {} : {}\n", e.from, e.to, label));
        }
        out
    }

    /// Graphviz DOT text.
    pub fn to_dot(&self) -> String {
        let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        let mut out = String::from("digraph workflow {\n    rankdir=LR;\n");
        out.push_str("    __start [shape=point];\n");
        for (name, ty) in &self.states {
            let shape = if ty == "terminal" {
                "doublecircle"
            } else {
                "box"
            };
            out.push_str(&format!(
                "    \"{}\" [shape={shape}, label=\"{}\\n({ty})\"];\n",
                esc(name),
                esc(name)
            ));
        }
        out.push_str(&format!("    __start -> \"{}\";\n", esc(&self.start)));
        for e in &self.edges {
            out.push_str(&format!(
                "    \"{}\" -> \"{}\" [label=\"{}\"];\n",
                esc(&e.from),
                esc(&e.to),
                esc(&e.label)
            ));
        }
        out.push_str("}\n");
        out
    }
}
