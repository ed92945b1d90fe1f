//! Webhooks over real HTTP: correct, wrong, missing and rotated signatures, an expired
//! timestamp, a duplicate inside and after the dedupe window, and every rejection on record.

use crate::http_common;

use std::sync::Arc;

use http_common::{ACME, GLOBEX, Server, write};
use magrathea_server::triggers::{ManualClock, TriggerConfig};
use magrathea_server::webhook::sign;
use magrathea_yaml::schema::EventDocument;
use serde_json::{Value, json};

/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200_000;
const PATH_TOKEN: &str = "9f2c4d6e8a0b1c3d5e7f9a1b3c5d7e9f0a2b4c6d8e0f1a3b";

const QUICK: &str = "start: done\nstates:\n  done: { type: terminal, result: ok }\n";

const GITHUB: &str = r#"
workflow: quick
params: { source: github }
webhook:
  tokenSetting: webhooks.github.path
  signature:
    secretSetting: webhooks.github.secret
    header: X-Hub-Signature-256
    prefix: "sha256="
  dedupe:
    header: X-GitHub-Delivery
    window: 300s
  headers: [X-GitHub-Event]
"#;

const STRIPE_LIKE: &str = r#"
workflow: quick
webhook:
  tokenSetting: webhooks.billing.path
  signature:
    secretSetting: webhooks.billing.secret
    header: X-Signature
    timestampHeader: X-Timestamp
    tolerance: 300s
"#;

fn settings(secrets: &str) -> String {
    format!(
        "webhooks:\n  github:\n    path: {PATH_TOKEN}\n    secret: {secrets}\n  billing:\n    path: b{PATH_TOKEN}\n    secret: billing-secret\n"
    )
}

struct Fixture {
    server: Server,
    clock: ManualClock,
}

impl Fixture {
    async fn new() -> Self {
        let clock = ManualClock::new(T0);
        let config = TriggerConfig {
            clock: Arc::new(clock.clone()),
            ..TriggerConfig::default()
        };
        let server = Server::start_with(|c| c.triggers(config)).await;
        let vance = server.root.join("acme/shop/_vance");
        write(&vance.join("workflows/quick.yaml"), QUICK);
        write(&vance.join("events/github.yaml"), GITHUB);
        write(&vance.join("events/billing.yaml"), STRIPE_LIKE);
        write(
            &vance.join("settings.yaml"),
            &settings("[new-secret, old-secret]"),
        );
        let f = Self { server, clock };
        f.resync().await;
        f
    }

    async fn resync(&self) {
        let (status, body) = http_common::code(
            self.server
                .post("/brain/acme/project/shop/triggers/resync", Some(ACME))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }

    fn config(doc: &str) -> EventDocument {
        serde_yaml_ng::from_str(doc).unwrap()
    }

    /// POSTs `body` to the GitHub webhook with `signature` (none when `None`) and `delivery`.
    async fn github(&self, body: &str, signature: Option<String>, delivery: &str) -> (u16, Value) {
        let mut req = self
            .server
            .client
            .post(
                self.server
                    .url(&format!("/v1/workflow-webhooks/{PATH_TOKEN}")),
            )
            .header("X-GitHub-Event", "push")
            .header("X-GitHub-Delivery", delivery)
            .header("Content-Type", "application/json")
            .body(body.to_owned());
        if let Some(sig) = signature {
            req = req.header("X-Hub-Signature-256", sig);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    fn signed(secret: &str, body: &str) -> Option<String> {
        let cfg = Self::config(GITHUB);
        Some(sign(
            secret,
            None,
            body.as_bytes(),
            cfg.webhook.as_ref().unwrap(),
        ))
    }

    async fn deliveries(&self, trigger: &str) -> Vec<Value> {
        let v: Value = self
            .server
            .get_json(
                &format!("/brain/acme/project/shop/triggers/deliveries?trigger={trigger}"),
                Some(ACME),
            )
            .await;
        v["deliveries"].as_array().unwrap().clone()
    }

    /// The statuses of the trigger's deliveries, newest first.
    async fn statuses(&self, trigger: &str) -> Vec<String> {
        self.deliveries(trigger)
            .await
            .iter()
            .map(|d| d["status"].as_str().unwrap().to_owned())
            .collect()
    }

    async fn run(&self, id: &str) -> Value {
        self.server
            .get_json(
                &format!("/brain/acme/project/shop/workflows/runs/{id}"),
                Some(ACME),
            )
            .await
    }
}

#[tokio::test]
async fn a_correctly_signed_delivery_starts_the_workflow_with_its_body_and_headers() {
    let f = Fixture::new().await;
    let body = r#"{"action":"opened","number":7}"#;
    let (status, reply) = f
        .github(body, Fixture::signed("new-secret", body), "d-1")
        .await;
    assert_eq!(status, 202, "{reply}");
    assert_eq!(reply["duplicate"], false);
    assert_eq!(reply["workflowName"], "quick");
    let run = f.run(reply["workflowRunId"].as_str().unwrap()).await;
    assert_eq!(
        run["params"],
        json!({
            "source": "github",
            "payload": {"action": "opened", "number": 7},
            "headers": {"x-github-event": "push"},
        })
    );
    assert_eq!(run["startedBy"], "webhook:github");
    let d = f.deliveries("github").await;
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["status"], "accepted");
    assert_eq!(d[0]["runId"], reply["workflowRunId"]);
    assert_eq!(d[0]["workflowRunId"], reply["workflowRunId"]);
    assert_eq!(d[0]["dedupeKey"], "d-1");

    // A byte-order mark before the JSON (as Windows tools write it) is no part of the payload;
    // the signature covers the bytes as sent.
    let body = "\u{FEFF}{\"number\":8}";
    let (status, reply) = f
        .github(body, Fixture::signed("new-secret", body), "d-2")
        .await;
    assert_eq!(status, 202, "{reply}");
    let run = f.run(reply["workflowRunId"].as_str().unwrap()).await;
    assert_eq!(run["params"]["payload"], json!({"number": 8}), "{run}");
    // A body of nothing but the mark is an empty one: no payload.
    let body = "\u{FEFF}";
    let (status, reply) = f
        .github(body, Fixture::signed("new-secret", body), "d-3")
        .await;
    assert_eq!(status, 202, "{reply}");
    let run = f.run(reply["workflowRunId"].as_str().unwrap()).await;
    assert!(run["params"].get("payload").is_none(), "{run}");
}

#[tokio::test]
async fn wrong_and_missing_signatures_are_refused_and_recorded() {
    let f = Fixture::new().await;
    let body = r#"{"a":1}"#;
    let (status, reply) = f.github(body, Fixture::signed("guess", body), "d-1").await;
    assert_eq!(status, 401, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MAG-WH004"),
        "{reply}"
    );
    let (status, _) = f.github(body, None, "d-2").await;
    assert_eq!(status, 401);
    // A signature of another body.
    let (status, _) = f
        .github(body, Fixture::signed("new-secret", "{}"), "d-3")
        .await;
    assert_eq!(status, 401);
    let reasons: Vec<(String, String)> = f
        .deliveries("github")
        .await
        .iter()
        .map(|d| {
            (
                d["status"].as_str().unwrap().to_owned(),
                d["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        // Newest first.
        vec![
            ("rejected".into(), "bad_signature".into()),
            ("rejected".into(), "missing_signature".into()),
            ("rejected".into(), "bad_signature".into()),
        ]
    );
    // Friday's names of a delivery record: when it was delivered (RFC 3339, as atMs), and
    // the error's code and message of one that started nothing.
    for d in f.deliveries("github").await {
        assert_eq!(d["errorMessage"], d["message"], "{d}");
        let code = d["errorCode"].as_str().unwrap_or_else(|| panic!("{d}"));
        assert!(code.starts_with("MAG-WH"), "{d}");
        assert!(
            d["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("[{code}]")),
            "{d}"
        );
        let at: jiff::Timestamp = d["deliveredAt"].as_str().unwrap().parse().unwrap();
        assert_eq!(at.as_millisecond(), d["atMs"].as_i64().unwrap(), "{d}");
    }
    // Nothing started.
    let runs: Value = f
        .server
        .get_json("/brain/acme/project/shop/workflows/runs", Some(ACME))
        .await;
    assert_eq!(runs, json!([]));
}

/// Whether a webhook is paused is said only to a delivery that passed verification: one that
/// knows the path token but not the secret is refused for its signature, paused or not.
#[tokio::test]
async fn a_paused_webhook_says_so_only_to_a_signed_delivery() {
    let f = Fixture::new().await;
    let r = f
        .server
        .client
        .patch(f.server.url("/brain/acme/project/shop/triggers/github"))
        .bearer_auth(ACME)
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body = r#"{"a":1}"#;
    let (status, reply) = f.github(body, None, "d-1").await;
    assert_eq!(status, 401, "{reply}");
    let (status, reply) = f.github(body, Fixture::signed("guess", body), "d-2").await;
    assert_eq!(status, 401, "{reply}");
    let (status, reply) = f
        .github(body, Fixture::signed("new-secret", body), "d-3")
        .await;
    assert_eq!(status, 409, "{reply}");
    assert_eq!(
        reply["error"]["code"], "MAG-HTTP-TRIGGER-DISABLED",
        "{reply}"
    );
    assert_eq!(
        f.statuses("github").await,
        ["rejected", "rejected", "rejected"],
        "each refusal on record"
    );
    // The refusal's code, as Friday's delivery record names it.
    let paused = &f.deliveries("github").await[0];
    assert_eq!(paused["reason"], "trigger_disabled", "{paused}");
    assert_eq!(paused["errorCode"], "MAG-HTTP-TRIGGER-DISABLED", "{paused}");
}

#[tokio::test]
async fn both_secrets_verify_during_a_rotation_and_a_retired_one_does_not() {
    let f = Fixture::new().await;
    let body = "{}";
    let (status, _) = f
        .github(body, Fixture::signed("old-secret", body), "d-1")
        .await;
    assert_eq!(status, 202);
    let (status, _) = f
        .github(body, Fixture::signed("new-secret", body), "d-2")
        .await;
    assert_eq!(status, 202);
    write(
        &f.server.root.join("acme/shop/_vance/settings.yaml"),
        &settings("new-secret"),
    );
    let (status, _) = f
        .github(body, Fixture::signed("old-secret", body), "d-3")
        .await;
    assert_eq!(status, 401);
    let (status, _) = f
        .github(body, Fixture::signed("new-secret", body), "d-4")
        .await;
    assert_eq!(status, 202);
    let newest = &f.deliveries("github").await[0];
    assert_eq!(newest["status"], "accepted", "{newest}");
    assert!(newest["deliveredAt"].is_string(), "{newest}");
    assert!(newest.get("errorCode").is_none(), "{newest}");
    assert!(newest.get("errorMessage").is_none(), "{newest}");
}

#[tokio::test]
async fn a_duplicate_inside_the_window_answers_the_first_run_and_after_it_starts_a_new_one() {
    let f = Fixture::new().await;
    let body = r#"{"n":1}"#;
    let sig = || Fixture::signed("new-secret", body);
    let (status, first) = f.github(body, sig(), "delivery-42").await;
    assert_eq!(status, 202);
    f.clock.advance(299_000);
    let (status, again) = f.github(body, sig(), "delivery-42").await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["workflowRunId"], first["workflowRunId"]);
    f.clock.advance(2_000); // 301 s after the first: outside the window
    let (status, later) = f.github(body, sig(), "delivery-42").await;
    assert_eq!(status, 202, "{later}");
    assert_eq!(later["duplicate"], false);
    assert_ne!(later["workflowRunId"], first["workflowRunId"]);
    let statuses = f.statuses("github").await;
    // Newest first.
    assert_eq!(statuses, ["accepted", "duplicate", "accepted"]);
    // Paged, the next page's cursor is in the body and in `X-Next-Cursor`, as other lists.
    let page = |cursor: &str| {
        format!("/brain/acme/project/shop/triggers/deliveries?trigger=github&limit=2{cursor}")
    };
    let (header, first_page) = f.server.get_page(&page(""), Some(ACME)).await;
    assert_eq!(first_page["deliveries"].as_array().unwrap().len(), 2);
    let cursor = header.expect("a next page in X-Next-Cursor");
    assert_eq!(first_page["next"], cursor.as_str());
    let (header, last_page) = f
        .server
        .get_page(&page(&format!("&cursor={cursor}")), Some(ACME))
        .await;
    assert_eq!(
        last_page["deliveries"][0]["status"], "accepted",
        "{last_page}"
    );
    assert_eq!(
        (header, &last_page["next"]),
        (None, &serde_json::Value::Null)
    );
    // A cursor the list did not issue is refused, as the other lists refuse theirs.
    let (status, code) = http_common::code(
        f.server
            .get(
                "/brain/acme/project/shop/triggers/deliveries?trigger=github&cursor=zz",
                Some(ACME),
            )
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "MAG-HTTP-INVALID-CURSOR"));
}

/// A delivery whose start is refused started nothing, so its key is not spent: the sender's
/// retry is recorded as what it is, and the first one that can start starts its own run.
#[tokio::test]
async fn a_delivery_whose_start_was_refused_is_retried_as_a_first_delivery() {
    let f = Fixture::new().await;
    write(
        &f.server.root.join("acme/shop/_vance/workflows/quick.yaml"),
        "parameters:\n  payload: { type: object, required: true }\nstart: done\nstates:\n  done: { type: terminal, result: ok }\n",
    );
    let text = "Hello, World!";
    for _ in 0..2 {
        let (status, refused) = f
            .github(text, Fixture::signed("new-secret", text), "delivery-7")
            .await;
        assert_eq!(status, 400, "{refused}");
    }
    let body = r#"{"x":1}"#;
    let (status, started) = f
        .github(body, Fixture::signed("new-secret", body), "delivery-7")
        .await;
    assert_eq!(status, 202, "{started}");
    assert_eq!(started["duplicate"], false);
    let run = f.run(started["workflowRunId"].as_str().unwrap()).await;
    assert_eq!(run["params"]["payload"], json!({"x": 1}));
    let (status, again) = f
        .github(body, Fixture::signed("new-secret", body), "delivery-7")
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["workflowRunId"], started["workflowRunId"]);
    let statuses = f.statuses("github").await;
    // Newest first.
    assert_eq!(statuses, ["duplicate", "accepted", "failed", "failed"]);
}

#[tokio::test]
async fn a_delivery_to_a_workflow_that_is_not_there_is_a_refused_start_not_an_unknown_token() {
    let f = Fixture::new().await;
    std::fs::remove_file(f.server.root.join("acme/shop/_vance/workflows/quick.yaml")).unwrap();
    let body = r#"{"x":1}"#;
    let (status, refused) = f
        .github(body, Fixture::signed("new-secret", body), "delivery-9")
        .await;
    // 404 is kept for a token no webhook has.
    assert_eq!(status, 422, "{refused}");
    assert_eq!(
        refused["error"]["code"], "MAG-HTTP-TRIGGER-FAILED",
        "{refused}"
    );
    assert_eq!(f.statuses("github").await, ["failed"]);
}

#[tokio::test]
async fn a_timestamped_signature_outside_the_tolerance_is_refused_as_expired() {
    let f = Fixture::new().await;
    let cfg = Fixture::config(STRIPE_LIKE);
    let cfg = cfg.webhook.as_ref().unwrap();
    let body = r#"{"invoice":"in_1"}"#;
    let post = |ts: i64| {
        f.server
            .client
            .post(
                f.server
                    .url(&format!("/v1/workflow-webhooks/b{PATH_TOKEN}")),
            )
            .header("X-Timestamp", ts.to_string())
            .header(
                "X-Signature",
                sign("billing-secret", Some(ts), body.as_bytes(), cfg),
            )
            .body(body)
            .send()
    };
    let now_s = T0 / 1000;
    assert_eq!(post(now_s - 10).await.unwrap().status(), 202);
    let old = post(now_s - 301).await.unwrap();
    assert_eq!(old.status(), 401);
    let text = old.text().await.unwrap();
    assert!(text.contains("MAG-WH007"), "{text}");
    let d = f.deliveries("billing").await;
    assert_eq!(d[0]["reason"], "expired_timestamp");
    assert_eq!(d[1]["status"], "accepted");
}

#[tokio::test]
async fn a_wrong_method_and_an_oversized_body_are_refused_and_recorded() {
    let f = Fixture::new().await;
    let url = f.server.url(&format!("/v1/workflow-webhooks/{PATH_TOKEN}"));
    let r = f.server.client.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "POST");
    let big = "x".repeat(2 * 1024 * 1024);
    let r = f.server.client.post(&url).body(big).send().await.unwrap();
    assert_eq!(r.status(), 413);
    // Over the server's own limit, the refusal is the webhook's: its code leads the message.
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("[MAG-WH002]"),
        "{body}"
    );
    let d = f.deliveries("github").await;
    let reasons: Vec<&str> = d.iter().map(|d| d["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["body_too_large", "method_not_allowed"]);
    assert!(d[0]["message"].as_str().unwrap().starts_with("[MAG-WH002]"));
}

#[tokio::test]
async fn an_unknown_path_token_is_not_found_and_the_token_is_never_shown() {
    let f = Fixture::new().await;
    let r = f
        .server
        .client
        .post(
            f.server
                .url("/v1/workflow-webhooks/not-a-token-of-any-webhook-at-all-0000"),
        )
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // The trigger listing shows the webhook, never its token or its hash.
    let listed: Value = f
        .server
        .get_json("/v1/workflows/shop:quick/triggers", Some(ACME))
        .await;
    let text = listed.to_string();
    assert!(text.contains("\"triggerType\":\"webhook\""), "{text}");
    assert!(!text.contains(PATH_TOKEN), "{text}");
    assert!(!text.contains(&magrathea_server::webhook::path_token_hash(PATH_TOKEN)));
    // Another tenant, whose project has no such workflow, and a workflow that does not
    // exist are both not found.
    for (workflow, token) in [("shop:quick", GLOBEX), ("shop:nosuch", ACME)] {
        let r = f
            .server
            .get(&format!("/v1/workflows/{workflow}/triggers"), Some(token))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{workflow}");
    }
    // A workflow without triggers lists none.
    write(
        &f.server.root.join("acme/shop/_vance/workflows/plain.yaml"),
        QUICK,
    );
    let none: Value = f
        .server
        .get_json("/v1/workflows/shop:plain/triggers", Some(ACME))
        .await;
    assert_eq!(none["triggers"], json!([]));
}

/// POSTs an empty JSON object to the webhook with `token`; the status.
async fn deliver(server: &Server, token: &str) -> u16 {
    let r = server
        .client
        .post(server.url(&format!("/v1/workflow-webhooks/{token}")))
        .header("Content-Type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    r.status().as_u16()
}

/// The webhook triggers of `tenant`'s project `shop`, by name: (active, error).
async fn webhooks(server: &Server, tenant: &str, token: &str) -> Vec<(String, bool, String)> {
    let listed: Value = server
        .get_json(
            &format!("/brain/{tenant}/project/shop/triggers"),
            Some(token),
        )
        .await;
    let mut out: Vec<(String, bool, String)> = listed["triggers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["triggerType"] == "webhook")
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["active"].as_bool().unwrap(),
                t["error"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

async fn resync(server: &Server, tenant: &str, token: &str) {
    let (status, body) = http_common::code(
        server
            .post(
                &format!("/brain/{tenant}/project/shop/triggers/resync"),
                Some(token),
            )
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

const OPEN: &str = "workflow: quick\nwebhook:\n  tokenSetting: webhooks.open.path\n";

/// acme and globex, each with the workflow `quick` and settings giving the webhook `open` one
/// and the same path token: the token and the settings' text.
fn tenants_sharing_a_token(server: &Server) -> (String, String) {
    let token = format!("open{PATH_TOKEN}");
    let settings = format!("webhooks:\n  open:\n    path: {token}\n");
    for tenant in ["acme", "globex"] {
        let vance = server.root.join(format!("{tenant}/shop/_vance"));
        write(&vance.join("workflows/quick.yaml"), QUICK);
        write(&vance.join("settings.yaml"), &settings);
    }
    (token, settings)
}

/// How many runs the project `shop` of `tenant` has.
async fn runs_of(server: &Server, tenant: &str, bearer: &str) -> usize {
    let v: Value = server
        .get_json(
            &format!("/brain/{tenant}/project/shop/workflows/runs"),
            Some(bearer),
        )
        .await;
    v.as_array().unwrap().len()
}

/// acme's webhook `open` is registered, and a delivery to `token` starts acme's workflow
/// (its one run), never globex's.
async fn only_acme_answers(server: &Server, token: &str) {
    assert_eq!(
        webhooks(server, "acme", ACME).await,
        vec![("open".to_owned(), true, String::new())]
    );
    assert_eq!(deliver(server, token).await, 202);
    assert_eq!(runs_of(server, "acme", ACME).await, 1);
    assert_eq!(runs_of(server, "globex", GLOBEX).await, 0);
}

#[tokio::test]
async fn a_path_token_another_tenant_holds_is_refused_and_never_routes_there() {
    let server = Server::start().await;
    let (token, _) = tenants_sharing_a_token(&server);
    write(&server.root.join("acme/shop/_vance/events/open.yaml"), OPEN);
    resync(&server, "acme", ACME).await;
    // globex declares a webhook with acme's path token.
    write(
        &server.root.join("globex/shop/_vance/events/open.yaml"),
        OPEN,
    );
    resync(&server, "globex", GLOBEX).await;

    let theirs = webhooks(&server, "globex", GLOBEX).await;
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert!(!theirs[0].1, "{theirs:?}");
    assert!(theirs[0].2.contains("MAG-TR003"), "{theirs:?}");
    assert!(!theirs[0].2.contains("acme"), "{theirs:?}");
    only_acme_answers(&server, &token).await;

    // globex removing its document leaves acme's webhook answering.
    std::fs::remove_file(server.root.join("globex/shop/_vance/events/open.yaml")).unwrap();
    resync(&server, "globex", GLOBEX).await;
    assert_eq!(deliver(&server, &token).await, 202);
    assert_eq!(runs_of(&server, "acme", ACME).await, 2);
}

/// The holder letting go of its token for a moment (its settings edited, then put back) does
/// not hand it to another tenant's webhook that claims it too: the token stays its tenant's,
/// the other webhook stays refused, and deliveries go on starting the holder's runs only.
#[tokio::test]
async fn a_token_its_holder_let_go_of_for_a_moment_stays_its_tenants() {
    let server = Server::start().await;
    let (token, settings) = tenants_sharing_a_token(&server);
    for tenant in ["acme", "globex"] {
        write(
            &server
                .root
                .join(format!("{tenant}/shop/_vance/events/open.yaml")),
            OPEN,
        );
    }
    resync(&server, "acme", ACME).await;
    resync(&server, "globex", GLOBEX).await;
    assert!(!webhooks(&server, "globex", GLOBEX).await[0].1);

    // acme's settings lose the token for a moment; globex resyncs meanwhile.
    let acme_settings = server.root.join("acme/shop/_vance/settings.yaml");
    write(&acme_settings, "webhooks: {}\n");
    resync(&server, "acme", ACME).await;
    assert!(
        !webhooks(&server, "acme", ACME).await[0].1,
        "no token, not active"
    );
    resync(&server, "globex", GLOBEX).await;
    let theirs = webhooks(&server, "globex", GLOBEX).await;
    assert!(!theirs[0].1, "globex did not take acme's token: {theirs:?}");
    assert!(theirs[0].2.contains("MAG-TR003"), "{theirs:?}");
    assert!(!theirs[0].2.contains("acme"), "{theirs:?}");
    // Nothing answers the token meanwhile.
    assert_eq!(deliver(&server, &token).await, 404);

    // Put back, it is acme's again, and only acme's runs start.
    write(&acme_settings, &settings);
    resync(&server, "acme", ACME).await;
    resync(&server, "globex", GLOBEX).await;
    only_acme_answers(&server, &token).await;
}

#[tokio::test]
async fn two_webhooks_of_one_project_sharing_a_token_keep_the_first() {
    let token = format!("open{PATH_TOKEN}");
    let server = Server::start().await;
    let vance = server.root.join("acme/shop/_vance");
    write(&vance.join("workflows/quick.yaml"), QUICK);
    write(
        &vance.join("settings.yaml"),
        &format!("webhooks:\n  open:\n    path: {token}\n"),
    );
    write(&vance.join("events/open.yaml"), OPEN);
    resync(&server, "acme", ACME).await;
    // A second document with the same token sorts before the first, and still loses.
    write(&vance.join("events/another.yaml"), OPEN);
    resync(&server, "acme", ACME).await;
    let listed = webhooks(&server, "acme", ACME).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[1], ("open".to_owned(), true, String::new()));
    assert!(!listed[0].1, "{listed:?}");
    assert!(
        listed[0].2.contains("MAG-TR003") && listed[0].2.contains("`open`"),
        "{listed:?}"
    );
    // Removing the duplicate keeps the first answering.
    std::fs::remove_file(vance.join("events/another.yaml")).unwrap();
    resync(&server, "acme", ACME).await;
    assert_eq!(deliver(&server, &token).await, 202);
}

/// A document renamed between two resyncs keeps its webhook: the token's holder is gone from
/// the project, so the renamed document takes it over.
#[tokio::test]
async fn a_renamed_event_document_keeps_its_webhook() {
    let token = format!("open{PATH_TOKEN}");
    let server = Server::start().await;
    let vance = server.root.join("acme/shop/_vance");
    write(&vance.join("workflows/quick.yaml"), QUICK);
    write(
        &vance.join("settings.yaml"),
        &format!("webhooks:\n  open:\n    path: {token}\n"),
    );
    write(&vance.join("events/open.yaml"), OPEN);
    resync(&server, "acme", ACME).await;
    std::fs::rename(
        vance.join("events/open.yaml"),
        vance.join("events/renamed.yaml"),
    )
    .unwrap();
    resync(&server, "acme", ACME).await;
    assert_eq!(
        webhooks(&server, "acme", ACME).await,
        vec![("renamed".to_owned(), true, String::new())]
    );
    assert_eq!(deliver(&server, &token).await, 202);
}
