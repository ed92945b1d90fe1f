//! Tokens: missing and unknown tokens are 401, an under-scoped one 403, another tenant's 404;
//! with no token configured every API route is 401 unless the server is insecure.

use crate::http_common;

use http_common::*;
use magrathea_server::ServeConfig;
use serde_json::json;

#[tokio::test]
async fn missing_wrong_and_under_scoped_tokens() {
    let s = Server::start().await;
    let start = "/brain/acme/project/shop/workflows/hello/start";
    let list = "/brain/acme/project/shop/workflows/runs";
    for (path, post) in [(start, true), (list, false)] {
        let req = |token| {
            if post {
                s.post(path, token).json(&json!({}))
            } else {
                s.get(path, token)
            }
        };
        let r = req(None).send().await.unwrap();
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        assert_eq!(code(r).await, (401, "MAG-HTTP-401".into()), "{path}");
        let r = req(Some("not-a-token")).send().await.unwrap();
        assert_eq!(code(r).await, (401, "MAG-HTTP-401".into()), "{path}");
        let r = req(Some(GLOBEX)).send().await.unwrap();
        assert_eq!(code(r).await, (404, "MAG-HTTP-404".into()), "{path}");
    }
    // workflow.read may list but not start, cancel, answer or write documents.
    let r = s.get(list, Some(ACME_READ)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = s
        .post(start, Some(ACME_READ))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (403, "MAG-HTTP-403".into()));
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/workflows/x.yaml"))
        .bearer_auth(ACME_READ)
        .body(HELLO)
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (403, "MAG-HTTP-403".into()));
    let r = s
        .get("/v1/workflow-approvals", Some(ACME_READ))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (403, "MAG-HTTP-403".into()));
    // Health and metrics need no token.
    assert_eq!(s.get("/healthz", None).send().await.unwrap().status(), 200);
    assert_eq!(s.get("/metrics", None).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn without_a_token_file_everything_is_refused_unless_insecure() {
    let s = Server::start().await;
    drop(s);
    // A fresh tree without _auth/.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    write(&root.join("acme/shop/_vance/workflows/hello.yaml"), HELLO);
    let (addr, handle) =
        magrathea_server::serve(ServeConfig::new(&root).addr("127.0.0.1:0".parse().unwrap()))
            .await
            .unwrap();
    let client = reqwest::Client::new();
    let url = |p: &str| format!("http://{addr}{p}");
    let r = client
        .post(url("/brain/acme/project/shop/workflows/hello/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--insecure-no-auth"),
        "{body}"
    );
    let r = client
        .get(url("/v1/workflow-approvals"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(
        client.get(url("/healthz")).send().await.unwrap().status(),
        200
    );
    handle.shutdown().await.unwrap();

    let (addr, handle) = magrathea_server::serve(
        ServeConfig::new(&root)
            .addr("127.0.0.1:0".parse().unwrap())
            .store(root.join("insecure-store"))
            .insecure_no_auth(true),
    )
    .await
    .unwrap();
    let r = client
        .post(format!(
            "http://{addr}/brain/acme/project/shop/workflows/hello/start"
        ))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    handle.shutdown().await.unwrap();
}
