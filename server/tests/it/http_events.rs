//! Event triggers: the event document's Bearer token (or an API token for an event without
//! one), its methods (405 otherwise), the body as `params.payload`, and the body limit.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

const ECHO: &str = r#"
parameters:
  payload: { type: object, required: false }
  source: { type: string, required: false }
start: done
states:
  done: { type: terminal, result: received }
"#;

fn setup(s: &Server) {
    let vance = s.root.join("acme/shop/_vance");
    write(&vance.join("workflows/echo.yaml"), ECHO);
    write(
        &vance.join("events/github-pr.yaml"),
        "description: test\nworkflow: echo\nmethods: [POST]\nauth:\n  tokenSetting: events.github.token\nparams:\n  source: github\n",
    );
    write(&vance.join("events/open.yaml"), "workflow: echo\n");
    write(
        &vance.join("events/unset.yaml"),
        "workflow: echo\nauth:\n  tokenSetting: events.nope.token\n",
    );
    write(
        &vance.join("settings.yaml"),
        "events:\n  github:\n    token: hook-secret\n",
    );
}

#[tokio::test]
async fn an_event_starts_its_workflow_with_the_payload() {
    let s = Server::start().await;
    setup(&s);
    let url = "/brain/acme/event/shop/github-pr";
    let r = s
        .post(url, Some("hook-secret"))
        .json(&json!({"action": "opened", "number": 7}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let started: Value = r.json().await.unwrap();
    assert_eq!(started["workflowName"], "echo");
    let run = started["workflowRunId"].as_str().unwrap();
    let v = s.wait_status("shop", run, &["DONE"]).await;
    assert_eq!(v["params"]["payload"]["number"], 7);
    assert_eq!(v["params"]["source"], "github");
    assert_eq!(v["startedBy"], "event:github-pr");
    // A byte-order mark before the JSON (as Windows tools write it) is no part of it, and a
    // body of nothing but the mark is an empty one: no payload.
    for (body, payload) in [
        (
            &b"\xEF\xBB\xBF{\"number\": 8}"[..],
            Some(json!({"number": 8})),
        ),
        (b"\xEF\xBB\xBF", None),
    ] {
        let r = s
            .post(url, Some("hook-secret"))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        let started: Value = r.json().await.unwrap();
        let run = started["workflowRunId"].as_str().unwrap();
        let v = s.wait_status("shop", run, &["DONE"]).await;
        assert_eq!(v["params"].get("payload"), payload.as_ref(), "{v}");
    }

    let r = s
        .post(url, Some("wrong"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (401, "MAG-HTTP-401".into()));
    let r = s.post(url, None).json(&json!({})).send().await.unwrap();
    assert_eq!(code(r).await, (401, "MAG-HTTP-401".into()));
    // API tokens are not event tokens.
    let r = s
        .post(url, Some(ACME))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    let r = s.get(url, Some("hook-secret")).send().await.unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "POST");
    assert_eq!(code(r).await.1, "MAG-HTTP-405");
    // The event route is GET|POST (reference §8.6): another method starts nothing.
    let r = auth(s.client.delete(s.url(url)), Some("hook-secret"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(code(r).await.1, "MAG-HTTP-405");

    let big = vec![b'x'; 2 * 1024 * 1024];
    let r = s
        .post(url, Some("hook-secret"))
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MAG-HTTP-413", "{body}");
    // The refusal says how much the server takes.
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&magrathea_server::http::BODY_LIMIT.to_string()),
        "{body}"
    );

    // An unknown event is 404 only to an API token that may run workflows.
    let r = s
        .post("/brain/acme/event/shop/nope", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (404, "MAG-HTTP-404".into()));
    // Events are per project: globex has no such event, and acme's event token is no
    // credential there.
    let r = s
        .post("/brain/globex/event/shop/github-pr", Some("hook-secret"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "events are per project");
    // A token setting that is not configured refuses every request.
    let r = s
        .post("/brain/acme/event/shop/unset", None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

/// §8.6: the route is `GET|POST`; a document that names no `methods:` takes both.
#[tokio::test]
async fn an_event_without_auth_takes_an_api_token_and_get_with_the_query_as_payload() {
    let s = Server::start().await;
    setup(&s);
    let r = s
        .get(
            "/brain/acme/event/shop/open?ref=main&tag=a&tag=b%20c",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let started: Value = r.json().await.unwrap();
    let v = s
        .wait_status(
            "shop",
            started["workflowRunId"].as_str().unwrap(),
            &["DONE"],
        )
        .await;
    // A key given twice is the list of its values, in order.
    assert_eq!(
        v["params"]["payload"],
        json!({"ref": "main", "tag": ["a", "b c"]}),
        "{v}"
    );
    let r = s
        .post("/brain/acme/event/shop/open", Some(ACME))
        .json(&json!({"ref": "dev"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
}

/// A sender's retry with the same `Idempotency-Key` starts nothing new: 200 with the first
/// run; another key, or the same key on another event, starts a run of its own.
#[tokio::test]
async fn an_idempotency_key_makes_an_event_call_repeatable() {
    let s = Server::start().await;
    setup(&s);
    write(
        &s.root.join("acme/shop/_vance/events/other.yaml"),
        "workflow: echo\n",
    );
    let call = |event: &'static str, key: &'static str| {
        s.post(&format!("/brain/acme/event/shop/{event}"), Some(ACME))
            .header("Idempotency-Key", key)
            .json(&json!({"n": 1}))
            .send()
    };
    let first = call("open", "delivery-1").await.unwrap();
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.unwrap();
    let again = call("open", "delivery-1").await.unwrap();
    assert_eq!(again.status(), 200);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["workflowRunId"], first["workflowRunId"]);
    for (event, key) in [("open", "delivery-2"), ("other", "delivery-1")] {
        let r = call(event, key).await.unwrap();
        assert_eq!(r.status(), 202, "{event} {key}");
        let started: Value = r.json().await.unwrap();
        assert_ne!(started["workflowRunId"], first["workflowRunId"]);
    }
    let r = call("open", "").await.unwrap();
    assert_eq!(
        code(r).await,
        (400, "MAG-HTTP-INVALID-IDEMPOTENCY-KEY".into())
    );
}
