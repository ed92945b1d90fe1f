//! The command reads the runs a Rust application's engine started in its store file: such
//! runs have no tenant and project, belong to no project, and are shown, exported and listed
//! from any project that opens the store (`--store DIR` holding `journal.redb`). While the
//! application holds the file, the command says so instead of waiting for an owner that
//! will never answer.

use crate::cli_common;

use cli_common::*;
use magrathea_core::{Engine, RunStatus, StartRequest, WorkflowError, WorkflowRegistration};
use serde_json::{Value, json};

/// Starts and finishes one run of a code workflow `greet` in `<dir>/journal.redb`; its id.
fn code_run(dir: &std::path::Path) -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let greet = WorkflowRegistration::new("greet", "1", |ctx, input: Value| async move {
            ctx.sleep(std::time::Duration::from_millis(1)).await?;
            Ok::<_, WorkflowError>(json!({ "hello": input }))
        });
        let engine = Engine::builder()
            .path(dir.join("journal.redb"))
            .workflow(greet)
            .build()
            .await
            .unwrap();
        let run = engine
            .start(StartRequest::code("greet", json!("world")))
            .await
            .unwrap();
        let view = engine.wait(run).await.unwrap();
        assert_eq!(view.status, RunStatus::Done);
        run.to_string()
    })
    // The runtime goes with its engine: the store file is free for the command.
}

#[test]
fn runs_a_rust_application_started_are_shown_listed_and_exported() {
    let p = Project::new();
    let store = p.root.join("app-store");
    std::fs::create_dir_all(&store).unwrap();
    let run = code_run(&store);
    let store_arg = store.to_str().unwrap();

    let out = p.cli(&["runs", "show", &run, "--json", "--store", store_arg]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = json(&out);
    assert_eq!(shown["workflowName"], "greet", "{shown}");
    assert_eq!(shown["result"], json!({"hello": "world"}), "{shown}");

    let out = p.cli(&["runs", "list", "--json", "--store", store_arg]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = json(&out);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["workflowRunId"] == run.as_str()),
        "{listed}"
    );

    let file = p.root.join("greet.jsonl");
    let out = p.cli(&[
        "journal",
        &run,
        "--export",
        file.to_str().unwrap(),
        "--store",
        store_arg,
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let exported = std::fs::read_to_string(&file).unwrap();
    assert!(exported.contains("StartRecord"), "{exported}");

    // Through an owner of the store (`magrathea serve --store`), listed once.
    let mut serve = crate::serve_child::serve_command(&p.root);
    serve.args(["--store", store_arg]);
    let server = crate::serve_child::ServeChild::spawn(serve);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::os::unix::net::UnixStream::connect(store.join("control.sock")).is_err() {
        assert!(std::time::Instant::now() < deadline, "no control socket");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = p.cli(&["runs", "list", "--json", "--store", store_arg]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = json(&out);
    let times = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workflowRunId"] == run.as_str())
        .count();
    assert_eq!(times, 1, "{listed}");
    drop(server);
}

#[test]
fn a_store_an_application_holds_is_named_as_such() {
    let p = Project::new();
    let store = p.root.join("app-store");
    std::fs::create_dir_all(&store).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = rt.block_on(async {
        Engine::builder()
            .path(store.join("journal.redb"))
            .build()
            .await
            .unwrap()
    });
    let out = p.cli(&["runs", "list", "--store", store.to_str().unwrap()]);
    assert_ne!(code(&out), 0);
    let err = stderr(&out);
    assert!(
        err.contains("the store is open in a process that takes no commands")
            && err.contains("a Rust application's engine holds its store file"),
        "{err}"
    );
    drop(engine);
}
