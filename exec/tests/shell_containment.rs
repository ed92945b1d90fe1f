//! What contains a shell step: a clean environment, the Landlock sandbox of served trees,
//! workspaces kept inside the project (for script steps too, with no settings file read as a
//! script), the default timeout, and the shell lane that keeps a
//! slow shell step from holding up script steps. Each test runs real processes through the
//! executors' own API, as a code workflow's journaled tasks.

#![cfg(all(feature = "shell", feature = "script"))]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use magrathea_core::{Engine, RunId, RunStatus, StartRequest, WorkflowRegistration};
use magrathea_exec::{
    DocumentSource, Executors, RunData, Scope, ScriptInput, ShellInput, ShellOutput,
};
use serde_json::{Map, Value, json};

/// A token that must never reach a shell step of another scope.
const TOKEN: &str = "tok-7f3a9c-never-leak";

struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
    engine: Engine,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A document root with `_auth/tokens.yaml`, tenant `globex`, and project `acme/shop` with
/// `project` settings and tenant settings `tenant`; served or not. The engine's workflow `sh`
/// runs the [`ShellInput`] it is started with, `js` the [`ScriptInput`]; both answer
/// `{kind, output}`.
async fn tree(served: bool, tenant: &str, project: &str) -> Tree {
    tree_protecting(served, tenant, project, None).await
}

/// [`tree`], with `store` protected as the server's store outside the tree.
async fn tree_protecting(served: bool, tenant: &str, project: &str, store: Option<&Path>) -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(
        &root.join("_auth/tokens.yaml"),
        &format!("tokens:\n  - token: {TOKEN}\n    tenant: acme\n"),
    );
    write(
        &root.join("globex/shop/_vance/workflows/x.yaml"),
        &format!("# {TOKEN}\n"),
    );
    write(&root.join("acme/shop/_vance/settings.yaml"), project);
    // Served trees run shell and script steps only where the tenant allows them.
    let tenant = format!("execution:\n  shellTask: true\n  scriptTask: true\n{tenant}");
    write(&root.join("acme/_tenant/_vance/settings.yaml"), &tenant);
    write(
        &root.join("acme/shop/_vance/scripts/quick.js"),
        "return { quick: true };",
    );
    let mut docs = DocumentSource::new(&root);
    if served {
        docs = docs.served();
    }
    if let Some(store) = store {
        docs = docs.protect(store);
    }
    let executors = Executors::new(docs);
    let scope = Scope::new("acme", "shop");
    let data = Arc::new(RunData::new(json!({ "who": "ford" }), Map::new()));
    let (e1, s1, d1) = (executors.clone(), scope.clone(), data.clone());
    let sh = WorkflowRegistration::new("sh", "", move |ctx, input: Value| {
        let (executors, scope, data) = (e1.clone(), s1.clone(), d1.clone());
        async move {
            let input: ShellInput = serde_json::from_value(input).unwrap();
            let call = executors
                .call(input)
                .scope(&scope)
                .label("step")
                .run_data(data);
            Ok(answer(ctx.task_with(call.into_task_call()).await))
        }
    });
    let js = script_workflow("js", &executors, scope, data.clone());
    let js_globex = script_workflow("js-globex", &executors, Scope::new("globex", "shop"), data);
    let engine = Engine::builder()
        .in_memory()
        .workflow(sh)
        .workflow(js)
        .workflow(js_globex)
        .build()
        .await
        .unwrap();
    Tree {
        _dir: dir,
        root,
        engine,
    }
}

/// The code workflow `name`: runs the [`ScriptInput`] it is started with in `scope`, and
/// answers `{kind, output}`.
fn script_workflow(
    name: &str,
    executors: &Executors,
    scope: Scope,
    data: Arc<RunData>,
) -> WorkflowRegistration {
    let executors = executors.clone();
    WorkflowRegistration::new(name, "", move |ctx, input: Value| {
        let (executors, scope, data) = (executors.clone(), scope.clone(), data.clone());
        async move {
            let input: ScriptInput = serde_json::from_value(input).unwrap();
            let call = executors
                .call(input)
                .scope(&scope)
                .label("step")
                .run_data(data);
            Ok(answer(ctx.task_with(call.into_task_call()).await))
        }
    })
}

fn answer(result: Result<Value, magrathea_core::TaskError>) -> Value {
    match result {
        Ok(output) => json!({ "kind": "success", "output": output }),
        Err(e) => json!({ "kind": e.kind, "output": e.output }),
    }
}

impl Tree {
    /// Starts `runs` runs of acme's script `spin.js`, which keeps its thread busy for `ms`
    /// and returns when it started and ended (`{start, end}`, milliseconds).
    async fn spin(&self, ms: u64, runs: usize) -> Vec<RunId> {
        write(
            &self.root.join("acme/shop/_vance/scripts/spin.js"),
            &format!(
                "const start = Date.now(); while (Date.now() - start < {ms}) {{}} \
                 return {{ start, end: Date.now() }};"
            ),
        );
        let mut started = Vec::new();
        for _ in 0..runs {
            let input = ScriptInput::new("_vance/scripts/spin.js").timeout(Duration::from_secs(60));
            started.push(self.start("js", serde_json::to_value(input).unwrap()).await);
        }
        started
    }

    async fn start(&self, workflow: &str, input: Value) -> RunId {
        self.engine
            .start(StartRequest::code(workflow, input))
            .await
            .unwrap()
    }

    async fn finish(&self, run: RunId) -> Value {
        let view = tokio::time::timeout(Duration::from_secs(60), self.engine.wait(run))
            .await
            .expect("the run ends")
            .unwrap();
        assert_eq!(view.status, RunStatus::Done, "{view:?}");
        view.result.unwrap()
    }

    /// Runs `input` to its end: `(kind, output)`.
    async fn shell(&self, input: ShellInput) -> (String, Value) {
        let run = self.start("sh", serde_json::to_value(input).unwrap()).await;
        let result = self.finish(run).await;
        (
            result["kind"].as_str().unwrap().to_string(),
            result["output"].clone(),
        )
    }

    /// Runs `command` and returns its output (any outcome).
    async fn output(&self, command: &str) -> ShellOutput {
        let (_, output) = self.shell(ShellInput::new(command)).await;
        ShellOutput::of_failure(&output).unwrap_or_else(|| panic!("no shell output: {output}"))
    }
}

fn var<'a>(env: &'a str, name: &str) -> Option<&'a str> {
    env.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
}

#[tokio::test]
async fn a_shell_step_sees_none_of_the_servers_environment_but_what_the_tenant_passes() {
    // Cargo sets this in every test process: it stands for the server's own secrets.
    let secret = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let t = tree(true, "", "").await;
    let env = t.output("env").await.stdout;
    assert_eq!(var(&env, "CARGO_MANIFEST_DIR"), None, "{env}");
    assert!(!env.contains(&secret), "{env}");
    assert_eq!(
        var(&env, "HOME"),
        Some(t.root.join("acme/shop").to_str().unwrap())
    );
    assert_eq!(
        var(&env, "PATH"),
        Some(magrathea_exec::shell::env::DEFAULT_PATH)
    );
    assert!(var(&env, "LANG").is_some(), "{env}");
    assert_eq!(var(&env, "MAGRATHEA_PARAM_WHO"), Some("ford"));
    let tmpdir = var(&env, "TMPDIR").expect("a private TMPDIR");
    assert!(
        !Path::new(tmpdir).exists(),
        "the private TMPDIR is removed after the step"
    );

    let t = tree(
        true,
        "shell:\n  passEnv: [CARGO_MANIFEST_DIR, NOT_SET_ANYWHERE]\n  env: { CI: \"yes\" }\n",
        "",
    )
    .await;
    let env = t.output("env").await.stdout;
    assert_eq!(var(&env, "CARGO_MANIFEST_DIR"), Some(secret.as_str()));
    assert_eq!(var(&env, "NOT_SET_ANYWHERE"), None);
    assert_eq!(var(&env, "CI"), Some("yes"));
}

#[tokio::test]
async fn a_sandboxed_step_cannot_read_auth_or_another_tenant_but_uses_its_workspace() {
    let t = tree(true, "", "").await;
    for command in [
        "cat ../../_auth/tokens.yaml",
        "ls ../../globex/",
        "cat ../../globex/shop/_vance/workflows/x.yaml",
        "echo x > ../lab.txt",
    ] {
        let out = t.output(command).await;
        assert_ne!(out.exit_code, Some(0), "{command}: {out:?}");
        assert!(
            out.stderr.contains("Permission denied"),
            "{command}: {out:?}"
        );
        assert!(!out.stdout.contains(TOKEN), "{command}: {out:?}");
    }
    assert!(!t.root.join("acme/lab.txt").exists());
    let out = t
        .output("echo made > made.txt && cat made.txt && head -c 4 /usr/bin/env | tail -c 3 && echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"")
        .await;
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "made\nELFtmp\n");
    assert!(t.root.join("acme/shop/made.txt").exists());
}

/// A device node made in the workspace would open whatever device it names (the kernel's
/// log, a terminal, a disk) with the server's rights: the sandbox makes none, also as root;
/// a named pipe or a socket is an ordinary file of the workspace.
#[tokio::test]
async fn a_sandboxed_step_cannot_make_device_nodes() {
    let t = tree(true, "", "").await;
    for command in ["mknod kmsg c 1 11", "mknod disk b 7 0"] {
        let out = t.output(command).await;
        assert_ne!(out.exit_code, Some(0), "{command}: {out:?}");
    }
    assert!(!t.root.join("acme/shop/kmsg").exists());
    assert!(!t.root.join("acme/shop/disk").exists());
    let out = t.output("mkfifo pipe && test -p pipe").await;
    assert_eq!(out.exit_code, Some(0), "{out:?}");
}

#[tokio::test]
async fn the_sandbox_follows_the_tenants_setting_and_the_local_default_is_off() {
    // Local (not served): off by default, so the owner's own files are readable.
    let t = tree(false, "", "").await;
    let out = t.output("cat ../../_auth/tokens.yaml").await;
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    // Turned on by the tenant, also locally.
    let t = tree(false, "shell:\n  sandbox: on\n", "").await;
    let out = t.output("cat ../../_auth/tokens.yaml").await;
    assert_ne!(out.exit_code, Some(0), "{out:?}");
    // Turned off by the tenant for a served tree.
    let t = tree(true, "shell:\n  sandbox: off\n", "").await;
    let out = t.output("cat ../../_auth/tokens.yaml").await;
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    // Extra paths the tenant names: read-only, or writable.
    let shared = tempfile::tempdir().unwrap();
    let shared = shared.path().canonicalize().unwrap();
    std::fs::write(shared.join("tool.txt"), "shared tool\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let cache = cache.path().canonicalize().unwrap();
    let t = tree(
        true,
        &format!(
            "shell:\n  readPaths: [{}]\n  writePaths: [{}]\n",
            shared.display(),
            cache.display()
        ),
        "",
    )
    .await;
    let out = t
        .output(&format!(
            "cat {0}/tool.txt && echo c > {1}/c && cat {1}/c",
            shared.display(),
            cache.display()
        ))
        .await;
    assert_eq!(out.stdout, "shared tool\nc\n", "{out:?}");
    let out = t.output(&format!("echo x > {}/w", shared.display())).await;
    assert!(out.stderr.contains("Permission denied"), "{out:?}");
}

#[tokio::test]
async fn a_served_tree_its_sandbox_would_let_a_step_read_refuses_shell_steps() {
    // The tenant's extra read path holds the whole document root (Landlock only grants: a
    // subtree of a readable directory cannot be hidden again).
    let probe = tree(true, "", "").await;
    let above = probe.root.parent().unwrap().to_path_buf();
    let t = tree(
        true,
        &format!("shell:\n  readPaths: [{}]\n", above.display()),
        "",
    )
    .await;
    let (kind, output) = t
        .shell(ShellInput::new("cat ../../_auth/tokens.yaml; echo ran > ran.txt").dir("workspace"))
        .await;
    assert_eq!(kind, "technical_error", "{output}");
    let error = output["error"].as_str().unwrap();
    assert!(error.starts_with("[MAG-SH014]"), "{error}");
    assert!(error.contains(above.to_str().unwrap()), "{error}");
    assert!(!output.to_string().contains(TOKEN), "{output}");
    assert!(!t.root.join("acme/shop/ran.txt").exists(), "the step ran");
    // Not served (the owner's own command, sandbox turned on): the root is the owner's.
    let t = tree(
        false,
        &format!(
            "shell:\n  sandbox: on\n  readPaths: [{}]\n",
            above.display()
        ),
        "",
    )
    .await;
    let out = t.output("echo ran").await;
    assert_eq!(out.stdout, "ran\n", "{out:?}");
    // The server's store outside the tree, beneath a path the sandbox reads: refused too.
    let store = tempfile::tempdir().unwrap();
    let store = store.path().canonicalize().unwrap();
    let t = tree_protecting(
        true,
        &format!("shell:\n  readPaths: [{}]\n", store.display()),
        "",
        Some(&store),
    )
    .await;
    let (kind, output) = t
        .shell(ShellInput::new("echo ran > ran.txt").dir("workspace"))
        .await;
    assert_eq!(kind, "technical_error", "{output}");
    assert!(
        output["error"].as_str().unwrap().starts_with("[MAG-SH014]"),
        "{output}"
    );
    assert!(!t.root.join("acme/shop/ran.txt").exists(), "the step ran");
}

#[tokio::test]
async fn a_tenants_shell_paths_reach_no_other_tenant_nor_auth_nor_the_store() {
    // The tenant's administrator writes its settings, but the rest of the tree is not
    // theirs to grant: another tenant, `_auth/`, and a link of their own that leads there.
    // Nor the tenant's own `_tenant/`, whose settings decide the sandbox: a step that could
    // write them (through a link its project holds, say) could switch the sandbox off.
    for (grant, setting) in [
        ("globex/shop", "readPaths"),
        ("_auth", "readPaths"),
        ("globex", "writePaths"),
        ("acme/into-globex", "readPaths"),
        ("acme/_tenant/_vance", "writePaths"),
        ("acme", "writePaths"),
        ("acme/shop/out", "writePaths"),
    ] {
        let t = tree(true, "", "").await;
        std::os::unix::fs::symlink(t.root.join("globex"), t.root.join("acme/into-globex")).unwrap();
        std::os::unix::fs::symlink(t.root.join("acme/_tenant"), t.root.join("acme/shop/out"))
            .unwrap();
        let path = t.root.join(grant);
        write(
            &t.root.join("acme/_tenant/_vance/settings.yaml"),
            &format!(
                "execution:\n  shellTask: true\nshell:\n  {setting}: [{}]\n",
                path.display()
            ),
        );
        let (kind, output) = t
            .shell(
                ShellInput::new(format!(
                    "cat {0}/_vance/workflows/x.yaml {0}/tokens.yaml; echo ran > ran.txt",
                    path.display()
                ))
                .dir("workspace"),
            )
            .await;
        assert_eq!(kind, "technical_error", "{grant}: {output}");
        let error = output["error"].as_str().unwrap();
        assert!(error.starts_with("[MAG-SH015]"), "{grant}: {error}");
        assert!(error.contains(grant), "{grant}: {error}");
        assert!(!output.to_string().contains(TOKEN), "{grant}: {output}");
        assert!(
            !t.root.join("acme/shop/ran.txt").exists(),
            "{grant}: the step ran"
        );
    }
    // A path inside the tenant's own directory is the tenant's to grant.
    let t = tree(true, "", "").await;
    write(&t.root.join("acme/shared/tool.txt"), "shared tool\n");
    let shared = t.root.join("acme/shared");
    write(
        &t.root.join("acme/_tenant/_vance/settings.yaml"),
        &format!(
            "execution:\n  shellTask: true\nshell:\n  readPaths: [{}]\n",
            shared.display()
        ),
    );
    let out = t
        .output(&format!("cat {}/tool.txt", shared.display()))
        .await;
    assert_eq!(out.stdout, "shared tool\n", "{out:?}");
    // The server's store, protected outside the tree, named by a write path: refused.
    let store = tempfile::tempdir().unwrap();
    let store = store.path().canonicalize().unwrap();
    let t = tree_protecting(
        true,
        &format!(
            "shell:\n  writePaths: [{}]\n",
            store.join("inner").display()
        ),
        "",
        Some(&store),
    )
    .await;
    std::fs::create_dir_all(store.join("inner")).unwrap();
    let (kind, output) = t
        .shell(ShellInput::new("echo ran > ran.txt").dir("workspace"))
        .await;
    assert_eq!(kind, "technical_error", "{output}");
    assert!(
        output["error"].as_str().unwrap().starts_with("[MAG-SH015]"),
        "{output}"
    );
    // Nor is a workspace in the store, whatever roots the tenant lists.
    let t = tree_protecting(
        true,
        &format!("shell:\n  workspaceRoots: [{}]\n", store.display()),
        &format!("workspaces:\n  inner: {}\n", store.join("inner").display()),
        Some(&store),
    )
    .await;
    let (kind, output) = t
        .shell(ShellInput::new("echo ran > ran.txt").dir("inner"))
        .await;
    assert_eq!(kind, "technical_error", "{output}");
    assert!(
        output["error"].as_str().unwrap().starts_with("[MAG-SH011]"),
        "{output}"
    );
    assert!(!store.join("inner/ran.txt").exists(), "the step ran");
    write(&store.join("inner/s.js"), "return 1;");
    let (kind, output) = script(&t, ScriptInput::new("s.js").in_workspace("inner")).await;
    assert_eq!(kind, "technical_error", "{output}");
    assert!(
        output["error"].as_str().unwrap().starts_with("[MAG-JS018]"),
        "{output}"
    );
}

/// Runs the script `input` in `t` to its end: `(kind, output)`.
async fn script(t: &Tree, input: ScriptInput) -> (String, Value) {
    let run = t.start("js", serde_json::to_value(input).unwrap()).await;
    let result = t.finish(run).await;
    (
        result["kind"].as_str().unwrap().to_string(),
        result["output"].clone(),
    )
}

#[tokio::test]
async fn a_served_script_stays_in_its_project_and_never_reads_a_settings_file() {
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    let steal = format!("return \"{TOKEN}\";");
    std::fs::write(outside.join("steal.js"), &steal).unwrap();
    let project = format!(
        "workspaces:\n  out: {}\n  up: ../../globex/shop\n# {TOKEN}\n",
        outside.display()
    );
    let t = tree(true, "", &project).await;
    write(&t.root.join("globex/shop/steal.js"), &steal);
    // Scripts run in the server's process: a workspace outside the project is refused.
    for dir in ["out", "up"] {
        let (kind, output) = script(&t, ScriptInput::new("steal.js").in_workspace(dir)).await;
        assert_eq!(kind, "technical_error", "{dir}: {output}");
        let error = output["error"].as_str().unwrap();
        assert!(error.starts_with("[MAG-JS018]"), "{error}");
        assert!(!output.to_string().contains(TOKEN), "{output}");
    }
    // The settings files hold secrets: no script is read from them, by either source.
    for input in [
        ScriptInput::new("_vance/settings.yaml"),
        ScriptInput::new("_vance/settings.yaml").in_workspace("workspace"),
    ] {
        let (kind, output) = script(&t, input).await;
        assert_eq!(kind, "technical_error", "{output}");
        assert!(
            output["error"].as_str().unwrap().starts_with("[MAG-JS019]"),
            "{output}"
        );
        assert!(!output.to_string().contains(TOKEN), "{output}");
    }
    // The owner's own command may name any directory as a workspace.
    let t = tree(false, "", &project).await;
    let (kind, output) = script(&t, ScriptInput::new("steal.js").in_workspace("out")).await;
    assert_eq!((kind.as_str(), &output), ("success", &json!(TOKEN)));
}

#[tokio::test]
async fn a_served_workspace_outside_the_project_is_refused() {
    let t = tree(
        true,
        "",
        "workspaces:\n  escape: /\n  up: ..\n  inside: build\n",
    )
    .await;
    std::fs::create_dir_all(t.root.join("acme/shop/build")).unwrap();
    for name in ["escape", "up"] {
        let (kind, output) = t.shell(ShellInput::new("ls").dir(name)).await;
        assert_eq!(kind, "technical_error", "{name}: {output}");
        let error = output["error"].as_str().unwrap();
        assert!(error.starts_with("[MAG-SH011]"), "{error}");
        // The output every shell step has (reference §3.2), though nothing ran.
        assert_eq!(output["status"], "FAILED", "{output}");
        assert_eq!(output["exitCode"], serde_json::Value::Null, "{output}");
        assert_eq!(output["stdout"], "", "{output}");
        assert_eq!(output["stderr"], error, "{output}");
        assert!(output["durationMs"].is_u64(), "{output}");
        assert!(error.contains("shell.workspaceRoots"), "{error}");
        assert!(!error.contains(t.root.to_str().unwrap()), "{error}");
    }
    let (kind, output) = t.shell(ShellInput::new("pwd").dir("inside")).await;
    assert_eq!(kind, "success", "{output}");

    // The tenant may allow a root outside the project.
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();
    let t = tree(
        true,
        &format!("shell:\n  workspaceRoots: [{}]\n", outside.display()),
        &format!("workspaces:\n  build: {}\n", outside.display()),
    )
    .await;
    let (kind, output) = t
        .shell(ShellInput::new("echo x > f && cat f").dir("build"))
        .await;
    assert_eq!(kind, "success", "{output}");

    // A root inside the document tree never opens it beyond the project: with the tenant's
    // directory as a root, the tenant's own settings (`_tenant/`) are still no workspace.
    let t = tree(true, "", "").await;
    let tenant_dir = t.root.join("acme");
    write(
        &tenant_dir.join("_tenant/_vance/settings.yaml"),
        &format!(
            "execution:\n  shellTask: true\n  scriptTask: true\nshell:\n  workspaceRoots: [{}]\n",
            tenant_dir.display()
        ),
    );
    write(
        &t.root.join("acme/shop/_vance/settings.yaml"),
        "workspaces:\n  admin: ../_tenant/_vance\n",
    );
    let (kind, output) = t
        .shell(ShellInput::new("echo 'shell: { sandbox: off }' >> settings.yaml").dir("admin"))
        .await;
    assert_eq!(kind, "technical_error", "{output}");
    assert!(
        output["error"].as_str().unwrap().starts_with("[MAG-SH011]"),
        "{output}"
    );
    let (kind, output) = script(&t, ScriptInput::new("settings.yaml").in_workspace("admin")).await;
    assert_eq!(kind, "technical_error", "{output}");
    assert!(
        output["error"].as_str().unwrap().starts_with("[MAG-JS018]"),
        "{output}"
    );
    let settings =
        std::fs::read_to_string(tenant_dir.join("_tenant/_vance/settings.yaml")).unwrap();
    assert!(!settings.contains("sandbox"), "{settings}");
}

#[tokio::test]
async fn a_step_without_a_timeout_ends_at_the_tenants_default() {
    let t = tree(true, "shell:\n  defaultTimeoutSeconds: 1\n", "").await;
    let (kind, output) = t.shell(ShellInput::new("sleep 30")).await;
    assert_eq!(kind, "timeout", "{output}");
    // A project may not raise it.
    let t = tree(
        true,
        "shell:\n  defaultTimeoutSeconds: 1\n",
        "shell:\n  defaultTimeoutSeconds: 600\n",
    )
    .await;
    let (kind, output) = t.shell(ShellInput::new("sleep 30")).await;
    assert_eq!(kind, "timeout", "{output}");
    // A step's own timeout wins over the default.
    let (kind, output) = t
        .shell(ShellInput::new("sleep 0.2").timeout(Duration::from_secs(20)))
        .await;
    assert_eq!(kind, "success", "{output}");
}

/// Each script may hold its heap limit: however many run side by side (a project's lane
/// may allow many, and a token may make many projects), at most
/// `MAX_CONCURRENT_SCRIPTS_PER_TENANT` of one tenant execute at once; the others wait for a
/// place and then run.
#[tokio::test]
async fn no_more_scripts_execute_at_once_than_the_engine_has_places_for() {
    let t = tree(true, "", "lanes: { maxConcurrentTasks: 40 }\n").await;
    let runs = t.spin(300, 24).await;
    let mut spans = Vec::new();
    for run in runs {
        let result = t.finish(run).await;
        assert_eq!(result["kind"], "success", "{result}");
        let o = &result["output"];
        spans.push((o["start"].as_i64().unwrap(), o["end"].as_i64().unwrap()));
    }
    // The most executions that overlapped at any instant.
    let most = spans
        .iter()
        .map(|(at, _)| spans.iter().filter(|(s, e)| s <= at && at < e).count())
        .max()
        .unwrap();
    assert!(
        most <= magrathea_exec::script::MAX_CONCURRENT_SCRIPTS_PER_TENANT,
        "{most} scripts of one tenant executed at once"
    );
}

/// One tenant's long scripts never hold every place: while more of acme's spin than the
/// engine has places for, a script of globex's gets one at once and ends before any of
/// acme's.
#[tokio::test]
async fn one_tenants_scripts_leave_places_for_another_tenants() {
    let t = tree(false, "", "lanes: { maxConcurrentTasks: 40 }\n").await;
    write(
        &t.root.join("globex/shop/_vance/scripts/quick.js"),
        "return { end: Date.now() };",
    );
    let runs = t
        .spin(1500, magrathea_exec::script::MAX_CONCURRENT_SCRIPTS + 4)
        .await;
    // Let acme's scripts take what places they may.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let theirs = t
        .start(
            "js-globex",
            serde_json::to_value(ScriptInput::new("_vance/scripts/quick.js")).unwrap(),
        )
        .await;
    let quick = t.finish(theirs).await;
    assert_eq!(quick["kind"], "success", "{quick}");
    let mut first_spin_end = i64::MAX;
    for run in runs {
        let result = t.finish(run).await;
        assert_eq!(result["kind"], "success", "{result}");
        first_spin_end = first_spin_end.min(result["output"]["end"].as_i64().unwrap());
    }
    assert!(
        quick["output"]["end"].as_i64().unwrap() < first_spin_end,
        "globex's script waited for a place acme's scripts held"
    );
}

/// A step that gets no place within its timeout times out, the wait counted against it.
#[tokio::test]
async fn a_script_waiting_for_a_place_past_its_timeout_times_out() {
    let t = tree(false, "", "lanes: { maxConcurrentTasks: 40 }\n").await;
    let runs = t
        .spin(
            3000,
            magrathea_exec::script::MAX_CONCURRENT_SCRIPTS_PER_TENANT,
        )
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let late = t
        .start(
            "js",
            serde_json::to_value(
                ScriptInput::new("_vance/scripts/quick.js").timeout(Duration::from_millis(500)),
            )
            .unwrap(),
        )
        .await;
    let result = t.finish(late).await;
    assert_eq!(result["kind"], "timeout", "{result}");
    assert!(
        result["output"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("got no place to run")),
        "{result}"
    );
    for run in runs {
        assert_eq!(t.finish(run).await["kind"], "success");
    }
}

#[tokio::test]
async fn a_slow_shell_step_does_not_hold_up_another_runs_script_step() {
    let t = tree(true, "", "").await;
    let started = t.root.join("acme/shop/started");
    // Run A's shell step holds the project's shell lane until the test cancels it.
    let a = t
        .start(
            "sh",
            serde_json::to_value(ShellInput::new("touch started; exec sleep 600")).unwrap(),
        )
        .await;
    while !started.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Run B's script step in the same project runs to its end meanwhile.
    let b = t
        .start(
            "js",
            serde_json::to_value(ScriptInput::new("_vance/scripts/quick.js")).unwrap(),
        )
        .await;
    let result = t.finish(b).await;
    assert_eq!(result["kind"], "success", "{result}");
    assert_eq!(result["output"], json!({ "quick": true }));
    // A is still in its shell step: B passed it.
    let a_view = t.engine.run(a).unwrap();
    assert_eq!(a_view.status, RunStatus::Running, "{a_view:?}");
    t.engine.cancel(a, "test over").await.unwrap();
    let a_result = t.finish(a).await;
    assert_eq!(a_result["kind"], "cancelled", "{a_result}");
}
