//! What a model's reply makes of a step: success, agent errors, HTTP errors and timeouts,
//! cost limits, recipes and host chat engines.

use super::*;

#[tokio::test]
async fn a_valid_reply_succeeds_stores_data_and_journals_usage() {
    let data = json!({ "risk": "medium", "focus_areas": ["migrations", "auth"] });
    let reply = json!({ "success": true, "data": data }).to_string();
    let (p, server, v) = scenario(Canned::Reply(reply), "", "").await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["plan_output"], data);
    assert_eq!(v.result, Some(json!({ "risk": "medium" })));

    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "success");
    assert_eq!(r["output"]["data"], data);
    assert_eq!(
        r["output"]["usage"],
        json!({ "promptTokens": 1200, "completionTokens": 300, "totalTokens": 1500 })
    );
    assert_eq!(r["output"]["costUsd"], Value::Null, "no prices, no cost");

    // The request spoke the chat-completions protocol with the key and the recipe's model.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let (auth, body) = &requests[0];
    assert_eq!(auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["response_format"], json!({ "type": "json_object" }));
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][0]["content"], "You review pull requests.");
    assert_eq!(body["messages"][1]["role"], "user");
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("Analyse PR https://git.example/pr/42"),
        "{user}"
    );
    assert!(
        user.contains("focus_areas") && user.contains("\"success\""),
        "{user}"
    );
}

#[tokio::test]
async fn success_false_is_an_agent_error_caught_with_the_reply_as_output() {
    let reply = json!({ "success": false, "error": "cannot open the PR" });
    let (p, _server, v) = scenario(Canned::Reply(reply.to_string()), "", "").await;
    assert_eq!(v.status, RunStatus::Failed);
    assert_eq!(
        v.current_state.as_deref(),
        Some("review"),
        "routed by catch"
    );
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "agent_error");
    assert_eq!(r["output"]["data"], reply, "output = lastInvalid");
    assert_eq!(r["output"]["usage"]["totalTokens"], 1500);
    assert!(
        r["error"].as_str().unwrap().contains("cannot open the PR"),
        "{r}"
    );
    assert_eq!(v.vars["plan_output"], reply);
}

#[tokio::test]
async fn a_schema_violation_is_an_agent_error_with_the_invalid_reply() {
    let reply = json!({ "success": true, "data": { "risk": "catastrophic", "focus_areas": [1] } });
    let (p, _server, v) = scenario(Canned::Reply(reply.to_string()), "", "").await;
    assert_eq!(v.current_state.as_deref(), Some("review"));
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "agent_error");
    assert_eq!(r["output"]["data"], reply);
    let error = r["error"].as_str().unwrap();
    assert!(error.contains("does not match the schema"), "{error}");
    assert!(error.contains("/risk"), "{error}");

    // A missing property of the properties map is a violation too.
    let reply = json!({ "success": true, "data": { "risk": "low" } });
    let (p, _server, v) = scenario(Canned::Reply(reply.to_string()), "", "").await;
    assert_eq!(p.plan_result(&v)["outcome"], "agent_error");
}

#[tokio::test]
async fn malformed_json_is_an_agent_error_with_the_raw_text() {
    let text = "Sure! Here is the plan: {success: yes";
    let (p, _server, v) = scenario(Canned::Reply(text.into()), "", "").await;
    assert_eq!(v.current_state.as_deref(), Some("review"));
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "agent_error");
    assert_eq!(r["output"]["data"], text);
}

#[tokio::test]
async fn http_500_is_a_technical_error() {
    let (p, _server, v) = scenario(Canned::Status(500, "upstream exploded"), "", "").await;
    assert_eq!(v.current_state.as_deref(), Some("broken"));
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("500") && error.contains("upstream exploded"),
        "{error}"
    );
}

#[tokio::test]
async fn an_error_body_echoing_the_key_does_not_journal_it() {
    // `scenario` asserts that the key is nowhere in the journal.
    let (p, _server, v) = scenario(Canned::EchoAuth, "", "").await;
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("401") && error.contains("<redacted>"),
        "{error}"
    );
}

/// An error quotes the start of the body only: the key is taken out before the quote is cut,
/// so that its end falling inside the key leaves no part of it.
#[tokio::test]
async fn an_error_body_echoing_the_key_where_its_quote_ends_journals_no_part_of_it() {
    // `scenario` asserts that neither the key nor its start is anywhere in the journal.
    let (p, _server, v) = scenario(Canned::EchoAuthAfter(480), "", "").await;
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    assert!(r["error"].as_str().unwrap().contains("401"), "{r}");
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let reply = json!({ "success": true, "data": {} }).to_string();
    let server = fake(Canned::Slow(Duration::from_secs(20), reply)).await;
    let p = project(|rt| rt).await;
    p.recipe("reviewer", &recipe(&server.base_url(), ""));
    p.workflow(
        "pr-review",
        &workflow("reviewer", "").replace("timeoutSeconds: 5", "timeoutSeconds: 0.3"),
    );
    let started = std::time::Instant::now();
    let v = p.run_pr("pr-review").await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(v.current_state.as_deref(), Some("slow"));
    assert_eq!(p.plan_result(&v)["outcome"], "timeout");
}

#[tokio::test]
async fn the_recipe_timeout_applies_when_the_state_has_none() {
    let reply = json!({ "success": true, "data": {} }).to_string();
    let server = fake(Canned::Slow(Duration::from_secs(20), reply)).await;
    let p = project(|rt| rt).await;
    p.recipe(
        "reviewer",
        &recipe(&server.base_url(), "timeoutSeconds: 0.3\n"),
    );
    p.workflow(
        "pr-review",
        &workflow("reviewer", "").replace("    timeoutSeconds: 5\n", ""),
    );
    let v = p.run_pr("pr-review").await;
    assert_eq!(p.plan_result(&v)["outcome"], "timeout");
}

#[tokio::test]
async fn priced_usage_exhausts_max_total_cost_usd() {
    let reply = json!({ "success": true, "data": { "risk": "low", "focus_areas": [] } });
    let (p, _server, v) = scenario(
        Canned::Reply(reply.to_string()),
        "prices: { inputPerMTokUsd: 1.0, outputPerMTokUsd: 2.0 }\n",
        "bounds:\n  maxTotalCostUsd: 0.000001\n",
    )
    .await;
    assert_eq!(v.status, RunStatus::Failed);
    let reason = v.reason.as_deref().unwrap();
    assert!(
        reason.starts_with("bounds exhausted: maxTotalCostUsd"),
        "{reason}"
    );
    let cost = p.plan_result(&v)["output"]["costUsd"].as_f64().unwrap();
    // 1200 prompt tokens at $1/M + 300 completion tokens at $2/M.
    assert!((cost - 0.0018).abs() < 1e-12, "{cost}");

    // Within the bound the same run succeeds.
    let (_p, _server, v) = scenario(
        Canned::Reply(reply.to_string()),
        "prices: { inputPerMTokUsd: 1.0, outputPerMTokUsd: 2.0 }\n",
        "bounds:\n  maxTotalCostUsd: 1.0\n",
    )
    .await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
}

/// The cost bound is checked after each completion, before the next enqueue, a retry's too: a
/// state retrying a paid reply stops once the bound is passed, not after all its attempts.
#[tokio::test]
async fn max_total_cost_usd_stops_a_retrying_step() {
    let server = fake(Canned::Reply("not json".into())).await;
    let p = project(|rt| rt).await;
    p.recipe(
        "reviewer",
        &recipe(
            &server.base_url(),
            "prices: { inputPerMTokUsd: 1.0, outputPerMTokUsd: 2.0 }\n",
        ),
    );
    // Each attempt costs 0.0018 USD: the bound is passed by the second.
    p.workflow(
        "pr-review",
        &workflow("reviewer", "bounds:\n  maxTotalCostUsd: 0.003\n").replace(
            "    storeAs: plan_output\n",
            "    storeAs: plan_output\n    retry: { maxAttempts: 10, on: [agent_error] }\n",
        ),
    );
    let v = p.run_pr("pr-review").await;
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    assert!(
        v.reason
            .as_deref()
            .unwrap()
            .starts_with("bounds exhausted: maxTotalCostUsd 0.003"),
        "{v:?}"
    );
    let attempts = p
        .journal(&v)
        .iter()
        .filter(|r| r["type"] == "TaskResultRecord")
        .count();
    assert_eq!(attempts, 2);
}

#[tokio::test]
async fn an_inline_recipe_definition_is_rejected_at_load_time() {
    let p = project(|rt| rt).await;
    p.workflow(
        "inline",
        "start: a\nstates:\n  a:\n    type: agent_task\n    recipe:\n      engine: jeltz\n      \
         model: gpt-test\n    params: { prompt: hi }\n    on: { success: done }\n  done:\n    \
         type: terminal\n",
    );
    let err = p
        .runtime
        .start(&p.engine, &p.scope, "inline", json!({}), "tester")
        .await
        .unwrap_err();
    assert!(matches!(err, YamlStartError::Invalid(_)), "{err}");
    assert!(err.to_string().contains("recipe"), "{err}");
}

#[tokio::test]
async fn an_unknown_recipe_names_both_places_searched() {
    let p = project(|rt| rt).await;
    p.workflow("pr-review", &workflow("nowhere", ""));
    let v = p.run_pr("pr-review").await;
    assert_eq!(v.current_state.as_deref(), Some("broken"));
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("acme/shop/_vance/recipes/nowhere.yaml")
            && error.contains("acme/_tenant/_vance/recipes/nowhere.yaml"),
        "{error}"
    );
}

#[tokio::test]
async fn an_unset_key_variable_is_a_technical_error_before_any_call() {
    let server = fake(Canned::Reply("{}".into())).await;
    let p = project(|rt| rt.with_agent_env(|_| None)).await;
    p.recipe("reviewer", &recipe(&server.base_url(), ""));
    p.workflow("pr-review", &workflow("reviewer", ""));
    let v = p.run_pr("pr-review").await;
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    assert!(r["error"].as_str().unwrap().contains(KEY_VAR), "{r}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_chat_engine_from_the_tenant_returns_the_last_assistant_message() {
    let server = fake(Canned::Reply("LGTM, ship it".into())).await;
    let p = project(|rt| rt).await;
    let tenant = p.project.parent().unwrap().join("_tenant/_vance/recipes");
    write(
        &tenant,
        "chatty",
        &format!(
            "engine: chat\nbaseUrl: {}\nmodel: gpt-test\nprices: {{ inputPerMTokUsd: 0.15, \
             outputPerMTokUsd: 0.6 }}\n",
            server.base_url()
        ),
    );
    p.workflow("pr-review", &workflow("chatty", ""));
    let v = p.run_pr("pr-review").await;
    assert_eq!(v.vars["plan_output"], "LGTM, ship it");
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "success");
    assert!(r["output"]["costUsd"].as_f64().unwrap() > 0.0);
    let (auth, body) = &server.requests()[0];
    assert_eq!(auth, &None, "no apiKeyEnv, no Authorization header");
    assert_eq!(body.get("response_format"), None);
    assert_eq!(
        body["messages"],
        json!([{ "role": "user", "content": "Analyse PR https://git.example/pr/42, identify risks, propose review plan." }])
    );
}

/// A state's `params.model` and `params.temperature` win over its recipe's (a recipe without
/// `model:` serves states that name one); a `params.model` that is not a string is a
/// `technical_error` before any call.
#[tokio::test]
async fn a_states_model_and_temperature_win_over_the_recipes() {
    let server = fake(Canned::Reply("fine".into())).await;
    let p = project(|rt| rt).await;
    p.recipe(
        "shared",
        &format!(
            "engine: chat
baseUrl: {}
temperature: 0.2
",
            server.base_url()
        ),
    );
    let doc = |model: &str| {
        format!(
            r#"
start: ask
states:
  ask:
    type: agent_task
    recipe: shared
    params:
      prompt: hello
      model: {model}
      temperature: 0.7
    storeAs: said
    on:
      success: done
    catch:
      technical_error: broken
  done:
    type: terminal
  broken:
    type: terminal
    outcome: failure
"#
        )
    };
    p.workflow("ask", &doc("gpt-state"));
    let v = p.run_pr("ask").await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["said"], "fine");
    let (_, body) = &server.requests()[0];
    assert_eq!(body["model"], "gpt-state");
    assert_eq!(body["temperature"], 0.7);

    p.workflow("ask", &doc("[not, a, string]"));
    let v = p.run_pr("ask").await;
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    assert!(
        r["error"].to_string().contains("params.model"),
        "the error names the field: {r}"
    );
    assert_eq!(server.requests().len(), 1, "no call for the bad model");
}

/// What a host engine saw of a request: the prompt, the workflow and the recipe's persona.
type Seen = Arc<Mutex<Vec<(Value, String, Value)>>>;

/// A host engine that closes with a fixed reason and notes what it saw, for the test to check
/// after the run (a panic inside the engine would only be a failed attempt).
struct Closing(CloseReason, Seen);

impl AgentEngine for Closing {
    fn run(&self, request: AgentRequest) -> BoxFuture<'_, Result<AgentReply, AgentError>> {
        let reason = self.0;
        self.1.lock().unwrap().push((
            request.engine_params["prompt"].clone(),
            request.run.workflow_name.clone(),
            request.recipe.extra["persona"].clone(),
        ));
        Box::pin(async move {
            Ok(AgentReply::new(
                reason,
                vec![ChatMessage::new("assistant", "brain the size of a planet")],
            ))
        })
    }
}

#[tokio::test]
async fn host_engines_map_close_reasons_to_outcomes() {
    for (reason, outcome) in [
        (CloseReason::Done, "success"),
        (CloseReason::AutoClose, "success"),
        (CloseReason::Stale, "technical_error"),
        (CloseReason::Stopped, "cancelled"),
        (CloseReason::UserDelete, "cancelled"),
    ] {
        let seen = Seen::default();
        let engine = Closing(reason, seen.clone());
        let p = project(|rt| rt.with_agent_engine("marvin", engine)).await;
        p.recipe("depressed", "engine: marvin\npersona: marvin\n");
        p.workflow("pr-review", &workflow("depressed", ""));
        let v = p.run_pr("pr-review").await;
        let r = p.plan_result(&v);
        assert_eq!(r["outcome"], outcome, "{reason:?}");
        if outcome == "success" {
            assert_eq!(v.vars["plan_output"], "brain the size of a planet");
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{reason:?}: one request, no retry: {seen:?}");
        let (prompt, workflow_name, persona) = &seen[0];
        assert!(
            prompt.as_str().is_some_and(|p| p.starts_with("Analyse")),
            "{prompt}"
        );
        assert_eq!(workflow_name, "pr-review");
        assert_eq!(persona, "marvin");
    }
}

// ---------------------------------------------------------------------------------------------
// Tool calling (§10: agents' tool calls pass the same permission cascade as tool_task).
