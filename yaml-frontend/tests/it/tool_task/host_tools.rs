//! Tools an application adds: `#[task]`s and host tools called as tools, their schemas,
//! errors and timeouts.

use super::*;

#[tokio::test]
async fn a_task_registered_with_the_engine_is_callable_as_a_tool() {
    let e = env().await;
    e.workflow(
        "hello",
        &one_tool("[greet]", "greet", "{ name: \"${params.base}\" }"),
    );
    let v = e.run("hello", json!({"base": "world"})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["out"], json!({"greeting": "hello world"}));

    e.workflow("wrong", &one_tool("[greet]", "greet", "{ nam: x }"));
    let v = e.run("wrong", json!({})).await;
    assert_eq!(v.result, Some(json!("broken")), "{v:?}");
    assert_eq!(e.outcomes(&v), vec!["technical_error"]);
    let err = error_of(&v);
    assert!(err.contains("greet") && err.contains("`name`"), "{err}");

    // A registered task still needs the workflow's permission.
    e.workflow(
        "undeclared",
        &one_tool("[doc_read]", "greet", "{ name: x }"),
    );
    let v = e.run("undeclared", json!({})).await;
    assert_eq!(v.result, Some(json!("denied")), "{v:?}");
}

/// A host tool: `mode` chooses the result.
struct Modal;

impl Tool for Modal {
    fn name(&self) -> &str {
        "modal"
    }
    fn description(&self) -> &str {
        "Succeeds, fails or refuses by `mode`, echoing the invocation context."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["mode"],
            "properties": { "mode": { "type": "string", "enum": ["ok", "fail", "deny"] } },
            "additionalProperties": false
        })
    }
    fn invoke<'a>(
        &'a self,
        params: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            match params["mode"].as_str() {
                Some("ok") => Ok(json!({
                    "tenant": ctx.tenant,
                    "project": ctx.project,
                    "user": ctx.user,
                    "run": ctx.workflow_run_id.map(|r| r.to_string()),
                    "workflow": ctx.workflow_name,
                    "state": ctx.state,
                    "engine": ctx.engine.is_some(),
                    "key": ctx.idempotency_key.is_some(),
                })),
                Some("deny") => Err(ToolError::PermissionDenied("not for you".into())),
                _ => Err(ToolError::Failed("it broke".into())),
            }
        })
    }
}

#[tokio::test]
async fn host_tools_get_the_invocation_context_and_their_errors_route_by_kind() {
    let e = env_with(|rt| rt.with_tool(Modal), true).await;
    assert!(e.runtime.tool_names().contains(&"modal".to_string()));
    assert_eq!(e.runtime.tool("modal").unwrap().name(), "modal");
    for (mode, result, needle) in [
        ("ok", "ok", ""),
        ("deny", "denied", "not for you"),
        ("fail", "broken", "it broke"),
        ("other", "broken", "[MAG-TL003]"),
    ] {
        e.workflow(
            &format!("m_{mode}"),
            &one_tool("[modal]", "modal", &format!("{{ mode: {mode} }}")),
        );
        let v = e.run(&format!("m_{mode}"), json!({})).await;
        assert_eq!(v.result, Some(json!(result)), "{mode}: {v:?}");
        assert!(error_of(&v).contains(needle), "{mode}: {v:?}");
        if mode == "ok" {
            assert_eq!(
                v.vars["out"],
                json!({
                    "tenant": "acme", "project": "shop", "user": "tester",
                    "run": v.workflow_run_id.to_string(), "workflow": "m_ok",
                    "state": "call", "engine": true, "key": true,
                })
            );
        }
    }

    // Allowed but registered nowhere: a technical error naming the registered tools.
    e.workflow("ghost", &one_tool("[modl]", "modl", "{}"));
    let v = e.run("ghost", json!({})).await;
    assert_eq!(v.result, Some(json!("broken")), "{v:?}");
    let err = error_of(&v);
    assert!(
        err.contains("[MAG-TL001]") && err.contains("did you mean 'modal'"),
        "{err}"
    );
}

#[test]
fn tools_describe_themselves_with_a_json_schema() {
    let rt = YamlRuntime::new(DocumentSource::new(Path::new("/nonexistent")));
    assert_eq!(
        rt.tool_names(),
        vec![
            "doc_list",
            "doc_read",
            "http_request",
            "inbox_read",
            "web_search",
            "workflow_start"
        ]
    );
    for name in rt.tool_names() {
        let tool = rt.tool(&name).unwrap();
        assert_eq!(tool.name(), name);
        assert!(!tool.description().is_empty());
        assert_eq!(tool.parameters()["type"], "object", "{name}");
    }
}

/// A host tool that never answers.
struct Stall;

impl Tool for Stall {
    fn name(&self) -> &str {
        "stall"
    }
    fn description(&self) -> &str {
        "Never answers."
    }
    fn parameters(&self) -> Value {
        json!({ "type": "object" })
    }
    fn invoke<'a>(
        &'a self,
        _params: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn a_tool_task_ends_with_outcome_timeout_at_its_timeout_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("acme/shop/_vance/workflows")).unwrap();
    let rt = YamlRuntime::new(DocumentSource::new(root)).with_tool(Stall);
    // A registered task that never answers either: a #[task] called as a tool.
    let slow = TaskRegistration::new("slow", TaskOptions::default(), |_, _| {
        std::future::pending::<Result<Value, TaskError>>()
    });
    let engine = rt
        .install(Engine::builder().in_memory().task(slow))
        .build()
        .await
        .unwrap();
    std::fs::write(
        root.join("acme/shop/_vance/workflows/stalls.yaml"),
        r#"
allowedTools: [stall, slow]
start: tool
states:
  tool:
    type: tool_task
    tool: stall
    timeoutSeconds: 0.2
    storeAs: tool
    catch:
      timeout: task
  task:
    type: tool_task
    tool: slow
    timeoutSeconds: 0.2
    storeAs: task
    catch:
      timeout: done
  done: { type: terminal, result: both timed out }
"#,
    )
    .unwrap();
    let scope = Scope::new("acme", "shop");
    let run = rt
        .start(&engine, &scope, "stalls", json!({}), "tester")
        .await
        .unwrap();
    let v = tokio::time::timeout(Duration::from_secs(30), engine.wait(run))
        .await
        .expect("the timeouts end the run")
        .unwrap();
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.result, Some(json!("both timed out")));
    let error = v.vars["tool"]["error"].as_str().unwrap();
    assert!(
        error.contains("[MAG-TL005]") && error.contains("stall"),
        "{error}"
    );
    assert!(
        v.vars["task"]["error"]
            .as_str()
            .unwrap()
            .contains("timed out")
    );
}

/// A tool's failure that carries a code of its own leads with it: `web_search` with no search
/// service configured ends `technical_error` with `[MAG-TL006]` first, as the docs name it.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_failure_with_a_code_of_its_own_leads_with_it() {
    let e = env().await;
    e.workflow(
        "search",
        &one_tool("[web_search]", "web_search", "{ query: x }"),
    );
    let v = e.run("search", json!({})).await;
    assert_eq!(v.result, Some(json!("broken")), "{v:?}");
    let error = error_of(&v);
    assert!(
        error.starts_with("[MAG-TL006]") && error.contains("(tool `web_search`)"),
        "{error}"
    );
}
