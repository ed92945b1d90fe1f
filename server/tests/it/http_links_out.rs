//! A served project's runs, graphs, versions and settings never read through a symbolic link
//! that leads out of the project: a shell step may make links in its project, and the server
//! reads with more rights than the step has. Links that stay inside are followed.

use crate::http_common;

use std::os::unix::fs::symlink;

use http_common::*;
use serde_json::{Value, json};

const WORKFLOWS: &str = "/brain/acme/project/shop/workflows";

/// Another tenant's document, a file outside the root, and the tokens file, each linked in as
/// a workflow of acme/shop.
fn links_out(s: &Server) -> Vec<&'static str> {
    let workflows = s.root.join("acme/shop/_vance/workflows");
    write(
        &s.root.join("globex/shop/_vance/workflows/secret.yaml"),
        "parameters:\n  code: { default: globex-secret-7 }\nstart: done\nstates:\n  done: { type: terminal }\n",
    );
    symlink(
        s.root.join("globex/shop/_vance/workflows/secret.yaml"),
        workflows.join("theirs.yaml"),
    )
    .unwrap();
    symlink("/etc/passwd", workflows.join("pw.yaml")).unwrap();
    symlink(
        s.root.join("_auth/tokens.yaml"),
        workflows.join("toks.yaml"),
    )
    .unwrap();
    vec!["theirs", "pw", "toks"]
}

fn leaks(body: &str) -> bool {
    body.contains("globex-secret-7") || body.contains("root:") || body.contains("tokens")
}

#[tokio::test]
async fn starting_a_workflow_linked_out_of_the_project_is_refused_without_its_text() {
    let s = Server::start().await;
    for name in links_out(&s) {
        let r = s
            .post(&format!("{WORKFLOWS}/{name}/start"), Some(ACME))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert_eq!(status, 403, "{name}: {body}");
        assert!(body.contains("MAG-HTTP-OUTSIDE-PROJECT"), "{name}: {body}");
        assert!(body.contains("[MAG-DOC004]"), "{name}: {body}");
        assert!(!leaks(&body), "{name}: {body}");
        assert!(!body.contains(s.root.to_str().unwrap()), "{name}: {body}");
    }
    // Nothing was started.
    let runs: Value = s.get_json(&format!("{WORKFLOWS}/runs"), Some(ACME)).await;
    assert_eq!(runs.as_array().map(Vec::len), Some(0), "{runs}");
    // A link that stays inside the project starts its target.
    symlink(
        "hello.yaml",
        s.root.join("acme/shop/_vance/workflows/alias.yaml"),
    )
    .unwrap();
    let r = s
        .post(&format!("{WORKFLOWS}/alias/start"), Some(ACME))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
}

#[tokio::test]
async fn graphs_and_versions_do_not_read_through_a_link_out_of_the_project() {
    let s = Server::start().await;
    for name in links_out(&s) {
        for route in ["graph", "graph?format=mermaid", "versions"] {
            let r = s
                .get(&format!("{WORKFLOWS}/{name}/{route}"), Some(ACME))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body = r.text().await.unwrap();
            assert!(status >= 400, "{name}/{route}: {status} {body}");
            assert!(!leaks(&body), "{name}/{route}: {body}");
        }
    }
    // The editor's layout file linked to another tenant's file is neither read nor written.
    let elsewhere = s
        .root
        .join("globex/shop/_vance/workflows/hello.layout.json");
    write(&elsewhere, "{\"schemaVersion\": \"globex-layout\"}");
    symlink(
        &elsewhere,
        s.root.join("acme/shop/_vance/workflows/hello.layout.json"),
    )
    .unwrap();
    let (status, code) = code(
        s.get(&format!("{WORKFLOWS}/hello/graph"), Some(ACME))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "MAG-HTTP-OUTSIDE-PROJECT"));
}

#[tokio::test]
async fn a_project_settings_file_linked_to_another_tenants_is_not_taken() {
    let s = Server::start().await;
    // globex's event token; acme's project settings become a link to globex's.
    write(
        &s.root.join("globex/shop/_vance/settings.yaml"),
        "events: { deploy: { token: globex-event-token } }\n",
    );
    write(
        &s.root.join("acme/shop/_vance/events/deploy.yaml"),
        "workflow: hello\nauth: { tokenSetting: events.deploy.token }\n",
    );
    let settings = s.root.join("acme/shop/_vance/settings.yaml");
    let _ = std::fs::remove_file(&settings);
    symlink(s.root.join("globex/shop/_vance/settings.yaml"), &settings).unwrap();
    // globex's token does not open acme's event route.
    let r = s
        .post("/brain/acme/event/shop/deploy", Some("globex-event-token"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401, "{}", r.text().await.unwrap());
}

/// Publishing writes the live document and its history in the project only: with the
/// project's `_vance/workflows/` linked to another tenant's, nothing is written there.
#[tokio::test]
async fn publishing_does_not_write_through_a_directory_linked_out_of_the_project() {
    let s = Server::start().await;
    let vance = s.root.join("acme/lab/_vance");
    std::fs::remove_dir_all(vance.join("workflows")).unwrap();
    symlink(
        s.root.join("globex/shop/_vance/workflows"),
        vance.join("workflows"),
    )
    .unwrap();
    write(&vance.join("workflow-drafts/planted.yaml"), HELLO);
    let r = s
        .post(
            "/brain/acme/project/lab/workflows/planted/publish",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    assert!(status >= 400, "{status} {body}");
    assert!(
        !s.root
            .join("globex/shop/_vance/workflows/planted.yaml")
            .exists(),
        "published into another tenant: {body}"
    );
    // The graph's layout is not written there either.
    let r = s
        .client
        .put(s.url("/brain/acme/project/lab/workflows/hello/graph"))
        .bearer_auth(ACME)
        .json(&json!({"nodes": [], "edges": []}))
        .send()
        .await
        .unwrap();
    assert!(r.status().as_u16() >= 400, "{}", r.text().await.unwrap());
    assert!(
        !s.root
            .join("globex/shop/_vance/workflows/hello.layout.json")
            .exists()
    );
}

/// A step swapping a directory of a document's path for a link out, over and over, while the
/// API reads and writes through that path: what the server checked is not what it opens, so
/// every open and write resolves beneath the project at the instant it happens. Not one read
/// gives the tokens file, not one write lands outside the project.
#[tokio::test]
async fn a_directory_swapped_for_a_link_during_a_request_leads_nowhere() {
    let s = Server::start().await;
    let vance = s.root.join("acme/shop/_vance");
    // `real/tokens.yaml` exists inside the project when it is checked; swapped, `real` is a
    // link to the tokens' directory.
    write(&vance.join("real/tokens.yaml"), "decoy: inside\n");
    symlink(s.root.join("_auth"), vance.join("link")).unwrap();
    let swapper = Swapper::start(vance.join("real"), vance.join("link"));
    let doc = "/brain/acme/project/shop/documents/real/tokens.yaml";
    let mut inside = 0;
    for i in 0..300 {
        let r = s.get(doc, Some(ACME)).send().await.unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert!(
            !body.contains("tokenSha256") && !body.contains("scopes"),
            "read {i} went through the link ({status}): {body}"
        );
        if status == 200 {
            assert_eq!(body, "decoy: inside\n");
            inside += 1;
        }
        let put = s
            .client
            .put(s.url(&format!(
                "/brain/acme/project/shop/documents/real/pwn{i}.yaml"
            )))
            .bearer_auth(ACME)
            .body("owned: true\n")
            .send()
            .await
            .unwrap();
        assert!(
            [200, 201, 403, 409].contains(&put.status().as_u16()),
            "{}",
            put.status()
        );
    }
    assert!(swapper.stop() > 0);
    assert!(inside > 0, "some reads found the document inside");
    let written_out: Vec<_> = std::fs::read_dir(s.root.join("_auth"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("pwn") || n.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(written_out.is_empty(), "{written_out:?}");
}

/// A history directory that is a link to another tenant's: its versions are not listed as
/// this workflow's (their hashes would confirm a guessed text, their times and sizes leak).
#[tokio::test]
async fn a_history_linked_out_lists_no_other_tenants_versions() {
    let s = Server::start().await;
    let hash = "ab".repeat(32);
    write(
        &s.root.join(format!(
            "globex/shop/_vance/workflow-history/approve/{hash}.yaml"
        )),
        "theirs\n",
    );
    let history = s.root.join("acme/shop/_vance/workflow-history");
    std::fs::create_dir_all(&history).unwrap();
    symlink(
        s.root.join("globex/shop/_vance/workflow-history/approve"),
        history.join("approve"),
    )
    .unwrap();
    let v: Value = s
        .get_json(&format!("{WORKFLOWS}/approve/versions"), Some(ACME))
        .await;
    assert!(!v.to_string().contains(&hash), "{v}");
}

/// A draft's `.triggers` that is a link out: the publish is refused, and names nothing of
/// what lies there.
#[tokio::test]
async fn a_drafts_triggers_linked_out_are_not_listed() {
    let s = Server::start().await;
    let drafts = s.root.join("acme/shop/_vance/workflow-drafts");
    write(
        &drafts.join("approve.yaml"),
        "start: done\nstates:\n  done: { type: terminal }\n",
    );
    symlink(s.root.join("_auth"), drafts.join("approve.triggers")).unwrap();
    let r = s
        .post(&format!("{WORKFLOWS}/approve/publish"), Some(ACME))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    assert_ne!(status, 200, "{body}");
    assert!(!body.contains("tokens.yaml"), "{body}");
    assert!(s.root.join("_auth/tokens.yaml").exists());
}

/// A listing racing a step that swaps the listed directory for a link out, over and over:
/// not one page names what lies outside.
#[tokio::test]
async fn a_listed_directory_swapped_for_a_link_lists_nothing_outside() {
    let s = Server::start().await;
    let vance = s.root.join("acme/shop/_vance");
    write(&vance.join("listme/decoy.yaml"), "x: 1\n");
    symlink(s.root.join("_auth"), vance.join("lnk")).unwrap();
    let swapper = Swapper::start(vance.join("listme"), vance.join("lnk"));
    let mut listed = 0;
    for i in 0..300 {
        let r = s
            .get("/brain/acme/project/shop/documents?dir=listme", Some(ACME))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert!(
            !body.contains("tokens.yaml"),
            "listing {i} ({status}): {body}"
        );
        if body.contains("decoy.yaml") {
            listed += 1;
        }
    }
    assert!(swapper.stop() > 0);
    assert!(listed > 0, "some listings found the directory inside");
}

/// The scopes a document write takes are its path's as written: a link inside the project
/// (`_vance/notes -> scheduler`) does not let a token without `workflow.run` put a schedule
/// there, nor remove one.
#[tokio::test]
async fn a_write_through_a_link_inside_the_project_is_refused() {
    let s = Server::start().await;
    let vance = s.root.join("acme/shop/_vance");
    std::fs::create_dir_all(vance.join("scheduler")).unwrap();
    symlink("scheduler", vance.join("notes")).unwrap();
    let schedule = "cron: \"0 0 1 1 *\"\nworkflow: hello\n";
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/notes/tick.yaml"))
        .bearer_auth(ACME_WRITE)
        .body(schedule)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403, "{}", r.text().await.unwrap());
    assert!(!vance.join("scheduler/tick.yaml").exists());
    write(&vance.join("scheduler/tick.yaml"), schedule);
    let r = s
        .client
        .delete(s.url("/brain/acme/project/shop/documents/notes/tick.yaml"))
        .bearer_auth(ACME_WRITE)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403, "{}", r.text().await.unwrap());
    assert!(vance.join("scheduler/tick.yaml").exists());
}

/// A thread exchanging two entries of a project over and over (`renameat2` with
/// `RENAME_EXCHANGE`), as a shell step racing the server would.
struct Swapper {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl Swapper {
    fn start(a: std::path::PathBuf, b: std::path::PathBuf) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                nix::fcntl::renameat2(
                    nix::fcntl::AT_FDCWD,
                    &a,
                    nix::fcntl::AT_FDCWD,
                    &b,
                    nix::fcntl::RenameFlags::RENAME_EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            swaps
        });
        Self { stop, thread }
    }

    /// Stops the thread: how many exchanges it made.
    fn stop(self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}
