//! A served tree applies its tenants' default bounds (`bounds:` in
//! `<tenant>/_tenant/_vance/settings.yaml`) to runs started over HTTP: the spawn default to a
//! document that declares none, the journal limit to every run of the tenant.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

/// A loop of timers that never ends by itself.
const SPIN: &str = r#"
start: tick
states:
  tick:
    type: timer_task
    duration: 1ms
    on:
      fired: tick
"#;

fn setup(s: &Server, tenant_settings: &str) {
    write(&s.root.join("acme/shop/_vance/workflows/spin.yaml"), SPIN);
    write(
        &s.root.join("acme/_tenant/_vance/settings.yaml"),
        tenant_settings,
    );
}

async fn reason_of_failed(s: &Server, run: &str) -> String {
    let v: Value = s.wait_status("shop", run, &["FAILED"]).await;
    v["reason"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_run_started_over_http_stops_at_its_tenant_spawn_default() {
    let s = Server::start().await;
    setup(&s, "bounds:\n  maxTaskSpawns: 3\n");
    let run = s.start_run("shop", "spin", json!({})).await;
    let reason = reason_of_failed(&s, &run).await;
    assert!(
        reason.starts_with(
            "bounds exhausted: maxTaskSpawns 3 (the tenant's default, bounds.maxTaskSpawns in \
             acme/_tenant/_vance/settings.yaml"
        ),
        "{reason}"
    );
}

#[tokio::test]
async fn a_tenant_journal_limit_fails_a_served_run_with_mag_bd001() {
    let s = Server::start().await;
    setup(&s, "bounds:\n  maxTaskSpawns: 0\n  maxJournalBytes: 1500\n");
    let run = s.start_run("shop", "spin", json!({})).await;
    let reason = reason_of_failed(&s, &run).await;
    assert!(
        reason.starts_with("[MAG-BD001] bounds exhausted")
            && reason.contains("more than its limit of 1500 bytes"),
        "{reason}"
    );
}
