//! Shell steps of a served tree are contained, over real HTTP against a `magrathea serve`
//! process whose own environment holds secrets: the step sees none of them, cannot read
//! `_auth/`, another tenant's files or the store's control key, and cannot make `/` its
//! workspace.

use crate::http_common;
use crate::serve_child;

use http_common::*;
use serde_json::Value;
use serve_child::{ServeChild, serve_command};

const SECRET: &str = "s3cr3t-of-the-server-9d1e";
const AWS: &str = "aws-key-of-the-server-44c2";
const PASSED: &str = "passed-by-the-tenant-1b7f";

const ENV: &str = r#"
start: show
states:
  show:
    type: shell_task
    run: env
    dirName: workspace
    storeAs: out
    on: { success: done }
  done: { type: terminal, result: "${state.out.stdout}" }
"#;

const PROBE: &str = r#"
start: probe
states:
  probe:
    type: shell_task
    run: |
      for c in 'cat ../../_auth/tokens.yaml' 'ls ../../globex/' 'cat ../../globex/shop/_vance/workflows/hello.yaml' 'echo x > ../../globex/shop/planted' 'cat ../../.magrathea/control.key' "cat /proc/$PPID/environ"; do
        if sh -c "$c"; then echo "READ: $c"; else echo "DENIED: $c"; fi
      done
      echo made > made.txt && cat made.txt
      head -c 4 /usr/bin/env | tail -c 3; echo
    dirName: workspace
    storeAs: out
    on: { success: done }
  done: { type: terminal, result: { stdout: "${state.out.stdout}", stderr: "${state.out.stderr}" } }
"#;

const ESCAPE: &str = r#"
start: look
states:
  look:
    type: shell_task
    run: "cat etc/hostname"
    dirName: escape
    storeAs: out
    on: { success: done }
    catch: { technical_error: denied, business_error: done }
  done: { type: terminal }
  denied: { type: terminal, outcome: failure, result: "${state.out.error}" }
"#;

/// The shared test tree, with shell steps allowed for acme and `MAGRATHEA_TEST_PASSED` passed
/// to them, served by a `magrathea serve` process with secrets in its environment.
struct Served {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    server: ServeChild,
    client: reqwest::Client,
}

impl Served {
    fn start() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        tree(&root);
        write(
            &root.join("acme/_tenant/_vance/settings.yaml"),
            "execution: { shellTask: true }\nshell:\n  passEnv: [MAGRATHEA_TEST_PASSED]\n",
        );
        let shop = root.join("acme/shop/_vance");
        write(&shop.join("workflows/env.yaml"), ENV);
        write(&shop.join("workflows/probe.yaml"), PROBE);
        write(&shop.join("workflows/escape.yaml"), ESCAPE);
        // Two more workspaces outside the project: another tenant's directory, and a path
        // that does not exist.
        for name in ["probe-there", "probe-nowhere"] {
            write(
                &shop.join(format!("workflows/{name}.yaml")),
                &ESCAPE.replace("dirName: escape", &format!("dirName: {name}")),
            );
        }
        write(
            &shop.join("settings.yaml"),
            &format!(
                "workspaces:\n  escape: /\n  probe-there: {}\n  probe-nowhere: {}\n",
                root.join("globex/shop").display(),
                root.join("globex/none").display()
            ),
        );
        let mut cmd = serve_command(&root);
        cmd.env("MAGRATHEA_TEST_SECRET", SECRET)
            .env("AWS_SECRET_ACCESS_KEY", AWS)
            .env("MAGRATHEA_TEST_PASSED", PASSED);
        let server = ServeChild::spawn(cmd);
        Self {
            _tmp: tmp,
            root,
            server,
            client: reqwest::Client::new(),
        }
    }

    /// Starts `name` in acme/shop and waits for it to end.
    async fn run(&self, name: &str) -> Value {
        let run = self.server.start_run(&self.client, name, ACME).await;
        self.server
            .wait_status(&self.client, &run, ACME, &["DONE", "FAILED"])
            .await
    }
}

#[tokio::test]
async fn a_served_shell_step_sees_none_of_the_servers_environment() {
    let s = Served::start();
    let v = s.run("env").await;
    assert_eq!(v["status"], "DONE", "{v}");
    let env = v["result"].as_str().unwrap();
    assert!(!env.contains(SECRET), "{env}");
    assert!(!env.contains("MAGRATHEA_TEST_SECRET"), "{env}");
    assert!(
        !env.contains(AWS) && !env.contains("AWS_SECRET_ACCESS_KEY"),
        "{env}"
    );
    assert!(
        env.contains(&format!("MAGRATHEA_TEST_PASSED={PASSED}")),
        "{env}"
    );
    let home = format!("HOME={}", s.root.join("acme/shop").display());
    assert!(env.lines().any(|l| l == home), "{env}");
}

#[tokio::test]
async fn a_served_shell_step_cannot_read_auth_or_another_tenant_but_uses_its_workspace() {
    let s = Served::start();
    let v = s.run("probe").await;
    assert_eq!(v["status"], "DONE", "{v}");
    let stdout = v["result"]["stdout"].as_str().unwrap();
    let stderr = v["result"]["stderr"].as_str().unwrap();
    for probe in [
        "cat ../../_auth/tokens.yaml",
        "ls ../../globex/",
        "cat ../../globex/shop/_vance/workflows/hello.yaml",
        "echo x > ../../globex/shop/planted",
        // The store's control key, without which its control socket answers nothing.
        "cat ../../.magrathea/control.key",
    ] {
        assert!(
            stdout.contains(&format!("DENIED: {probe}")),
            "{probe}: {stdout}"
        );
    }
    // The server's own environment, through /proc, is out of reach too.
    assert!(stdout.contains("DENIED: cat /proc/"), "{stdout}");
    assert!(!stdout.contains(SECRET), "{stdout}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(
        !stdout.contains(ACME_READ) && !stdout.contains("tokenSha256"),
        "{stdout}"
    );
    assert!(!stdout.contains("approve.yaml"), "{stdout}");
    assert!(!s.root.join("globex/shop/planted").exists());
    let key = std::fs::read_to_string(s.root.join(".magrathea/control.key")).unwrap();
    assert!(key.len() >= 64 && !stdout.contains(&key), "{stdout}");
    assert!(stdout.ends_with("made\nELF\n"), "{stdout}");
    assert!(s.root.join("acme/shop/made.txt").exists());
}

#[tokio::test]
async fn a_served_workspace_at_the_filesystem_root_is_refused() {
    let s = Served::start();
    let v = s.run("escape").await;
    assert_eq!(v["status"], "FAILED", "{v}");
    let text = v.to_string();
    assert!(text.contains("MAG-SH011"), "{text}");
    assert!(text.contains("shell.workspaceRoots"), "{text}");
    assert!(!text.contains(s.root.to_str().unwrap()), "{text}");
    // A workspace outside, existing or not, is refused alike: nothing is told of what exists.
    let there = s.run("probe-there").await;
    let nowhere = s.run("probe-nowhere").await;
    let said = |v: &Value, name: &str| v["result"].as_str().unwrap_or("").replace(name, "NAME");
    assert_eq!(
        said(&there, "probe-there"),
        said(&nowhere, "probe-nowhere"),
        "{there}\n{nowhere}"
    );
    assert!(there["result"].to_string().contains("MAG-SH011"), "{there}");
}
