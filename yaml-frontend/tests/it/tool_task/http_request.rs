//! The built-in `http_request` tool, from a workflow and called directly, against the test's
//! HTTP server.

use super::*;

#[tokio::test]
async fn http_request_from_yaml_routes_on_the_status_and_a_5xx_or_a_timeout_as_a_technical_error() {
    let base = http_server().await;
    let e = env().await;
    e.workflow(
        "call",
        r##"
parameters:
  base: { type: string, required: true }
  path: { type: string, required: true }
  timeout: { type: number, required: true }
allowedTools: [http_request]
start: call
states:
  call:
    type: tool_task
    tool: http_request
    params:
      method: post
      url: "${params.base}${params.path}"
      headers: { X-Token: secret }
      body: { hello: world }
      timeoutSeconds: "${params.timeout}"
    storeAs: resp
    on:
      success: route
    catch:
      technical_error: broken
  route:
    type: condition_task
    transitions:
      - if: "#state['resp']['status'] == 200"
        to: ok
      - else: not_ok
  ok: { type: terminal, result: "${state.resp.body.token}" }
  not_ok: { type: terminal, result: "status ${state.resp.status}" }
  broken: { type: terminal, outcome: failure, result: "${state.resp.error}" }
"##,
    );

    let ok = e
        .run(
            "call",
            json!({"base": base, "path": "/echo", "timeout": 0.5}),
        )
        .await;
    assert_eq!(ok.status, RunStatus::Done, "{ok:?}");
    assert_eq!(ok.result, Some(json!("secret")));
    let resp = &ok.vars["resp"];
    assert_eq!(resp["status"], 200);
    assert_eq!(resp["headers"]["x-served-by"], "test");
    assert_eq!(resp["body"]["method"], "POST");
    assert_eq!(resp["body"]["contentType"], "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(resp["body"]["body"].as_str().unwrap()).unwrap(),
        json!({"hello": "world"})
    );

    let missing = e
        .run(
            "call",
            json!({"base": base, "path": "/missing", "timeout": 0.5}),
        )
        .await;
    assert_eq!(missing.status, RunStatus::Done, "{missing:?}");
    assert_eq!(missing.result, Some(json!("status 404")));
    assert_eq!(missing.vars["resp"]["body"], "no such thing");

    // A server error routes as technical_error, its answer beside the error.
    let failing = e
        .run(
            "call",
            json!({"base": base, "path": "/other", "timeout": 0.5}),
        )
        .await;
    assert_eq!(failing.status, RunStatus::Failed, "{failing:?}");
    assert_eq!(e.outcomes(&failing), vec!["technical_error"]);
    assert_eq!(failing.vars["resp"]["status"], 500, "{failing:?}");
    assert_eq!(failing.vars["resp"]["body"], "boom");
    let msg = failing.result.unwrap().as_str().unwrap().to_string();
    assert!(msg.contains("answered 500"), "{msg}");

    let slow = e
        .run(
            "call",
            json!({"base": base, "path": "/slow", "timeout": 0.5}),
        )
        .await;
    assert_eq!(slow.status, RunStatus::Failed, "{slow:?}");
    assert_eq!(e.outcomes(&slow), vec!["technical_error"]);
    let msg = slow.result.unwrap().as_str().unwrap().to_string();
    assert!(
        msg.contains("[MAG-TL004]") && msg.contains("timed out"),
        "{msg}"
    );
}

#[tokio::test]
async fn http_request_directly_text_bodies_limits_and_transport_errors() {
    let base = http_server().await;
    let e = env().await;
    let ctx = e.ctx();
    let http = |params: Value| {
        let rt = e.runtime.clone();
        let ctx = ctx.clone();
        async move { rt.invoke_tool("http_request", params, &ctx).await }
    };

    let r = http(json!({"url": format!("{base}/echo"), "body": "raw text"}))
        .await
        .unwrap();
    assert_eq!(r["status"], 200);
    assert_eq!(r["body"]["method"], "GET");
    assert_eq!(r["body"]["body"], "raw text");
    assert_eq!(r["body"]["contentType"], Value::Null);

    // A 5xx is the service failing (reference §4.2: technical_error), its answer kept.
    let e500 = http(json!({"url": format!("{base}/other"), "method": "DELETE"}))
        .await
        .unwrap_err();
    assert_eq!(e500.outcome(), "technical_error");
    assert!(e500.to_string().contains("answered 500"), "{e500}");
    let magrathea_exec::ToolError::ServiceFailed { response, .. } = &e500 else {
        panic!("{e500:?}");
    };
    assert_eq!(response["status"], 500);
    assert_eq!(response["body"], "boom");

    let r = http(json!({"url": format!("{base}/big"), "maxResponseBytes": 5000}))
        .await
        .unwrap();
    assert_eq!(r["body"].as_str().unwrap().len(), 5000);
    let err = http(json!({"url": format!("{base}/big"), "maxResponseBytes": 4999}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.contains("maxResponseBytes")),
        "{err}"
    );

    let err = http(json!({"url": format!("{base}/slow"), "timeoutSeconds": 0.2}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.contains("timed out")),
        "{err}"
    );

    // A port nobody listens on: connection refused.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let err = http(json!({"url": format!("http://127.0.0.1:{port}/")}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Failed(_)), "{err}");
    assert_eq!(err.outcome(), "technical_error");

    for (params, needle) in [
        (json!({}), "`params.url` is required"),
        (json!({"url": "ftp://x/"}), "http or https"),
        (json!({"url": "not a url"}), "invalid url"),
        (json!({"url": base.clone(), "method": "NO PE"}), "method"),
        (json!({"url": base.clone(), "timeout": 3}), "timeoutSeconds"),
        (
            json!({"url": base.clone(), "headers": {"bad header": "x"}}),
            "header",
        ),
    ] {
        let err = http(params.clone()).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidParams(m) if m.contains(needle)),
            "{params}: {err}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// doc_read / doc_list
