//! `magrathea graph NAME`: a workflow's state graph, each transition labelled with its
//! outcome (`on:`), error kind (`catch:`) or condition (`if …` / `else`); `--format reactflow`
//! prints the editor's graph JSON, as `GET …/workflows/{name}/graph` serves it, placed by the
//! project's layout file `_vance/workflows/<name>.layout.json` when there is one.

use magrathea_server::editor_graph::{self, Layout};
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
    /// The editor's graph: React Flow JSON with node positions.
    Reactflow,
}

/// Arguments of `magrathea graph`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 printed; 1 workflow not found; 2 invalid document or layout file."
)]
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
    let loaded = match load_workflow(&label, &text, &LoadOptions::default()) {
        Ok(loaded) => loaded,
        Err(diags) => {
            for d in diags.iter() {
                errln!("{d}");
            }
            return Ok(EXIT_INVALID);
        }
    };
    let graph = loaded.plan.graph();
    let printed = match args.format {
        Format::Mermaid => graph.to_mermaid(),
        Format::Dot => graph.to_dot(),
        Format::Reactflow => {
            let file =
                editor_graph::layout_path(&project.docs().project_dir(&project.scope), &args.name);
            let layout = match Layout::read(&file, &file.display().to_string()) {
                Ok(layout) => layout,
                Err(e) => {
                    errln!("{e}");
                    return Ok(EXIT_INVALID);
                }
            };
            let json = editor_graph::export(&loaded, layout.as_ref());
            format!("{}\n", serde_json::to_string_pretty(&json)?)
        }
    };
    out!("{printed}")?;
    Ok(EXIT_OK)
}
