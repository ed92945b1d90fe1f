//! `GET /ui` and its files over plain HTTP: served without a token, with their media types
//! and a strict Content-Security-Policy; nothing else is served under `/ui/`.

use crate::http_common;

use http_common::Server;

#[tokio::test]
async fn the_page_needs_no_token_and_carries_a_strict_policy() {
    let s = Server::start().await;
    let r = s.get("/ui", None).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let h = r.headers().clone();
    assert_eq!(h["content-type"], "text/html; charset=utf-8");
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(csp.starts_with("default-src 'self';"), "{csp}");
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "no-referrer");
    let body = r.text().await.unwrap();
    assert!(
        body.contains(r#"<script type="module" src="/ui/app.js">"#),
        "{body}"
    );
    // No inline script: the policy would refuse it.
    assert_eq!(body.matches("<script").count(), 1);
    // `/ui/`, as a browser may ask for it, is the same page under the same policy.
    let slash = s.get("/ui/", None).send().await.unwrap();
    assert_eq!(slash.status(), 200);
    assert_eq!(slash.headers()["content-security-policy"], csp);
    assert_eq!(slash.text().await.unwrap(), body);
}

#[tokio::test]
async fn each_file_is_served_with_its_media_type() {
    let s = Server::start().await;
    for (path, ty) in [
        ("/ui/app.js", "text/javascript; charset=utf-8"),
        ("/ui/graph.js", "text/javascript; charset=utf-8"),
        ("/ui/style.css", "text/css; charset=utf-8"),
        ("/ui/favicon.svg", "image/svg+xml"),
        ("/ui/index.html", "text/html; charset=utf-8"),
    ] {
        let r = s.get(path, None).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.headers()["content-type"], ty, "{path}");
        assert!(
            r.headers().contains_key("content-security-policy"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn nothing_but_the_ui_files_is_served_under_ui() {
    let s = Server::start().await;
    for path in [
        "/ui/nope.js",
        "/ui/../_auth/tokens.yaml",
        "/ui/%2e%2e/_auth/tokens.yaml",
        "/ui/acme/shop/_vance/workflows/hello.yaml",
    ] {
        let (status, code) = http_common::code(s.get(path, None).send().await.unwrap()).await;
        assert_eq!(status, 404, "{path}");
        assert!(code.starts_with("MAG-HTTP"), "{path}: {code}");
    }
}

#[tokio::test]
async fn the_ui_is_listed_in_the_openapi_document() {
    let s = Server::start().await;
    let doc: serde_json::Value = s.get_json("/openapi.json", None).await;
    assert!(doc["paths"]["/ui"]["get"].is_object(), "{}", doc["paths"]);
}
