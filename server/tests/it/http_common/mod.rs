//! Shared fixture of the HTTP tests: a document tree with tokens and workflows, and a server
//! on 127.0.0.1 port 0 in this process.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use magrathea_server::http::auth::token_sha256;
use magrathea_server::{ServeConfig, ServerHandle, serve};
use serde_json::{Value, json};

/// acme, every scope.
pub const ACME: &str = "acme-all-token";
/// acme, workflow.read only.
pub const ACME_READ: &str = "acme-read-token";
/// acme, workflow.read and workflow.write: may write documents, may not run.
pub const ACME_WRITE: &str = "acme-write-token";
/// acme, workflow.run only: may act on runs, may not read them.
pub const ACME_RUN: &str = "acme-run-token";
/// globex (another tenant), every scope.
pub const GLOBEX: &str = "globex-all-token";

pub const HELLO: &str = r#"
parameters:
  who: { type: string, required: false, default: world }
start: greet
states:
  greet:
    type: shell_task
    run: 'echo hello "$MAGRATHEA_PARAM_WHO"'
    dirName: workspace
    on:
      success: done
  done:
    type: terminal
    result: greeted
"#;

pub const APPROVE: &str = r#"
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    on:
      approved: yes
    catch:
      human_rejected: no
  yes: { type: terminal, result: approved }
  no: { type: terminal, result: rejected }
"#;

pub const NEEDS_PARAM: &str = r#"
parameters:
  pr_url: { type: string, required: true }
start: done
states:
  done: { type: terminal, result: ok }
"#;

pub const BROKEN: &str = "start: nowhere\nstates:\n  a:\n    type: terminal\n";

pub fn tokens_yaml() -> String {
    format!(
        "tokens:\n\
         \x20 - tokenSha256: {}\n    tenant: acme\n    subject: alice\n    scopes: [workflow.read, workflow.write, workflow.run]\n\
         \x20 - token: {ACME_READ}\n    tenant: acme\n    subject: reader\n    scopes: [workflow.read]\n\
         \x20 - token: {ACME_WRITE}\n    tenant: acme\n    subject: writer\n    scopes: [workflow.read, workflow.write]\n\
         \x20 - token: {ACME_RUN}\n    tenant: acme\n    subject: runner\n    scopes: [workflow.run]\n\
         \x20 - tokenSha256: {}\n    tenant: globex\n    subject: mallory\n    scopes: [workflow.read, workflow.write, workflow.run]\n",
        token_sha256(ACME),
        token_sha256(GLOBEX),
    )
}

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A tree with tenants acme (projects shop, lab) and globex (project shop), each holding the
/// test workflows.
/// The tenant settings the fixture's tenants start with: their projects may run shell steps
/// (a served tree denies them unless the tenant allows them).
pub const TENANT_SETTINGS: &str = "execution:\n  shellTask: true\n";

pub fn tree(root: &Path) {
    write(&root.join("_auth/tokens.yaml"), &tokens_yaml());
    for t in ["acme", "globex"] {
        write(
            &root.join(t).join("_tenant/_vance/settings.yaml"),
            TENANT_SETTINGS,
        );
    }
    for (t, p) in [("acme", "shop"), ("acme", "lab"), ("globex", "shop")] {
        let dir = root.join(t).join(p).join("_vance/workflows");
        write(&dir.join("hello.yaml"), HELLO);
        write(&dir.join("approve.yaml"), APPROVE);
        write(&dir.join("needs-param.yaml"), NEEDS_PARAM);
        write(&dir.join("broken.yaml"), BROKEN);
    }
}

pub struct Server {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub addr: SocketAddr,
    pub handle: Option<ServerHandle>,
    pub client: reqwest::Client,
}

impl Server {
    pub async fn start() -> Self {
        Self::start_with(|c| c).await
    }

    pub async fn start_with(f: impl FnOnce(ServeConfig) -> ServeConfig) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        tree(&root);
        let config = f(ServeConfig::new(&root).addr("127.0.0.1:0".parse().unwrap()));
        let (addr, handle) = serve(config).await.unwrap();
        Self {
            tmp,
            root,
            addr,
            handle: Some(handle),
            client: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> reqwest::RequestBuilder {
        auth(self.client.get(self.url(path)), token)
    }

    pub fn post(&self, path: &str, token: Option<&str>) -> reqwest::RequestBuilder {
        auth(self.client.post(self.url(path)), token)
    }

    /// PUTs `body` as the document `path` (under `_vance/`) of acme/shop with `token`; the
    /// status and the body's text.
    pub async fn put_document(&self, path: &str, token: &str, body: &str) -> (u16, String) {
        let r = self
            .client
            .put(self.url(&format!("/brain/acme/project/shop/documents/{path}")))
            .bearer_auth(token)
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// GET `path` and read the body as text (any status).
    pub async fn get_text(&self, path: &str, token: Option<&str>) -> String {
        self.get(path, token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// GET `path` and read the JSON body (any status).
    pub async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        token: Option<&str>,
    ) -> T {
        self.get(path, token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// GET a page of a list at `path`: its `X-Next-Cursor` header, if any, and its JSON body.
    pub async fn get_page(&self, path: &str, token: Option<&str>) -> (Option<String>, Value) {
        let r = self.get(path, token).send().await.unwrap();
        let next = r
            .headers()
            .get("X-Next-Cursor")
            .map(|v| v.to_str().unwrap().to_owned());
        (next, r.json().await.unwrap())
    }

    /// POST `body` as JSON to `path` and read the JSON reply (any status).
    pub async fn post_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        token: Option<&str>,
        body: &Value,
    ) -> T {
        self.post(path, token)
            .json(body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Answers inbox item `id` of `acme/shop` with `body` (`{"kind": "approve"}`, …) as
    /// `ACME`; the response, whatever its status.
    pub async fn answer(&self, id: &str, body: &Value) -> reqwest::Response {
        self.post(
            &format!("/brain/acme/project/shop/inbox/{id}/answer"),
            Some(ACME),
        )
        .json(body)
        .send()
        .await
        .unwrap()
    }

    /// Starts `name` in `acme/<project>` and returns the run id.
    pub async fn start_run(&self, project: &str, name: &str, params: Value) -> String {
        let r = self
            .post(
                &format!("/brain/acme/project/{project}/workflows/{name}/start"),
                Some(ACME),
            )
            .json(&json!({ "params": params }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
        let body: Value = r.json().await.unwrap();
        body["workflowRunId"].as_str().unwrap().to_string()
    }

    /// The pending inbox item of `run` in `acme/shop`, once its gate is open.
    pub async fn pending_item(&self, run: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let items: Vec<Value> = self
                .get_json("/brain/acme/project/shop/inbox", Some(ACME))
                .await;
            if let Some(item) = items.into_iter().find(|i| i["workflowRunId"] == run) {
                return item;
            }
            assert!(Instant::now() < deadline, "no pending item of {run}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Polls the run until its status is one of `statuses`.
    /// Opens acme/shop's SSE stream of `run` with the ACME token.
    pub async fn events(&self, run: &str) -> reqwest::Response {
        self.get(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/events"),
            Some(ACME),
        )
        .send()
        .await
        .unwrap()
    }

    pub async fn wait_status(&self, project: &str, run: &str, statuses: &[&str]) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let v: Value = self
                .get(
                    &format!("/brain/acme/project/{project}/workflows/runs/{run}"),
                    Some(ACME),
                )
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if statuses.iter().any(|s| v["status"] == *s) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "run never reached {statuses:?}: {v}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// The `name` of each item of a documents listing, in the order listed.
pub fn item_names(listing: &Value) -> Vec<&str> {
    listing["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect()
}

pub fn auth(b: reqwest::RequestBuilder, token: Option<&str>) -> reqwest::RequestBuilder {
    match token {
        Some(t) => b.bearer_auth(t),
        None => b,
    }
}

/// The answers to one request sent several times at once with one `Idempotency-Key`: all
/// name the same run, each answers 200 or 202, and only the one that started it 202. The run.
pub async fn one_run_for_the_key(answers: Vec<reqwest::Result<reqwest::Response>>) -> String {
    let mut runs = std::collections::BTreeSet::new();
    let mut created = 0;
    for r in answers {
        let r = r.unwrap();
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        assert!([200, 202].contains(&status), "{status} {v}");
        created += usize::from(status == 202);
        runs.insert(v["workflowRunId"].as_str().unwrap().to_owned());
    }
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        created, 1,
        "only the request that started the run answers 202"
    );
    runs.pop_first().unwrap()
}

/// The error code of an error body.
pub async fn code(r: reqwest::Response) -> (u16, String) {
    let status = r.status().as_u16();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_string(),
    )
}

/// The trigger `name` of `acme/shop`, as its listing shows it.
pub async fn trigger(s: &Server, name: &str) -> Value {
    let listed: Value = s
        .get_json("/brain/acme/project/shop/triggers", Some(ACME))
        .await;
    listed["triggers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no trigger {name} in {listed}"))
        .clone()
}
