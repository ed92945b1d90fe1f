//! What can go wrong with an editor graph or a layout, each with its code.

/// An editor graph or layout that cannot be served or stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// A `format` other than the known ones: ask for one of them.
    #[error("[MAG-GR001] unknown graph format `{given}`; known formats: reactflow, mermaid, dot")]
    UnknownFormat {
        /// The format asked for.
        given: String,
    },
    /// The body is not JSON of an editor graph: send one as the export writes it.
    #[error(
        "[MAG-GR002] the body is not an editor graph ({reason}); expected JSON \
         {{schemaVersion: \"1.0\", nodes: [{{id, position: {{x, y}}, width?, height?}}], viewport?: {{x, y, zoom}}}}"
    )]
    NotAGraph {
        /// What the JSON parser found.
        reason: String,
    },
    /// A `schemaVersion` other than `1.0`: convert the graph to version 1.0.
    #[error("[MAG-GR003] editor graph schemaVersion `{given}` is not supported; expected \"1.0\"")]
    SchemaVersion {
        /// The version sent.
        given: String,
    },
    /// Nodes that are not states of the document: remove them, or add the states to the
    /// document first (the document is the truth; the graph only places its states).
    #[error(
        "[MAG-GR004] node(s) {} are not states of workflow `{workflow}`; its states are {}",
        quoted(ids),
        quoted(states)
    )]
    UnknownNodes {
        /// The workflow.
        workflow: String,
        /// The ids that are not states.
        ids: Vec<String>,
        /// The document's states.
        states: Vec<String>,
    },
    /// A node id given twice: send each node once.
    #[error("[MAG-GR005] node `{id}` appears more than once in the editor graph")]
    DuplicateNode {
        /// The repeated id.
        id: String,
    },
    /// A width, height or zoom that is zero or negative: send positive sizes.
    #[error("[MAG-GR006] {what} must be above zero, got {value}")]
    NotPositive {
        /// Which value (`viewport.zoom`, `width of node \`a\``, …).
        what: String,
        /// The value sent.
        value: f64,
    },
    /// The stored layout file cannot be read as a layout: store a new one with `PUT`, or
    /// delete the file to get the automatic layout.
    #[error("[MAG-GR007] the layout file `{file}` is not a valid layout: {reason}")]
    InvalidLayout {
        /// The file, relative to the project.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The layout file cannot be read or written: check the directory's permissions and space.
    #[error("[MAG-GR008] cannot access the layout file `{file}`: {source}")]
    LayoutIo {
        /// The file, relative to the project.
        file: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
}

impl GraphError {
    /// The error's code, e.g. `MAG-GR004`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownFormat { .. } => "MAG-GR001",
            Self::NotAGraph { .. } => "MAG-GR002",
            Self::SchemaVersion { .. } => "MAG-GR003",
            Self::UnknownNodes { .. } => "MAG-GR004",
            Self::DuplicateNode { .. } => "MAG-GR005",
            Self::NotPositive { .. } => "MAG-GR006",
            Self::InvalidLayout { .. } => "MAG-GR007",
            Self::LayoutIo { .. } => "MAG-GR008",
        }
    }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
