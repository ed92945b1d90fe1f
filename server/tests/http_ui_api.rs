//! The routes the web UI needs beyond the runs API: who the token is (`/v1/me`), the
//! workflows of a project with their diagnostics, filters of the run listing, and the links
//! between a run and its sub-runs. Each is checked against a real server on 127.0.0.1, with
//! the rule that a token of one tenant learns nothing of another.

mod http_common;

use http_common::*;
use serde_json::Value;

#[tokio::test]
async fn me_names_the_token_its_scopes_and_the_projects_of_its_tenant_only() {
    let s = Server::start().await;
    // A directory that is not a project (hidden) and the tenant-wide one are not listed.
    std::fs::create_dir_all(s.root.join("acme/.cache")).unwrap();
    let me: Value = s.get_json("/v1/me", Some(ACME)).await;
    assert_eq!(me["subject"], "alice");
    assert_eq!(me["tenant"], "acme");
    assert_eq!(
        me["scopes"],
        serde_json::json!(["workflow.read", "workflow.write", "workflow.run"])
    );
    assert_eq!(
        me["tenants"],
        serde_json::json!([{"name": "acme", "projects": ["lab", "shop"], "truncated": false}]),
        "only the token's tenant, its projects sorted, without _tenant: {me}"
    );
    assert!(
        !me.to_string().contains("globex"),
        "another tenant is never named: {me}"
    );

    let runner: Value = s.get_json("/v1/me", Some(ACME_RUN)).await;
    assert_eq!(runner["subject"], "runner");
    assert_eq!(runner["scopes"], serde_json::json!(["workflow.run"]));

    let globex: Value = s.get_json("/v1/me", Some(GLOBEX)).await;
    assert_eq!(globex["tenants"][0]["name"], "globex");
    assert_eq!(
        globex["tenants"][0]["projects"],
        serde_json::json!(["shop"])
    );
    assert_eq!(globex["tenants"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn me_without_a_valid_token_is_401() {
    let s = Server::start().await;
    for token in [None, Some("no-such-token")] {
        let (status, code) = code(s.get("/v1/me", token).send().await.unwrap()).await;
        assert_eq!((status, code.as_str()), (401, "MAG-HTTP-401"), "{token:?}");
    }
}

#[tokio::test]
async fn me_lists_roles_of_the_token_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let extra = format!(
        "{}  - token: ops-token\n    tenant: acme\n    subject: olga\n    scopes: [workflow.read]\n    roles: [ops, release]\n",
        tokens_yaml()
    );
    write(&root.join("_auth/tokens.yaml"), &extra);
    let config = magrathea_server::ServeConfig::new(&root).addr("127.0.0.1:0".parse().unwrap());
    let (addr, _handle) = magrathea_server::serve(config).await.unwrap();
    let me: Value = reqwest::Client::new()
        .get(format!("http://{addr}/v1/me"))
        .bearer_auth("ops-token")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["subject"], "olga");
    assert_eq!(me["roles"], serde_json::json!(["ops", "release"]));
    assert_eq!(me["scopes"], serde_json::json!(["workflow.read"]));
}

#[tokio::test]
async fn me_without_authentication_lists_every_tenant() {
    let s = Server::start_with(|c| c.insecure_no_auth(true)).await;
    let me: Value = s.get_json("/v1/me", None).await;
    assert_eq!(me["subject"], "anonymous");
    assert_eq!(me["tenant"], Value::Null);
    let names: Vec<&str> = me["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["acme", "globex"], "_auth is not a tenant: {me}");
    assert_eq!(
        me["tenants"][0]["projects"],
        serde_json::json!(["lab", "shop"])
    );
}

#[tokio::test]
async fn me_lists_at_most_a_thousand_projects() {
    let s = Server::start().await;
    for i in 0..1005 {
        std::fs::create_dir_all(s.root.join(format!("acme/p{i:04}"))).unwrap();
    }
    let me: Value = s.get_json("/v1/me", Some(ACME)).await;
    let projects = me["tenants"][0]["projects"].as_array().unwrap();
    assert_eq!(projects.len(), 1000);
    assert_eq!(me["tenants"][0]["truncated"], true);
    assert_eq!(projects[0], "lab", "sorted before being cut");
}

#[tokio::test]
async fn the_ui_routes_are_in_the_openapi_document() {
    let s = Server::start().await;
    let doc: Value = s.get_json("/openapi.json", None).await;
    let paths = &doc["paths"];
    assert!(paths["/v1/me"]["get"].is_object(), "{}", paths);
}
