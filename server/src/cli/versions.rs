//! `magrathea publish|versions|archive|unarchive NAME`: the versions of a project's workflow
//! (see [`magrathea_server::versions`]). They change or read documents only, never the store.
//!
//! Exit codes: 0 done; 2 no draft, an invalid draft (diagnostics on stderr, nothing changed)
//! or an unknown workflow; 1 the file system refused.

use magrathea_server::versions::{self, VersionError};

use super::output::{errln, outln};
use super::run::default_user;
use super::store::Project;
use super::{EXIT_FAILED, EXIT_INVALID, EXIT_OK, Location};

/// Arguments of `publish`, `archive` and `unarchive`.
#[derive(Debug, clap::Args)]
pub(crate) struct NameArgs {
    /// The workflow, `_vance/workflows/NAME.yaml` of the project.
    name: String,
    /// Print the reply as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// The exit code of a failed version operation, after reporting it on stderr.
fn failed(e: &VersionError) -> u8 {
    match e {
        VersionError::Invalid { name, diagnostics } => {
            for d in diagnostics {
                errln!("{d}");
            }
            errln!("error: [MAG-VR003] the draft of `{name}` is invalid; nothing was published");
            EXIT_INVALID
        }
        VersionError::Io { .. } => {
            errln!("error: {e}");
            EXIT_FAILED
        }
        _ => {
            errln!("error: {e}");
            EXIT_INVALID
        }
    }
}

/// `magrathea publish NAME`: validates the draft, keeps the live document in the history,
/// makes the draft live.
pub(crate) fn publish(loc: &Location, args: NameArgs) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    match versions::publish(project.docs(), &project.scope, &args.name, true) {
        // The diagnostics name the draft from the tree's root (as the API shows them); here
        // they name it as `validate` does, from the project directory given.
        Err(VersionError::Invalid { name, diagnostics }) => {
            let tree = format!("{}/{}/", project.scope.tenant, project.scope.project);
            let dir = project.dir.strip_prefix(".").unwrap_or(&project.dir);
            let diagnostics = diagnostics
                .into_iter()
                .map(|d| match d.strip_prefix(&tree) {
                    Some(rest) => dir.join(rest).display().to_string(),
                    None => d,
                })
                .collect();
            Ok(failed(&VersionError::Invalid { name, diagnostics }))
        }
        Ok(p) if args.json => {
            outln!("{}", serde_json::to_string(&p)?)?;
            Ok(EXIT_OK)
        }
        Ok(p) => {
            outln!("published {} version {}", p.name, p.version)?;
            if let Some(prev) = &p.previous {
                outln!(
                    "  previous: {prev} (kept in _vance/workflow-history/{}/)",
                    p.name
                )?;
            }
            for t in &p.triggers {
                outln!("  trigger: {t}")?;
            }
            for t in &p.removed_triggers {
                outln!(
                    "  removed trigger: {t} (the graph no longer makes it: its node was removed or changed)"
                )?;
            }
            Ok(EXIT_OK)
        }
        Err(e) => Ok(failed(&e)),
    }
}

/// `magrathea versions NAME`: the live document and its history, newest first.
pub(crate) fn list(loc: &Location, args: NameArgs) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    match versions::versions(project.docs(), &project.scope, &args.name) {
        Ok(v) if args.json => {
            outln!("{}", serde_json::to_string(&v)?)?;
            Ok(EXIT_OK)
        }
        Ok(v) => {
            let mut flags = Vec::new();
            if v.archived {
                flags.push("archived");
            }
            if v.draft {
                flags.push("has a draft");
            }
            if flags.is_empty() {
                outln!("{}", v.name)?;
            } else {
                outln!("{} ({})", v.name, flags.join(", "))?;
            }
            for e in &v.versions {
                outln!(
                    "  {:<7} {}  {:>7} bytes  {}",
                    e.state,
                    e.hash,
                    e.size,
                    e.at.as_deref().unwrap_or("-")
                )?;
            }
            Ok(EXIT_OK)
        }
        Err(e) => Ok(failed(&e)),
    }
}

/// `magrathea archive NAME` (`archived`) / `magrathea unarchive NAME`.
pub(crate) fn set_archived(loc: &Location, args: NameArgs, archived: bool) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    match versions::set_archived(
        project.docs(),
        &project.scope,
        &args.name,
        archived,
        &default_user(),
    ) {
        Ok(now) if args.json => {
            let reply = serde_json::json!({ "name": args.name, "archived": now });
            outln!("{reply}")?;
            Ok(EXIT_OK)
        }
        Ok(true) => {
            outln!(
                "archived {}: new starts are refused; running runs finish",
                args.name
            )?;
            Ok(EXIT_OK)
        }
        Ok(false) => {
            outln!("unarchived {}: starts are accepted", args.name)?;
            Ok(EXIT_OK)
        }
        Err(e) => Ok(failed(&e)),
    }
}
