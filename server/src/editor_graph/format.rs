//! The formats a workflow's graph is served in.

use std::str::FromStr;

use super::GraphError;

/// A rendering of a workflow's graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GraphFormat {
    /// Friday's editor graph: React Flow JSON with positions (the HTTP default).
    #[default]
    ReactFlow,
    /// A Mermaid `stateDiagram-v2`.
    Mermaid,
    /// A Graphviz `digraph`.
    Dot,
}

impl FromStr for GraphFormat {
    type Err = GraphError;

    /// `reactflow`, `mermaid` or `dot`, in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "reactflow" => Ok(Self::ReactFlow),
            "mermaid" => Ok(Self::Mermaid),
            "dot" => Ok(Self::Dot),
            _ => Err(GraphError::UnknownFormat {
                given: s.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_formats_parse_and_others_name_the_known_ones() {
        assert_eq!(
            "reactflow".parse::<GraphFormat>().unwrap(),
            GraphFormat::ReactFlow
        );
        assert_eq!("DOT".parse::<GraphFormat>().unwrap(), GraphFormat::Dot);
        assert_eq!(
            "mermaid".parse::<GraphFormat>().unwrap(),
            GraphFormat::Mermaid
        );
        let e = "svg".parse::<GraphFormat>().unwrap_err().to_string();
        assert!(
            e.contains("MAG-GR001") && e.contains("reactflow, mermaid, dot"),
            "{e}"
        );
    }
}
