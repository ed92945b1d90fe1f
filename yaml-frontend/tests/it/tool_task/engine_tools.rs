//! Tools that reach the engine: `inbox_read` and `workflow_start` (§8.1), pinned to the
//! caller's scope.

use super::*;

const GATED: &str = r#"
start: ask
states:
  ask:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    on: { approved: done }
    catch: { human_rejected: done }
  done: { type: terminal }
"#;

async fn wait_for_pending(engine: &Engine, n: usize) {
    for _ in 0..300 {
        if engine
            .inbox(magrathea_core::InboxFilter::Pending)
            .unwrap()
            .len()
            >= n
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{n} inbox items never opened");
}

#[tokio::test]
async fn inbox_read_returns_the_items_of_the_callers_scope_only() {
    let e = env().await;
    e.workflow("gated", GATED);
    std::fs::write(e.root.join("acme/other/_vance/workflows/gated.yaml"), GATED).unwrap();
    let other = Scope::new("acme", "other");
    let mine = e
        .runtime
        .start(&e.engine, &e.scope, "gated", json!({}), "tester")
        .await
        .unwrap();
    e.runtime
        .start(&e.engine, &other, "gated", json!({}), "tester")
        .await
        .unwrap();
    wait_for_pending(&e.engine, 2).await;

    e.workflow("read", &one_tool("[inbox_read]", "inbox_read", "{}"));
    let v = e.run("read", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["out"]["count"], 1, "{v:?}");
    let item = &v.vars["out"]["items"][0];
    assert_eq!(item["workflowRunId"], mine.to_string());
    assert_eq!(item["title"], "Ship it?");
    assert_eq!(item["status"], "PENDING");

    let direct = e
        .runtime
        .invoke_tool("inbox_read", json!({"status": "ALL"}), &e.ctx())
        .await
        .unwrap();
    assert_eq!(direct["count"], 1);
    let err = e
        .runtime
        .invoke_tool("inbox_read", json!({"status": "DONE"}), &e.ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidParams(_)), "{err}");
}

#[tokio::test]
async fn inbox_read_pages_with_a_limit_and_the_next_cursor() {
    let e = env().await;
    e.workflow("gated", GATED);
    let mut runs = Vec::new();
    for _ in 0..3 {
        let run = e
            .runtime
            .start(&e.engine, &e.scope, "gated", json!({}), "tester")
            .await
            .unwrap();
        runs.push(run.to_string());
        wait_for_pending(&e.engine, runs.len()).await;
    }
    let read = |params: Value| {
        let ctx = e.ctx();
        let runtime = &e.runtime;
        async move { runtime.invoke_tool("inbox_read", params, &ctx).await }
    };
    let first = read(json!({"limit": 2})).await.unwrap();
    assert_eq!(first["count"], 2, "{first}");
    let next = first["next"].as_str().expect("a next cursor").to_owned();
    let rest = read(json!({"limit": 2, "cursor": next})).await.unwrap();
    assert_eq!(rest["count"], 1, "{rest}");
    assert_eq!(rest["next"], Value::Null, "the last page");
    let seen: Vec<Value> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rest["items"].as_array().unwrap())
        .map(|i| i["workflowRunId"].clone())
        .collect();
    let expected: Vec<Value> = runs.iter().map(|r| json!(r)).collect();
    assert_eq!(seen, expected, "every item once, oldest first");

    let whole = read(json!({})).await.unwrap();
    assert_eq!(
        (whole["count"].clone(), whole["next"].clone()),
        (json!(3), Value::Null)
    );
    for bad in [
        json!({"cursor": "nope"}),
        json!({"limit": 0}),
        json!({"limit": 5000}),
    ] {
        let err = read(bad.clone()).await.unwrap_err();
        assert!(matches!(err, ToolError::InvalidParams(_)), "{bad}: {err}");
    }
}

#[tokio::test]
async fn engine_tools_without_an_attached_engine_are_technical_errors() {
    let e = env_with(|rt| rt, false).await;
    e.workflow("read", &one_tool("[inbox_read]", "inbox_read", "{}"));
    let v = e.run("read", json!({})).await;
    assert_eq!(v.result, Some(json!("broken")), "{v:?}");
    assert!(error_of(&v).contains("YamlRuntime::attach"), "{v:?}");
    let err = e
        .runtime
        .invoke_tool("workflow_start", json!({"name": "x"}), &e.ctx())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("attach"), "{err}");
}

// ---------------------------------------------------------------------------------------
// workflow_start (§8.1)

#[tokio::test]
async fn workflow_start_starts_a_run_pinned_to_the_callers_scope_and_user() {
    let e = env().await;
    e.workflow(
        "child",
        "parameters:\n  who: { type: string, required: true }\nstart: d\nstates:\n  d: { type: \
         terminal, result: \"hi ${params.who}\" }\n",
    );
    // A workflow of the same name in another project is not reachable.
    std::fs::write(
        e.root.join("acme/other/_vance/workflows/only_there.yaml"),
        "start: d\nstates:\n  d: { type: terminal }\n",
    )
    .unwrap();
    e.workflow(
        "parent",
        &one_tool(
            "[workflow_start]",
            "workflow_start",
            "{ name: child, params: { who: bob } }",
        ),
    );
    let v = e.run("parent", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let out = &v.vars["out"];
    assert_eq!(out["workflowName"], "child");
    let child: RunId = out["workflowRunId"].as_str().unwrap().parse().unwrap();
    let child = e.engine.wait_settled(child).await.unwrap();
    assert_eq!(child.status, RunStatus::Done);
    assert_eq!(child.result, Some(json!("hi bob")));
    assert_eq!(child.scope, "acme/shop");
    assert_eq!(child.started_by, "tester");
    assert_eq!(child.parent_run_id, None, "a started run, not a child run");

    for (params, needle) in [
        ("{ name: only_there }", "[MAG-DOC001]"),
        ("{ name: ../other/x }", "[MAG-DOC002]"),
        ("{ name: child }", "[MAG-YP001]"),
    ] {
        e.workflow(
            "bad",
            &one_tool("[workflow_start]", "workflow_start", params),
        );
        let v = e.run("bad", json!({})).await;
        assert_eq!(v.result, Some(json!("broken")), "{params}: {v:?}");
        assert!(error_of(&v).contains(needle), "{params}: {v:?}");
    }

    // workflow_start is not in the default pool (§8.1).
    e.workflow(
        "undeclared",
        &one_tool("null", "workflow_start", "{ name: child }").replace("allowedTools: null\n", ""),
    );
    let v = e.run("undeclared", json!({})).await;
    assert_eq!(v.result, Some(json!("denied")), "{v:?}");
}

#[tokio::test]
async fn a_workflow_that_starts_itself_stops_at_the_trigger_chains_depth() {
    let e = env().await;
    e.workflow(
        "again",
        &one_tool("[workflow_start]", "workflow_start", "{ name: again }"),
    );
    let first = e.run("again", json!({})).await;
    assert_eq!(first.result, Some(json!("ok")), "{first:?}");
    // Each run starts the next and ends; the chain's bound refuses the 17th start.
    let runs_of_again = || {
        e.engine
            .list_runs(&magrathea_core::RunFilter {
                workflow: Some("again".into()),
                limit: 1_000,
                ..Default::default()
            })
            .unwrap()
    };
    let mut runs = Vec::new();
    for _ in 0..500 {
        runs = runs_of_again();
        if runs.iter().any(|r| r.status == RunStatus::Failed) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let failed: Vec<_> = runs
        .iter()
        .filter(|r| r.status == RunStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1, "{runs:?}");
    let last = e.engine.wait_settled(failed[0].run_id).await.unwrap();
    assert_eq!(last.result, Some(json!("broken")), "{last:?}");
    assert!(
        error_of(&last).contains("[MAG-TR004] trigger chain too deep"),
        "{last:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let all = runs_of_again();
    assert_eq!(all.len(), 17, "the first run and the 16 it chained");
}

#[tokio::test]
async fn a_started_run_is_for_whom_the_calling_run_is() {
    let e = env().await;
    e.workflow("child", "start: d\nstates:\n  d: { type: terminal }\n");
    e.workflow(
        "parent",
        &one_tool("[workflow_start]", "workflow_start", "{ name: child }"),
    );
    let parent = e
        .runtime
        .start_with(&e.engine, &e.scope, "parent", json!({}), |req| {
            req.started_by("ops").requested_by("alice")
        })
        .await
        .unwrap();
    let parent = e.engine.wait_settled(parent).await.unwrap();
    assert_eq!(parent.result, Some(json!("ok")), "{parent:?}");
    let child: RunId = parent.vars["out"]["workflowRunId"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    e.engine.wait_settled(child).await.unwrap();
    let Record::Start(start) = &e.engine.journal(child).unwrap()[0].record else {
        panic!("a journal begins with its StartRecord");
    };
    assert_eq!(start.started_by, "ops");
    assert_eq!(
        start.requested_by.as_deref(),
        Some("alice"),
        "a gate that refuses its requester's approval refuses alice's"
    );
}

#[tokio::test]
async fn workflow_start_of_an_archived_workflow_fails_naming_the_archive() {
    let e = env().await;
    e.workflow("child", "start: d\nstates:\n  d: { type: terminal }\n");
    e.write("_vance/workflow-state/child.yaml", "archived: true\n");
    e.workflow(
        "parent",
        &one_tool("[workflow_start]", "workflow_start", "{ name: child }"),
    );
    let v = e.run("parent", json!({})).await;
    assert_eq!(v.result, Some(json!("broken")), "{v:?}");
    assert!(error_of(&v).contains("[MAG-VR001]"), "{v:?}");
}

// ---------------------------------------------------------------------------------------
// #[task]s and host tools
