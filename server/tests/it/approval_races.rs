//! Approvals of one quorum gate arriving together from many clients: each approver counts
//! once and is told so once, the approvals listed are those the gate's answer names, and a
//! vote racing a cancel does not leave a quorum's worth on a gate that was never approved.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::http_common;
use crate::http_inbox::{GUARDED, approver_tokens};

use http_common::*;
use serde_json::{Value, json};

/// A server whose tokens include approvers with role `ops` (bob, dave, erin, frank) for
/// [`GUARDED`] (quorum 2), on a store of its own beside the fixture's.
struct Approvers {
    _fixture: Server,
    _serving: magrathea_server::ServerHandle,
    addr: SocketAddr,
    client: reqwest::Client,
}

impl Approvers {
    async fn start() -> Self {
        let fixture = Server::start().await;
        approver_tokens(&fixture.root);
        let tokens = fixture.root.join("_auth/tokens.yaml");
        let mut text = std::fs::read_to_string(&tokens).unwrap();
        for who in ["erin", "frank"] {
            text.push_str(&format!(
                "  - token: ops-{who}\n    tenant: acme\n    subject: {who}\n    scopes: \
                 [workflow.read, workflow.run]\n    roles: [ops]\n"
            ));
        }
        write(&tokens, &text);
        write(
            &fixture.root.join("acme/shop/_vance/workflows/guarded.yaml"),
            GUARDED,
        );
        let (addr, serving) = magrathea_server::serve(
            magrathea_server::ServeConfig::new(&fixture.root)
                .addr("127.0.0.1:0".parse().unwrap())
                .store(fixture.root.join("second-store")),
        )
        .await
        .unwrap();
        Self {
            _fixture: fixture,
            _serving: serving,
            addr,
            client: reqwest::Client::new(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    async fn json(&self, req: reqwest::RequestBuilder) -> Value {
        let r = req.send().await.unwrap();
        let status = r.status();
        let text = r.text().await.unwrap();
        assert!(status.is_success(), "{status}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    async fn run_view(&self, run: &str) -> Value {
        let path = format!("/brain/acme/project/shop/workflows/runs/{run}");
        self.json(self.client.get(self.url(&path)).bearer_auth(ACME))
            .await
    }

    /// Starts a run of `guarded` and waits until its approval pends; the item's id.
    async fn waiting_approval(&self) -> (String, String) {
        let start = "/brain/acme/project/shop/workflows/guarded/start";
        let r = self
            .json(
                self.client
                    .post(self.url(start))
                    .bearer_auth(ACME)
                    .json(&json!({})),
            )
            .await;
        let run = r["workflowRunId"].as_str().unwrap().to_owned();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.run_view(&run).await["status"] != "WAITING" {
            assert!(Instant::now() < deadline, "the run never waited");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let item = format!("{run}-2");
        (run, item)
    }

    async fn approve(&self, item: &str, token: &str) -> Value {
        let path = format!("/v1/workflow-approvals/{item}/approve");
        self.json(self.client.post(self.url(&path)).bearer_auth(token))
            .await
    }

    async fn approval(&self, item: &str) -> Value {
        let path = format!("/v1/workflow-approvals/{item}");
        self.json(self.client.get(self.url(&path)).bearer_auth(ACME))
            .await
    }

    /// Waits until the run has ended; its view.
    async fn ended(&self, run: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let v = self.run_view(run).await;
            if ["DONE", "FAILED", "CANCELLED"].contains(&v["status"].as_str().unwrap_or("")) {
                return v;
            }
            assert!(Instant::now() < deadline, "the run never ended: {v}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_approver_approving_many_times_at_once_is_told_it_counted_once() {
    let a = Approvers::start().await;
    for _ in 0..3 {
        let (_run, item) = a.waiting_approval().await;
        let replies = futures::future::join_all((0..10).map(|_| a.approve(&item, "ops-bob"))).await;
        let counted: Vec<&Value> = replies.iter().filter(|r| r["ignored"] == false).collect();
        assert_eq!(counted.len(), 1, "{replies:#?}");
        for r in &replies {
            assert_eq!(r["applied"], false, "{r}");
            assert_eq!(
                r["pending"],
                json!({"approvals": ["bob"], "quorum": 2}),
                "{r}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approvals_arriving_together_are_listed_as_the_gates_answer_names_them() {
    let a = Approvers::start().await;
    for _ in 0..4 {
        let (run, item) = a.waiting_approval().await;
        let who = ["bob", "dave", "erin", "frank"];
        let tokens = who.map(|w| format!("ops-{w}"));
        let replies = futures::future::join_all(tokens.iter().map(|t| a.approve(&item, t))).await;
        assert_eq!(a.ended(&run).await["status"], "DONE");
        let one = a.approval(&item).await;
        assert_eq!(one["status"], "approved", "{one}");
        let named = &one["answer"]["value"]["approvers"];
        let names: Vec<&str> = named
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert!(names.len() >= 2, "the answer names the quorum: {one}");
        assert_eq!(&one["approvals"], named, "{one}");
        // Each approval is told whether it counted: one the answer names was kept while the
        // quorum was short (`pending`) or applied with the decision; the others came to a
        // decided gate.
        for (w, r) in who.iter().zip(&replies) {
            if names.contains(w) {
                assert_eq!(r["ignored"], false, "{w}: {r} ({one})");
                assert!(
                    r["applied"] == true || r["pending"].is_object(),
                    "{w}: {r} ({one})"
                );
            } else {
                assert_eq!(
                    (&r["applied"], &r["ignored"]),
                    (&json!(false), &json!(true)),
                    "{w}: {r} ({one})"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_approval_racing_a_cancel_leaves_no_quorum_on_a_cancelled_gate() {
    let a = Approvers::start().await;
    for _ in 0..6 {
        let (run, item) = a.waiting_approval().await;
        let first = a.approve(&item, "ops-bob").await;
        assert_eq!(first["pending"]["approvals"], json!(["bob"]), "{first}");
        let cancel = format!("/brain/acme/project/shop/workflows/runs/{run}/cancel");
        let cancel = a
            .client
            .post(a.url(&cancel))
            .bearer_auth(ACME)
            .json(&json!({}))
            .send();
        let (cancelled, _) = tokio::join!(cancel, a.approve(&item, "ops-dave"));
        assert!(cancelled.unwrap().status().is_success());
        let end = a.ended(&run).await;
        let one = a.approval(&item).await;
        let approvals = one["approvals"].as_array().unwrap().len();
        if one["status"] == "approved" {
            // The second approval reached the gate first: the run went on to its end.
            assert_eq!(approvals, 2, "{one}");
        } else {
            assert_eq!(end["status"], "CANCELLED", "{end}");
            assert!(approvals < 2, "a cancelled approval lists a quorum: {one}");
        }
    }
}
