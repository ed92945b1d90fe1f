//! `magrathea graph NAME`: a workflow's state graph, each transition labelled with its
//! outcome (`on:`), error kind (`catch:`) or condition (`if …` / `else`); `--format reactflow`
//! prints the editor's graph JSON, as `GET …/workflows/{name}/graph` serves it, placed by the
//! project's layout file `_vance/workflows/<name>.layout.json` when there is one.
//! `magrathea graph import FILE --name NAME` turns a Friday editor graph into the draft
//! `_vance/workflow-drafts/NAME.yaml`.

use magrathea_server::editor_graph::{self, Layout};
use magrathea_server::versions;
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
    after_help = "Exit codes: 0 printed (or imported); 2 no such workflow, or an invalid \
                  document, layout file or graph to import.\n\
                  `magrathea graph import FILE --name NAME` writes a Friday editor graph as the \
                  draft _vance/workflow-drafts/NAME.yaml (series-parallel graphs only)."
)]
pub(crate) struct GraphArgs {
    /// The workflow (resolved like `run`: project, then tenant), or `import` (a workflow
    /// named `import` is drawn when no FILE follows).
    name: String,
    /// With `import`: the editor graph JSON file.
    file: Option<std::path::PathBuf>,
    /// With `import`: the draft's name.
    #[arg(long = "name")]
    draft: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "mermaid", ignore_case = true)]
    format: Format,
}

/// `graph import FILE --name NAME`: the draft of an editor graph.
fn import(loc: &Location, file: &std::path::Path, draft: Option<&str>) -> anyhow::Result<u8> {
    let Some(name) = draft.filter(|n| {
        magrathea_exec::check_name(n).is_ok()
            && *n != magrathea_server::versions::RESERVED_WORKFLOW_NAME
    }) else {
        errln!(
            "graph import needs --name NAME (ASCII letters, digits, '.', '_' and '-', not \
             starting with '.', no '..'; not `{}`, the runs route's name)",
            magrathea_server::versions::RESERVED_WORKFLOW_NAME
        );
        return Ok(EXIT_INVALID);
    };
    let text = match std::fs::read(file).map(String::from_utf8) {
        Ok(Ok(text)) => text,
        Ok(Err(e)) => {
            errln!(
                "[MAG-GR009] {}: {}",
                file.display(),
                magrathea_exec::NotUtf8Text::of(&e)
            );
            return Ok(EXIT_INVALID);
        }
        Err(e) => {
            errln!("error: cannot read the graph {}: {e}", file.display());
            return Ok(EXIT_INVALID);
        }
    };
    // A byte-order mark before the JSON (Windows tools write one) is no part of it.
    let json = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    let graph: serde_json::Value = match serde_json::from_str(json) {
        Ok(g) => g,
        Err(e) => {
            errln!("[MAG-GR009] {} is not JSON: {e}", file.display());
            return Ok(EXIT_INVALID);
        }
    };
    let doc = match editor_graph::import(&graph) {
        Ok(doc) => doc,
        Err(e) => {
            errln!("{}: {e}", file.display());
            return Ok(EXIT_INVALID);
        }
    };
    let triggers = match editor_graph::trigger_documents(&graph, name) {
        Ok(t) => t,
        Err(e) => {
            errln!("{}: {e}", file.display());
            return Ok(EXIT_INVALID);
        }
    };
    if let Some(cycle) = editor_graph::first_cycle(&graph) {
        errln!(
            "warning: the graph has a cycle ({}): the draft loops there, as a document may; a \
             run leaves the loop only by another route or its bounds",
            cycle.join(" -> ")
        );
    }
    let yaml = serde_yaml_ng::to_string(&doc)?;
    let label = format!("{name}.yaml (imported)");
    let loaded = match load_workflow(&label, &yaml, &LoadOptions::default()) {
        Ok(loaded) => loaded,
        Err(diags) => {
            for d in diags.iter() {
                errln!("{}", super::validate::shown(d));
            }
            return Ok(EXIT_INVALID);
        }
    };
    // An edge of a node in the design's terms for an outcome the node never ends with would
    // leave the node it leads to unreachable (an action's `approve`, an approval's `true`).
    let design = editor_graph::design_node_ids(&graph);
    let never: Vec<&magrathea_yaml::Diagnostic> = loaded
        .warnings
        .iter()
        .filter(|d| d.code == magrathea_yaml::Code::ImpossibleOutcome)
        .filter(|d| {
            d.message
                .split_once("state '")
                .and_then(|(_, rest)| rest.split_once('\''))
                .is_some_and(|(state, _)| design.iter().any(|n| n == state))
        })
        .collect();
    if !never.is_empty() {
        for d in never {
            let what = d.message.split_once("] ").map_or(&*d.message, |(_, m)| m);
            errln!(
                "{}: [MAG-GR010] an edge's branch is no outcome of its source node, so the \
                 node it leads to would never run: {what}",
                file.display()
            );
        }
        return Ok(EXIT_INVALID);
    }
    for d in loaded.warnings.iter() {
        errln!("{}", super::validate::shown(d));
    }
    let project = Project::locate(loc).map_err(|e| super::Invalid(super::output::chain(&e)))?;
    let dir = project
        .docs()
        .project_dir(&project.scope)
        .join("_vance")
        .join("workflow-drafts");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{name}.yaml"));
    let triggers_dir = versions::draft_triggers_dir(project.docs(), &project.scope, name);
    // Left by a draft removed by hand, they would go live with this one: say so instead.
    let leftover = std::fs::read_dir(&triggers_dir).is_ok_and(|mut d| d.next().is_some());
    if leftover {
        errln!(
            "{} exists already (the trigger documents of an earlier draft); remove it, or import \
             under another --name",
            triggers_dir.display()
        );
        return Ok(EXIT_INVALID);
    }
    // A draft is someone's work in progress: an import never replaces one.
    let mut draft_file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            errln!(
                "the draft {} exists already; publish or remove it, or import under another --name",
                path.display()
            );
            return Ok(EXIT_INVALID);
        }
        Err(e) => return Err(e.into()),
    };
    std::io::Write::write_all(&mut draft_file, yaml.as_bytes())?;
    out!("{}\n", path.display())?;
    // Where the editor put the nodes goes live with the draft, as the workflow's layout file:
    // export, import, publish and export again give the graph as it was drawn.
    let states: Vec<String> = doc
        .get("states")
        .and_then(serde_yaml_ng::Value::as_mapping)
        .map(|m| {
            m.keys()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let layout_path = versions::draft_layout_path(project.docs(), &project.scope, name);
    match Layout::of_imported_graph(&graph, &states) {
        Some(layout) => {
            layout.write(&layout_path, &layout_path.display().to_string())?;
            out!("{}\n", layout_path.display())?;
        }
        // One left by a draft removed by hand is not this graph's.
        None => match std::fs::remove_file(&layout_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        },
    }
    // Beside the draft, where they start nothing: publishing makes them live, and, being all
    // the graph's triggers, removes those of nodes an earlier graph had. A graph without
    // trigger nodes (an exported workflow has none) carries no directory and leaves the live
    // triggers as they are: an export, edited and imported again, keeps its schedules.
    let has_trigger_nodes = graph
        .get("nodes")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|nodes| {
            nodes.iter().any(|n| {
                n.pointer("/data/type").and_then(serde_json::Value::as_str) == Some("trigger")
            })
        });
    if has_trigger_nodes {
        std::fs::create_dir_all(&triggers_dir)?;
    }
    for t in &triggers {
        let dir = triggers_dir.join(t.dir);
        std::fs::create_dir_all(&dir)?;
        let file = dir.join(format!("{}.yaml", t.name));
        std::fs::write(&file, &t.text)?;
        out!("{}\n", file.display())?;
    }
    Ok(EXIT_OK)
}

/// Whether the project (or its tenant) has a workflow named `name`.
fn has_workflow(loc: &Location, name: &str) -> bool {
    Project::locate(loc).is_ok_and(|p| p.docs().workflow(&p.scope, name).is_ok())
}

pub(crate) fn graph(loc: &Location, args: GraphArgs) -> anyhow::Result<u8> {
    match (&args.file, args.name.as_str()) {
        (Some(file), "import") => return import(loc, file, args.draft.as_deref()),
        // A workflow named `import` is drawn like any other.
        (None, "import") if !has_workflow(loc, "import") => {
            errln!("graph import needs the graph's FILE: magrathea graph import FILE --name NAME");
            return Ok(EXIT_INVALID);
        }
        (Some(_), _) => {
            errln!("a FILE is for `graph import FILE --name NAME` only");
            return Ok(EXIT_INVALID);
        }
        (None, _) if args.draft.is_some() => {
            errln!("--name is for `graph import FILE --name NAME` only");
            return Ok(EXIT_INVALID);
        }
        (None, _) => {}
    }
    let project = Project::locate(loc).map_err(|e| super::Invalid(super::output::chain(&e)))?;
    let (path, text) = match project.docs().workflow(&project.scope, &args.name) {
        Ok(found) => found,
        // Not UTF-8, or longer than the server reads: named as `run` and `validate` name it.
        Err(
            e @ (magrathea_exec::DocumentError::NotUtf8 { .. }
            | magrathea_exec::DocumentError::TooLarge { .. }),
        ) => {
            errln!("{}", super::run::relabelled(e));
            return Ok(EXIT_INVALID);
        }
        Err(e) => {
            // No such document: an invalid request, as for `versions` and `run`.
            errln!("error: {e}");
            return Ok(EXIT_INVALID);
        }
    };
    let label = path.display().to_string();
    let loaded = match load_workflow(&label, &text, &LoadOptions::default()) {
        Ok(loaded) => loaded,
        Err(diags) => {
            for d in diags.iter() {
                errln!("{}", super::validate::shown(d));
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
