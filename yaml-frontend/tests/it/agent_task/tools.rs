//! Tool calls a model asks for: executed when the workflow, tenant and project allow them,
//! bounded in rounds and held to the tenant's egress policy.

use super::*;

const TOOLS: &str = "tools: [doc_read, http_request]\n";

fn plan_json() -> Value {
    json!({ "risk": "low", "focus_areas": ["docs"] })
}

fn final_answer() -> Value {
    answer(&json!({ "success": true, "data": plan_json() }).to_string())
}

/// A project with `notes/pr.md`, the `reviewer` recipe (`recipe_extra` added) and the
/// `pr-review` workflow (`head` added), run against `script`.
async fn tool_scenario(
    script: impl FnOnce(&Fake) -> Vec<Value>,
    recipe_extra: &str,
    head: &str,
    setup: impl FnOnce(&Project),
) -> (Project, Fake, RunView) {
    let server = fake(Canned::Reply(String::new())).await;
    server.answer(Canned::Script(script(&server)));
    let p = project(|rt| rt).await;
    std::fs::create_dir_all(p.project.join("notes")).unwrap();
    std::fs::write(
        p.project.join("notes/pr.md"),
        "PR 42 touches the payment migrations.",
    )
    .unwrap();
    setup(&p);
    p.recipe("reviewer", &recipe(&server.base_url(), recipe_extra));
    p.workflow("pr-review", &workflow("reviewer", head));
    let view = p.run_pr("pr-review").await;
    p.assert_key_not_journaled(&view);
    (p, server, view)
}

/// The tool message answering `id` in a request body.
fn tool_message(body: &Value, id: &str) -> Value {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no tool message for {id} in {body}"))
}

/// The JSON in a tool message's content.
fn tool_result(message: &Value) -> Value {
    serde_json::from_str(message["content"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn an_allowed_doc_read_call_is_executed_and_its_result_sent_back() {
    let (p, server, v) = tool_scenario(
        |_| {
            vec![
                tool_call("call_1", "doc_read", json!({ "path": "notes/pr.md" })),
                final_answer(),
            ]
        },
        TOOLS,
        "allowedTools: [doc_read]",
        |_| {},
    )
    .await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["plan_output"], plan_json());

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // Of the recipe's registered tools, those the cascade allows are offered, with their
    // schemas: http_request is not in the workflow's allowedTools.
    let tools = &requests[0].1["tools"];
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["doc_read"]);
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["path"])
    );
    // The second request carries the assistant's call and the tool's result.
    let second = &requests[1].1;
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
    let result = tool_result(&tool_message(second, "call_1"));
    assert_eq!(result["content"], "PR 42 touches the payment migrations.");
    assert_eq!(
        second["tools"], *tools,
        "the tools are offered in every round"
    );

    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "success");
    assert_eq!(
        r["output"]["toolCalls"],
        json!([{ "name": "doc_read", "allowed": true, "ok": true }])
    );
    // Usage adds up over both rounds.
    assert_eq!(
        r["output"]["usage"],
        json!({ "promptTokens": 2400, "completionTokens": 600, "totalTokens": 3000 })
    );
}

/// OpenAI's protocol answers each call by its id: a call the service sent without one gets
/// one, in the assistant message sent back and in the tool message answering it.
#[tokio::test]
async fn a_tool_call_without_an_id_is_answered_under_an_id_of_its_own() {
    let (_p, server, v) = tool_scenario(
        |_| {
            let mut call = tool_call("unused", "doc_read", json!({ "path": "notes/pr.md" }));
            call["tool_calls"][0].as_object_mut().unwrap().remove("id");
            vec![call, final_answer()]
        },
        TOOLS,
        "allowedTools: [doc_read]",
        |_| {},
    )
    .await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let second = &server.requests()[1].1;
    let id = second["messages"][2]["tool_calls"][0]["id"].clone();
    assert!(id.is_string(), "{second}");
    let result = tool_result(&tool_message(second, id.as_str().unwrap()));
    assert_eq!(result["content"], "PR 42 touches the payment migrations.");
}

#[tokio::test]
async fn a_tool_the_workflow_does_not_allow_is_not_executed() {
    let (p, server, v) = tool_scenario(
        |s| {
            vec![
                tool_call(
                    "call_1",
                    "http_request",
                    json!({ "method": "GET", "url": s.target_url() }),
                ),
                final_answer(),
            ]
        },
        TOOLS,
        "allowedTools: [doc_read]",
        |_| {},
    )
    .await;
    assert_eq!(server.server.target_hits.load(Ordering::SeqCst), 0);
    assert_eq!(v.status, RunStatus::Done, "the model answers anyway: {v:?}");
    assert_eq!(v.vars["plan_output"], plan_json());

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].1["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["doc_read"],
        "a tool the cascade refuses is not offered"
    );
    // Called anyway, it is refused.
    let error = tool_result(&tool_message(&requests[1].1, "call_1"));
    let error = error["error"].as_str().unwrap();
    assert!(
        error.starts_with("permission denied:") && error.contains("allowedTools [doc_read]"),
        "{error}"
    );
    let r = p.plan_result(&v);
    let calls = &r["output"]["toolCalls"];
    assert_eq!(calls[0]["name"], "http_request");
    assert_eq!(calls[0]["allowed"], false);
    assert_eq!(calls[0]["ok"], false);
    assert!(
        calls[0]["error"]
            .as_str()
            .unwrap()
            .contains("permission denied")
    );

    // A workflow without allowedTools gets the default pool: doc_read yes, http_request no.
    let (p, server, v) = tool_scenario(
        |s| {
            vec![
                tool_call("a", "doc_read", json!({ "path": "notes/pr.md" })),
                tool_call("b", "http_request", json!({ "url": s.target_url() })),
                final_answer(),
            ]
        },
        TOOLS,
        "",
        |_| {},
    )
    .await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(server.server.target_hits.load(Ordering::SeqCst), 0);
    let third = &server.requests()[2].1;
    assert!(tool_result(&tool_message(third, "a"))["content"].is_string());
    let error = tool_result(&tool_message(third, "b"))["error"].to_string();
    assert!(error.contains("default tool pool"), "{error}");
    let calls = &p.plan_result(&v)["output"]["toolCalls"];
    assert_eq!(calls[0]["allowed"], true);
    assert_eq!(calls[1]["allowed"], false);
}

#[tokio::test]
async fn tenant_and_project_denials_win_over_the_workflows_allowed_tools() {
    for level in ["tenant", "project"] {
        let (p, server, v) = tool_scenario(
            |_| {
                vec![
                    tool_call("call_1", "doc_read", json!({ "path": "notes/pr.md" })),
                    final_answer(),
                ]
            },
            TOOLS,
            "allowedTools: [doc_read]",
            |p| {
                let dir = match level {
                    "tenant" => p.project.parent().unwrap().join("_tenant/_vance"),
                    _ => p.project.join("_vance"),
                };
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("settings.yaml"), "tools:\n  denied: [doc_read]\n")
                    .unwrap();
            },
        )
        .await;
        assert_eq!(v.status, RunStatus::Done, "{level}: {v:?}");
        let error = tool_result(&tool_message(&server.requests()[1].1, "call_1"));
        let error = error["error"].as_str().unwrap();
        assert!(
            error.starts_with("permission denied:")
                && error.contains(&format!("the {level}'s tools.denied")),
            "{level}: {error}"
        );
        assert!(!error.contains("payment"), "the document was not read");
        let calls = &p.plan_result(&v)["output"]["toolCalls"];
        assert_eq!(calls[0]["allowed"], false, "{level}");
    }
}

/// A tool the workflow allows but the recipe does not offer is refused like a denied one:
/// it does not run, and the call is recorded as not allowed.
#[tokio::test]
async fn a_call_to_a_tool_the_recipe_does_not_offer_is_refused_and_recorded_so() {
    let (p, server, v) = tool_scenario(
        |s| {
            vec![
                tool_call(
                    "call_1",
                    "http_request",
                    json!({ "method": "GET", "url": s.target_url() }),
                ),
                final_answer(),
            ]
        },
        "tools: [doc_read]\n",
        "allowedTools: [doc_read, http_request]",
        |_| {},
    )
    .await;
    assert_eq!(v.status, RunStatus::Done, "the model answers anyway: {v:?}");
    assert_eq!(server.server.target_hits.load(Ordering::SeqCst), 0);
    let error = tool_result(&tool_message(&server.requests()[1].1, "call_1"));
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("offers [doc_read]"),
        "{error}"
    );
    let calls = &p.plan_result(&v)["output"]["toolCalls"];
    assert_eq!(calls[0]["name"], "http_request");
    assert_eq!(calls[0]["allowed"], false);
    assert_eq!(calls[0]["ok"], false);
}

#[tokio::test]
async fn more_tool_rounds_than_max_tool_rounds_is_a_technical_error() {
    let (p, server, v) = tool_scenario(
        // The model never stops calling tools.
        |_| {
            vec![tool_call(
                "again",
                "doc_read",
                json!({ "path": "notes/pr.md" }),
            )]
        },
        &format!(
            "{TOOLS}maxToolRounds: 2\nprices: {{ inputPerMTokUsd: 1.0, outputPerMTokUsd: 2.0 }}\n"
        ),
        "allowedTools: [doc_read]",
        |_| {},
    )
    .await;
    assert_eq!(v.current_state.as_deref(), Some("broken"), "{v:?}");
    assert_eq!(
        server.requests().len(),
        3,
        "two rounds of calls, then the limit"
    );
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    let error = r["error"].as_str().unwrap();
    assert!(error.contains("maxToolRounds (2)"), "{error}");
    assert_eq!(r["output"]["toolCalls"].as_array().unwrap().len(), 2);
    assert_eq!(r["output"]["usage"]["totalTokens"], 4500);
    // The rounds were paid for: 3 × (1200 × $1/M + 300 × $2/M).
    let cost = r["output"]["costUsd"].as_f64().unwrap();
    assert!((cost - 0.0054).abs() < 1e-12, "{cost}");
}

const PRICED: &str = "prices: { inputPerMTokUsd: 1.0, outputPerMTokUsd: 2.0 }\n";

/// One round of a tool call, then `then` for every later request.
fn a_round_then(then: Canned) -> Canned {
    Canned::Steps(vec![
        Canned::Script(vec![tool_call(
            "first",
            "doc_read",
            json!({ "path": "notes/pr.md" }),
        )]),
        then,
    ])
}

/// The `pr-review` run of [`tool_scenario`]'s project against `canned`, its workflow's text
/// passed through `edit`.
async fn priced_tool_run(
    canned: Canned,
    head: &str,
    edit: fn(String) -> String,
) -> (Project, Fake, RunView) {
    let server = fake(canned).await;
    let p = project(|rt| rt).await;
    std::fs::create_dir_all(p.project.join("notes")).unwrap();
    std::fs::write(p.project.join("notes/pr.md"), "PR 42").unwrap();
    p.recipe(
        "reviewer",
        &recipe(&server.base_url(), &format!("{TOOLS}{PRICED}")),
    );
    p.workflow("pr-review", &edit(workflow("reviewer", head)));
    let view = p.run_pr("pr-review").await;
    p.assert_key_not_journaled(&view);
    (p, server, view)
}

#[tokio::test]
async fn rounds_before_a_failed_round_count_against_the_cost_bound() {
    let (p, server, v) = priced_tool_run(
        a_round_then(Canned::Status(500, "upstream exploded")),
        "allowedTools: [doc_read]\nbounds:\n  maxTotalCostUsd: 0.001",
        |w| w,
    )
    .await;
    assert_eq!(
        server.requests().len(),
        2,
        "a round of calls, then the error"
    );
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    assert!(r["error"].as_str().unwrap().contains("500"), "{r}");
    // The first round was paid for: 1200 × $1/M + 300 × $2/M, past the bound.
    assert_eq!(r["output"]["usage"]["totalTokens"], 1500, "{r}");
    let cost = r["output"]["costUsd"].as_f64().unwrap();
    assert!((cost - 0.0018).abs() < 1e-12, "{cost}");
    assert_eq!(r["output"]["toolCalls"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    let reason = v.reason.as_deref().unwrap();
    assert!(
        reason.starts_with("bounds exhausted: maxTotalCostUsd"),
        "{reason}"
    );
}

#[tokio::test]
async fn rounds_before_a_timeout_are_counted() {
    let (p, _server, v) = priced_tool_run(
        a_round_then(Canned::Slow(Duration::from_secs(20), String::new())),
        "allowedTools: [doc_read]",
        |w| w.replace("timeoutSeconds: 5", "timeoutSeconds: 1"),
    )
    .await;
    assert_eq!(v.current_state.as_deref(), Some("slow"), "{v:?}");
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "timeout");
    assert_eq!(r["output"]["usage"]["totalTokens"], 1500, "{r}");
    let cost = r["output"]["costUsd"].as_f64().unwrap();
    assert!((cost - 0.0018).abs() < 1e-12, "{cost}");
    assert_eq!(r["output"]["data"]["error"], r["error"], "{r}");
}

#[tokio::test]
async fn an_agent_s_http_request_is_held_to_the_tenant_s_egress_policy() {
    let script = |s: &Fake| {
        vec![
            tool_call("call_1", "http_request", json!({ "url": s.target_url() })),
            final_answer(),
        ]
    };
    let (_, server, v) = tool_scenario(script, TOOLS, "allowedTools: [http_request]", |_| {}).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(server.server.target_hits.load(Ordering::SeqCst), 0);
    let error = tool_result(&tool_message(&server.requests()[1].1, "call_1"));
    let error = error["error"].as_str().unwrap();
    assert!(
        error.starts_with("permission denied:") && error.contains("[MAG-EG001]"),
        "{error}"
    );

    // Allowed by the tenant, the same call reaches the target.
    let allow = |p: &Project| {
        let settings = p.project.parent().unwrap().join("_tenant/_vance");
        std::fs::create_dir_all(&settings).unwrap();
        std::fs::write(
            settings.join("settings.yaml"),
            "egress:\n  allowHosts: [\"127.0.0.1\"]\n",
        )
        .unwrap();
    };
    let (_, server, v) = tool_scenario(script, TOOLS, "allowedTools: [http_request]", allow).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(server.server.target_hits.load(Ordering::SeqCst), 1);
}
