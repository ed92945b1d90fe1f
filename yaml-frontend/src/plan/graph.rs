//! The StateGraph: states and labelled transitions of a document, and its renderings.

use super::{Plan, StateId, Step};
use crate::ast::WorkflowDoc;

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
    /// The graph of a validated document.
    #[must_use]
    pub fn from_doc(doc: &WorkflowDoc) -> Self {
        Self::from_plan(&Plan::compile(doc))
    }

    /// The graph of a plan: condition rules (`if …`, `else`), `on:` outcomes and `catch:`
    /// kinds, in that order per state.
    #[must_use]
    pub fn from_plan(plan: &Plan) -> Self {
        let name = |id: StateId| plan.states[id].name.clone();
        let mut edges = Vec::new();
        for state in &plan.states {
            let mut add = |to: StateId, label: String| {
                edges.push(Edge {
                    from: state.name.clone(),
                    to: name(to),
                    label,
                });
            };
            if let Step::Condition { rules, otherwise } = &state.step {
                for (condition, to) in rules {
                    add(*to, format!("if {}", condition.source()));
                }
                if let Some(to) = otherwise {
                    add(*to, "else".into());
                }
            }
            for (outcome, to) in &state.on {
                add(*to, outcome.clone());
            }
            for (kind, to) in &state.catch {
                add(*to, format!("catch {kind}"));
            }
        }
        Self {
            start: name(plan.start),
            states: plan
                .states
                .iter()
                .map(|s| (s.name.clone(), s.task_type.as_str().to_string()))
                .collect(),
            edges,
        }
    }

    /// Mermaid `stateDiagram-v2` text. A state whose name is not a plain word (Mermaid's ids
    /// take no `-`, space or `:`) or is one of Mermaid's words (`end`, `state`, `note`, …) is
    /// declared under an alias, `state "run-checks" as s2`; in texts, `:` and `;` (which end a
    /// Mermaid description) are written as entities.
    pub fn to_mermaid(&self) -> String {
        const KEYWORDS: [&str; 20] = [
            "as",
            "choice",
            "class",
            "classdef",
            "click",
            "concurrent",
            "default",
            "direction",
            "end",
            "fork",
            "hide",
            "join",
            "left",
            "linkstyle",
            "note",
            "of",
            "right",
            "scale",
            "state",
            "style",
        ];
        let plain = |n: &str| {
            !n.is_empty()
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !KEYWORDS.contains(&n.to_ascii_lowercase().as_str())
        };
        let ids: std::collections::HashMap<&str, String> = self
            .states
            .iter()
            .enumerate()
            .map(|(i, (name, _))| {
                let id = if plain(name) {
                    name.clone()
                } else {
                    // An alias no plain state name takes.
                    let mut alias = format!("s{i}");
                    while self.states.iter().any(|(n, _)| *n == alias) {
                        alias.insert(0, '_');
                    }
                    alias
                };
                (name.as_str(), id)
            })
            .collect();
        let id = |name: &str| ids.get(name).cloned().unwrap_or_else(|| name.to_string());
        let text = |t: &str| {
            let mut out = String::with_capacity(t.len());
            for c in t.chars() {
                match c {
                    ':' => out.push_str("#colon;"),
                    ';' => out.push_str("#59;"),
                    c => out.push(c),
                }
            }
            out
        };
        let mut out = String::from("stateDiagram-v2\n");
        for (name, _) in &self.states {
            if !plain(name) {
                let shown = name.replace('"', "#quot;");
                out.push_str(&format!("    state \"{shown}\" as {}\n", id(name)));
            }
        }
        out.push_str(&format!("    [*] --> {}\n", id(&self.start)));
        for (name, ty) in &self.states {
            let at = id(name);
            out.push_str(&format!("    {at} : {} ({ty})\n", text(name)));
            if ty == "terminal" {
                out.push_str(&format!("    {at} --> [*]\n"));
            }
        }
        for e in &self.edges {
            out.push_str(&format!(
                "    {} --> {} : {}\n",
                id(&e.from),
                id(&e.to),
                text(&e.label)
            ));
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
