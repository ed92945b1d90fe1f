//! `magrathea graph NAME`: a workflow's state graph, each transition labelled with its
//! outcome (`on:`), error kind (`catch:`) or condition (`if …` / `else`).

use magrathea_yaml::{LoadOptions, load_workflow};

use super::output::{errln, out};
use super::store::Project;
use super::{EXIT_INVALID, EXIT_OK, Location};

/// Output formats of `magrathea graph`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Format {
    /// A Mermaid `stateDiagram-v2`.
    Mermaid,
    /// A Graphviz `digraph`.
    Dot,
}

/// Arguments of `magrathea graph`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Exit codes: 0 printed; 1 workflow not found; 2 invalid document.")]
pub(crate) struct GraphArgs {
    /// The workflow (resolved like `run`: project, then tenant).
    name: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "mermaid")]
    format: Format,
}

pub(crate) fn graph(loc: &Location, args: GraphArgs) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    let (path, text) = project
        .docs()
        .workflow(&project.scope, &args.name)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let label = path.display().to_string();
    let plan = match load_workflow(&label, &text, &LoadOptions::default()) {
        Ok(loaded) => loaded.plan,
        Err(diags) => {
            for d in diags.iter() {
                errln!("{d}");
            }
            return Ok(EXIT_INVALID);
        }
    };
    let graph = plan.graph();
    out!(
        "{}",
        match args.format {
            Format::Mermaid => graph.to_mermaid(),
            Format::Dot => graph.to_dot(),
        }
    )?;
    Ok(EXIT_OK)
}
