//! `magrathea run NAME`: start a run and drive it until it settles.

use anyhow::Context;
use magrathea_core::{Entry, RunId, RunStatus};
use magrathea_server::http::runs::RunDto;
use serde_json::{Map, Value};

use super::backend::{Backend, Follower};
use super::output::{errln, exit_code, is_stdout_closed, print_run};
use super::progress::{Driven, drive};
use super::runtime::YamlStartError;
use super::store::Project;
use super::{EXIT_INTERRUPTED, EXIT_INVALID, Invalid, Location};

/// Arguments of `magrathea run`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Parameters: `--params` takes a JSON object; each `--param KEY=VALUE` then sets one key. When
the document declares KEY with `type: string`, VALUE is that string as typed. Otherwise VALUE
is read as JSON when it is a JSON number, boolean, null, object or array (`--param n=3`,
`--param tags='[\"a\"]'`), and is kept verbatim as a string otherwise (`--param url=https://x`,
`--param q='\"x\"'` is the 3-character string `\"x\"`). To pass a string such as \"3\" or
\"true\", use `--params '{\"n\": \"3\"}'`.

Exit codes: 0 DONE; 1 FAILED, CANCELLED or BLOCKED; 2 invalid document or parameters (nothing
started; diagnostics on stderr as `path:line:column: message`); 3 waiting on a gate, its own
(the run is WAITING) or one of a sub-run it waits for (the run itself stays RUNNING), or PAUSED
(by `magrathea runs pause` or the API; `magrathea runs resume` carries it on); 130 interrupted with Ctrl-C,
SIGTERM or SIGHUP (the run stays as journaled; `magrathea resume` carries it on).")]
pub(crate) struct RunArgs {
    /// The workflow: `_vance/workflows/NAME.yaml` of the project, else of its tenant.
    name: String,
    /// One parameter, `KEY=VALUE` (repeatable; overrides `--params`).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    param: Vec<String>,
    /// All parameters as a JSON object.
    #[arg(long, value_name = "JSON")]
    params: Option<String>,
    /// Who starts the run [default: $USER, else `cli`].
    #[arg(long, value_name = "WHO", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    started_by: Option<String>,
    /// Print the run as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Start the project's draft, `_vance/workflow-drafts/NAME.yaml`, instead of the live
    /// document (the run's version ends with `+draft`).
    #[arg(long)]
    draft: bool,
}

pub(crate) async fn run(loc: &Location, args: RunArgs) -> anyhow::Result<u8> {
    // Without its project directory no document can be found: nothing is started, exit 2
    // as for an unknown workflow.
    let project = Project::locate(loc).map_err(|e| super::Invalid(super::output::chain(&e)))?;
    let runtime = project.runtime();
    // `--param` values are typed by the document's `parameters:` where it declares the key.
    // (With the document's label, for naming a parameter's declaration in an error.)
    let (label, declared) = if args.draft {
        // A draft's own `parameters:` type its values.
        let path = project.docs().draft_path(&project.scope, &args.name);
        let declared = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| {
                magrathea_yaml::load_workflow(&args.name, &text, &Default::default()).ok()
            })
            .map(|loaded| loaded.doc.parameters)
            .unwrap_or_default();
        (
            super::validate::here(&project.docs().label(&path)),
            declared,
        )
    } else {
        match runtime.load(&project.scope, &args.name) {
            Ok((path, _, loaded)) => {
                // A valid document's warnings are said before it runs, as `validate` says
                // them (a misspelt placeholder, an outcome nothing routes).
                for d in loaded.warnings.iter() {
                    errln!("{}", super::validate::shown(d));
                }
                (
                    super::validate::here(&project.docs().label(&path)),
                    loaded.doc.parameters.clone(),
                )
            }
            Err(_) => (args.name.clone(), Default::default()),
        }
    };
    let params = parse_params(args.params.as_deref(), &args.param, &declared)?;
    let started_by = args.started_by.unwrap_or_else(default_user);
    // The document is resolved, validated and frozen here, from this project, whichever
    // process drives the run; before the store is opened, so that a refused start creates
    // no store.
    let complete = |req: magrathea_core::StartRequest| req.started_by(&started_by);
    let request = if args.draft {
        runtime.draft_request(&project.scope, &args.name, params, complete)
    } else {
        runtime.start_request(&project.scope, &args.name, params, complete)
    };
    let request = match request {
        Ok(request) => request,
        Err(YamlStartError::Invalid(diags)) => {
            for d in diags.iter() {
                errln!("{}", super::validate::shown(d));
            }
            errln!(
                "error: workflow `{}` is invalid; nothing was started",
                args.name
            );
            return Ok(EXIT_INVALID);
        }
        // Not UTF-8, or longer than the server reads: an invalid document too, located as its
        // diagnostics are.
        Err(YamlStartError::Document(
            e @ (magrathea_exec::DocumentError::NotUtf8 { .. }
            | magrathea_exec::DocumentError::TooLarge { .. }),
        )) => {
            errln!("{}", relabelled(e));
            errln!(
                "error: workflow `{}` is invalid; nothing was started",
                args.name
            );
            return Ok(EXIT_INVALID);
        }
        Err(e) => {
            if let YamlStartError::Params(errors) = &e {
                // Each problem at the parameter's declaration, as the document's diagnostics.
                for p in &errors.0 {
                    match p.name().and_then(|n| declared.get(n)) {
                        Some(d) => {
                            errln!("{label}:{}:{}: [MAG-YP001] {p}", d.span.line, d.span.column)
                        }
                        None => errln!("{label}: [MAG-YP001] {p}"),
                    }
                }
            }
            errln!("error: {e}");
            errln!("nothing was started");
            return Ok(EXIT_INVALID);
        }
    };
    let backend = project.backend(&runtime).await?;
    // Installed before the run starts and kept for following it: a Ctrl-C from here on
    // interrupts the command (exit 130), the run as journaled.
    super::progress::Interrupts::install()?.keep();
    let (run, follower) = backend
        .start(request)
        .await
        .with_context(|| format!("could not start workflow `{}`", args.name))?;
    finish(&project, &backend, run, follower, args.json).await
}

/// Follows `run` until it settles, prints it and returns its exit code.
pub(crate) async fn finish(
    project: &Project,
    backend: &Backend,
    run: RunId,
    follower: Follower,
    json: bool,
) -> anyhow::Result<u8> {
    finish_after(project, backend, run, follower, json, Vec::new()).await
}

/// [`finish`], with `earlier` the run's journal as read before the command acted on it: what
/// names the attempts in the progress when the journal can no longer be read (the store's
/// owner, a `magrathea run` of this very run, exits as soon as a cancel settles it).
pub(crate) async fn finish_after(
    project: &Project,
    backend: &Backend,
    run: RunId,
    follower: Follower,
    json: bool,
    earlier: Vec<Entry>,
) -> anyhow::Result<u8> {
    // Attempts journaled before this command followed the run (a paused run resumed, a run
    // answered) are named in the progress by their start.
    let journaled = match backend.journal(run).await {
        Ok(entries) if entries.len() >= earlier.len() => entries,
        _ => earlier,
    };
    match drive(run, follower, &journaled).await? {
        Driven::Settled(view) => {
            let pending = backend.pending(None).await.unwrap_or_default();
            let dto = match backend.run(run).await {
                Ok(Some(dto)) => dto,
                // The store's owner was a `magrathea run` whose own run this one is (or led
                // to): it exits as soon as that settles, so the run is read from the store,
                // which it has let go of.
                _ => match project.existing_backend().await {
                    Ok(Some(local)) => local.run(run).await.ok().flatten(),
                    _ => None,
                }
                .unwrap_or_else(|| RunDto::new(*view.clone(), None)),
            };
            // The run's status is the answer; a reader that closed stdout does not change it.
            match print_run(&dto, json, &pending) {
                Err(e) if !is_stdout_closed(&e) => return Err(e),
                _ => {}
            }
            Ok(match view.status {
                // Settled while RUNNING: it waits on people through its sub-runs.
                RunStatus::Running => super::EXIT_WAITING,
                status => exit_code(status),
            })
        }
        Driven::Interrupted => {
            // A script that asked for JSON still learns the run (to resume or cancel it), as
            // journaled; a store that does not answer at once is not waited for.
            if json
                && let Ok(Ok(Some(dto))) =
                    tokio::time::timeout(INTERRUPTED_READ, backend.run(run)).await
            {
                match print_run(&dto, true, &[]) {
                    Err(e) if !is_stdout_closed(&e) => return Err(e),
                    _ => {}
                }
            }
            Ok(EXIT_INTERRUPTED)
        }
    }
}

/// How long an interrupted `--json` command waits to read its run for stdout.
const INTERRUPTED_READ: std::time::Duration = std::time::Duration::from_secs(2);

/// Who is running the command.
pub(crate) fn default_user() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "cli".into())
}

/// `--params` (an object) with each `--param KEY=VALUE` set on top.
fn parse_params(
    json: Option<&str>,
    pairs: &[String],
    declared: &indexmap::IndexMap<String, magrathea_yaml::ParamSchema>,
) -> Result<Value, Invalid> {
    let mut params = match json {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Err(Invalid(
                    "--params must be a JSON object, e.g. '{\"pr_url\": \"…\"}'".into(),
                ));
            }
            Err(e) => return Err(Invalid(format!("--params is not valid JSON: {e}"))),
        },
    };
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return Err(Invalid(format!("--param `{pair}` must be KEY=VALUE")));
        };
        let value = match declared.get(key).map(|p| p.ty) {
            Some(magrathea_yaml::ParamType::String) => Value::String(value.to_string()),
            _ => param_value(value),
        };
        params.insert(key.to_string(), value);
    }
    Ok(Value::Object(params))
}

/// For a key the document does not declare as a string: a JSON number, boolean, null, object
/// or array as such; anything else (including a JSON string literal) verbatim as a string.
fn param_value(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::String(_)) | Err(_) => Value::String(text.to_string()),
        Ok(v) => v,
    }
}

/// A document refused before it was parsed, named relative to the working directory as the
/// document's diagnostics are.
pub(crate) fn relabelled(e: magrathea_exec::DocumentError) -> String {
    use magrathea_exec::DocumentError;
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .unwrap_or_default();
    let relative = |path: &std::path::Path| super::validate::relative(path, &cwd).into();
    match e {
        DocumentError::NotUtf8 { path, text } => DocumentError::NotUtf8 {
            path: relative(&path),
            text,
        },
        DocumentError::TooLarge { path } => DocumentError::TooLarge {
            path: relative(&path),
        },
        other => other,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use indexmap::IndexMap;
    use serde_json::json;

    #[test]
    fn param_values_are_json_when_they_parse_and_strings_otherwise() {
        assert_eq!(param_value("3"), json!(3));
        assert_eq!(param_value("true"), json!(true));
        assert_eq!(param_value("null"), json!(null));
        assert_eq!(param_value("[1,2]"), json!([1, 2]));
        assert_eq!(param_value("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(param_value("\"3\""), json!("\"3\""));
        assert_eq!(param_value("https://x/y"), json!("https://x/y"));
        assert_eq!(param_value("hello world"), json!("hello world"));
        assert_eq!(param_value(""), json!(""));
    }

    #[test]
    fn params_merge_with_param_overriding() {
        let none = IndexMap::new();
        let p = parse_params(
            Some(r#"{"a": 1, "b": "x"}"#),
            &["b=y".into(), "c=2".into(), "d=a=b".into()],
            &none,
        )
        .unwrap();
        assert_eq!(p, json!({"a": 1, "b": "y", "c": 2, "d": "a=b"}));
        assert!(parse_params(Some("[1]"), &[], &none).is_err());
        assert!(parse_params(Some("{"), &[], &none).is_err());
        assert!(parse_params(None, &["novalue".into()], &none).is_err());
        assert!(parse_params(None, &["=v".into()], &none).is_err());
    }

    #[test]
    fn a_param_declared_as_string_stays_the_string_typed() {
        let mut declared = IndexMap::new();
        declared.insert(
            "version".to_string(),
            magrathea_yaml::ParamSchema {
                name: "version".into(),
                ty: magrathea_yaml::ParamType::String,
                required: false,
                default: None,
                description: None,
                enum_values: None,
                span: magrathea_yaml::Span { line: 1, column: 1 },
            },
        );
        let p = parse_params(None, &["version=1".into(), "n=1".into()], &declared).unwrap();
        assert_eq!(p, json!({"version": "1", "n": 1}));
    }
}
