//! The built-in `doc_read` and `doc_list` tools: the project's documents only.

use super::*;

#[tokio::test]
async fn doc_read_never_reads_the_projects_settings() {
    let e = env().await;
    e.write("_vance/notes/today.md", "# Today\n");
    // The project's settings hold its secrets: no tool reads them, by name or by a link.
    e.write(
        "_vance/settings.yaml",
        "events: { deploy: { token: secret-event-token } }\n",
    );
    std::os::unix::fs::symlink(
        e.project().join("_vance/settings.yaml"),
        e.project().join("_vance/notes/settings-link.yaml"),
    )
    .unwrap();
    for path in ["_vance/settings.yaml", "_vance/notes/settings-link.yaml"] {
        e.workflow(
            "secrets",
            &one_tool("[doc_read]", "doc_read", &format!("{{ path: {path} }}")),
        );
        let v = e.run("secrets", json!({})).await;
        assert_eq!(v.result, Some(json!("denied")), "{path}: {v:?}");
        assert!(error_of(&v).contains("hold its secrets"), "{v:?}");
        assert!(!format!("{v:?}").contains("secret-event-token"), "{v:?}");
    }
}

/// The `magrathea` command keeps a project's store in `<project>/.magrathea/`: the journals of
/// every run and the key of its control socket. No tool reads or lists it, by name or by a link.
#[tokio::test]
async fn doc_read_and_doc_list_never_reach_the_engines_store() {
    let e = env().await;
    e.write(".magrathea/control.key", "0123456789abcdef");
    e.write("_vance/notes/today.md", "# Today\n");
    std::os::unix::fs::symlink(
        e.project().join(".magrathea"),
        e.project().join("_vance/notes/store"),
    )
    .unwrap();
    for path in [
        ".magrathea/control.key",
        "_vance/notes/store/control.key",
        ".magrathea",
    ] {
        e.workflow(
            "key",
            &one_tool(
                "[doc_read, doc_list]",
                "doc_read",
                &format!("{{ path: \"{path}\" }}"),
            ),
        );
        let v = e.run("key", json!({})).await;
        assert_eq!(v.result, Some(json!("denied")), "{path}: {v:?}");
        assert!(error_of(&v).contains("the engine's own store"), "{v:?}");
        assert!(!format!("{v:?}").contains("0123456789abcdef"), "{v:?}");
    }
    e.workflow(
        "list",
        &one_tool("[doc_list]", "doc_list", "{ path: \".\", recursive: true }"),
    );
    let v = e.run("list", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let listed = v.vars["out"]["entries"].to_string();
    assert!(listed.contains("_vance/notes/today.md"), "{listed}");
    assert!(
        !listed.contains(".magrathea") && !listed.contains("notes/store"),
        "{listed}"
    );
}

#[tokio::test]
async fn doc_read_and_doc_list_read_the_project_and_refuse_every_escape() {
    let e = env().await;
    e.write("_vance/notes/today.md", "# Today\nship it\n");
    e.write("_vance/notes/deep/x.txt", "x");
    e.write("README.md", "readme");
    // Outside the project: the tenant's other project, and a file outside the root.
    std::fs::write(e.root.join("acme/other/secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(
        e.root.join("acme/other/secret.txt"),
        e.project().join("_vance/notes/leak.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(e.root.join("acme/other"), e.project().join("_vance/escape"))
        .unwrap();
    std::os::unix::fs::symlink(
        e.project().join("README.md"),
        e.project().join("_vance/readme-link"),
    )
    .unwrap();

    // Through YAML.
    e.workflow(
        "read",
        &one_tool("[doc_read]", "doc_read", "{ path: _vance/notes/today.md }"),
    );
    let v = e.run("read", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(
        v.vars["out"],
        json!({"path": "_vance/notes/today.md", "content": "# Today\nship it\n", "size": 16})
    );
    e.workflow(
        "list",
        &one_tool("[doc_list]", "doc_list", "{ path: _vance/notes }"),
    );
    let v = e.run("list", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(
        v.vars["out"]["entries"],
        json!([
            {"path": "_vance/notes/deep", "kind": "dir", "size": 0},
            {"path": "_vance/notes/today.md", "kind": "file", "size": 16},
        ]),
        "the link out of the project is not listed"
    );
    // doc_read and doc_list are in the default pool: no allowedTools needed.
    e.workflow(
        "default_pool",
        "start: l\nstates:\n  l:\n    type: tool_task\n    tool: doc_list\n    storeAs: out\n    \
         on: { success: d }\n  d: { type: terminal }\n",
    );
    let v = e.run("default_pool", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let paths: Vec<&str> = v.vars["out"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        vec!["_vance/notes", "_vance/readme-link", "_vance/workflows"]
    );

    // An escape through YAML is a permission_error.
    e.workflow(
        "escape",
        &one_tool("[doc_read]", "doc_read", "{ path: ../other/secret.txt }"),
    );
    let v = e.run("escape", json!({})).await;
    assert_eq!(v.result, Some(json!("denied")), "{v:?}");
    assert!(error_of(&v).contains("outside the project"), "{v:?}");

    // Directly.
    let ctx = e.ctx();
    let read = |path: &str| {
        let rt = e.runtime.clone();
        let ctx = ctx.clone();
        let params = json!({ "path": path });
        async move { rt.invoke_tool("doc_read", params, &ctx).await }
    };
    assert_eq!(
        read("./_vance/readme-link").await.unwrap()["content"],
        "readme"
    );
    for bad in [
        "../other/secret.txt",
        "_vance/../../other/secret.txt",
        "/etc/passwd",
        "_vance/notes/leak.txt",
        "_vance/escape/secret.txt",
    ] {
        let err = read(bad).await.unwrap_err();
        assert!(
            matches!(err, ToolError::PermissionDenied(_)),
            "{bad}: {err}"
        );
        assert_eq!(err.outcome(), "permission_error");
    }
    for (bad, needle) in [
        ("_vance/nope.md", "no document"),
        ("_vance/notes", "is a directory"),
    ] {
        let err = read(bad).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::Failed(m) if m.contains(needle)),
            "{bad}: {err}"
        );
    }
    let all = e
        .runtime
        .invoke_tool("doc_list", json!({"path": ".", "recursive": true}), &ctx)
        .await
        .unwrap();
    let files: Vec<&str> = all["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "file")
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(files.contains(&"_vance/notes/deep/x.txt"), "{files:?}");
    assert!(files.contains(&"README.md"), "{files:?}");
    assert!(!files.iter().any(|f| f.contains("secret")), "{files:?}");
    let err = e
        .runtime
        .invoke_tool("doc_list", json!({"path": "../other"}), &ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::PermissionDenied(_)), "{err}");
}

// ---------------------------------------------------------------------------------------
// inbox_read
