//! Triggers that react to each other's runs form a chain, and a chain is bounded: at most 16
//! runs one after another from its first run, at most 1,000 runs in all. Past a bound a
//! subscription's delivery is `rejected` (`trigger_chain`, `[MAG-TR004]`) and a hook's start
//! throws, so one tenant's loop cannot fill the store every tenant shares.

use crate::http_common;

use std::time::{Duration, Instant};

use http_common::{ACME, Server, write};
use serde_json::{Value, json};

const QUICK: &str = "start: done\nstates:\n  done: { type: terminal, result: ok }\n";

/// Starts `quick` for every completed run (but those it started itself).
const ON_DONE: &str = "workflow: quick\nsubscribe:\n  event: workflow.run.completed\n";

const FAN_OUT: &str = "on: workflow.run.completed\nscript: _vance/hooks/fan.js\n";
const FAN_OUT_JS: &str = r#"
for (let i = 0; i < 3; i++) {
  workflows.start("quick", {});
}
"#;

async fn server() -> Server {
    let s = Server::start().await;
    write(&s.root.join("acme/shop/_vance/workflows/quick.yaml"), QUICK);
    write(
        &s.root.join("acme/_tenant/_vance/settings.yaml"),
        "execution:\n  scriptTask: true\n",
    );
    s
}

async fn put(s: &Server, path: &str, body: &str) {
    let (status, text) = s.put_document(path, ACME, body).await;
    assert!((200..300).contains(&status), "{path}: {text}");
}

/// Every delivery of the project, once `done` says they are all there (30 s at most).
async fn deliveries_until(s: &Server, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut all = Vec::new();
        let mut cursor = String::new();
        loop {
            let v: Value = s
                .get_json(
                    &format!("/brain/acme/project/shop/triggers/deliveries?limit=1000{cursor}"),
                    Some(ACME),
                )
                .await;
            all.extend(v["deliveries"].as_array().unwrap().iter().cloned());
            match v["next"].as_str() {
                Some(c) => cursor = format!("&cursor={c}"),
                None => break,
            }
        }
        if done(&all) {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "deliveries so far: {}",
            all.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The project's runs of `quick`, every page.
async fn runs(s: &Server) -> Vec<Value> {
    let mut all = Vec::new();
    let mut cursor = String::new();
    loop {
        let r = s
            .get(
                &format!("/brain/acme/project/shop/workflows/runs?limit=1000{cursor}"),
                Some(ACME),
            )
            .send()
            .await
            .unwrap();
        let next = r
            .headers()
            .get("X-Next-Cursor")
            .map(|v| v.to_str().unwrap().to_owned());
        let page: Value = r.json().await.unwrap();
        all.extend(page.as_array().unwrap().iter().cloned());
        match next {
            Some(c) if !c.is_empty() => cursor = format!("&cursor={c}"),
            _ => return all,
        }
    }
}

fn rejected(d: &[Value]) -> Vec<&Value> {
    d.iter().filter(|d| d["status"] == "rejected").collect()
}

#[tokio::test]
async fn two_subscriptions_starting_each_others_runs_stop_after_sixteen() {
    let s = server().await;
    put(&s, "events/ping.yaml", ON_DONE).await;
    put(&s, "events/pong.yaml", ON_DONE).await;
    let first = s.start_run("shop", "quick", json!({})).await;
    // The first run starts one run of each; from then on each reacts to the other's runs
    // only: two lines of 16, then each line's next start is refused.
    let all = deliveries_until(&s, |d| rejected(d).len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let all = deliveries_until(&s, |d| d.len() >= all.len()).await;
    let refused = rejected(&all);
    assert_eq!(refused.len(), 2, "{all:#?}");
    for d in &refused {
        assert_eq!(d["reason"], "trigger_chain", "{d}");
        let message = d["message"].as_str().unwrap();
        // The message counts the runs started after the first: each line holds 16.
        assert!(
            message.starts_with(&format!(
                "[MAG-TR004] trigger chain too deep: 16 runs were started one from another \
                 after run {first}"
            )),
            "{message}"
        );
    }
    assert_eq!(all.len(), 2 * 16 + 2, "{all:#?}");
    let runs = runs(&s).await;
    assert_eq!(runs.len(), 1 + 2 * 16);
}

#[tokio::test]
async fn a_hook_fanning_out_with_a_subscription_stops_at_a_thousand_runs() {
    let s = server().await;
    put(&s, "hooks/fan.js", FAN_OUT_JS).await;
    put(&s, "hooks/fan.yaml", FAN_OUT).await;
    put(&s, "events/ping.yaml", ON_DONE).await;
    s.start_run("shop", "quick", json!({})).await;
    // Each run the subscription starts makes the hook start three, and each of those makes
    // the subscription start one: past 1,000 runs in the chain every start is refused.
    let all = deliveries_until(&s, |d| {
        d.iter().any(|d| {
            d["message"]
                .as_str()
                .is_some_and(|m| m.contains("[MAG-TR004] trigger chain too large"))
        })
    })
    .await;
    // Let what is in flight finish: the count does not move past the bound.
    let mut seen = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let n = runs(&s).await.len();
        if n == seen {
            break;
        }
        seen = n;
    }
    assert_eq!(seen, 1 + 1_000, "{} deliveries", all.len());
}

/// A chain that runs through a sub-run: `ev` starts `p` when `a` completes, `p` calls `k` as
/// a sub-run, and `ev2` starts `a` when `k` completes. A sub-run belongs to its tree's chain,
/// so the loop stops at the same depth.
#[tokio::test]
async fn a_loop_through_a_sub_run_stops_at_the_same_depth() {
    let s = server().await;
    let dir = s.root.join("acme/shop/_vance/workflows");
    write(
        &dir.join("p.yaml"),
        "start: call\nstates:\n  call: { type: workflow_task, workflow: k, on: { success: done } }\n  done: { type: terminal }\n",
    );
    write(&dir.join("k.yaml"), QUICK);
    write(&dir.join("a.yaml"), QUICK);
    put(
        &s,
        "events/ev.yaml",
        "workflow: p\nsubscribe:\n  event: workflow.run.completed\n  filter: \"#event['workflowName'] == 'a'\"\n",
    )
    .await;
    put(
        &s,
        "events/ev2.yaml",
        "workflow: a\nsubscribe:\n  event: workflow.run.completed\n  filter: \"#event['workflowName'] == 'k'\"\n",
    )
    .await;
    let first = s.start_run("shop", "a", json!({})).await;
    let all = deliveries_until(&s, |d| !rejected(d).is_empty()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let all = deliveries_until(&s, |d| d.len() >= all.len()).await;
    let refused = rejected(&all);
    assert_eq!(refused.len(), 1, "{all:#?}");
    let message = refused[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("[MAG-TR004] trigger chain too deep") && message.contains(&first),
        "{message}"
    );
    // The first `a`, then `p` and `a` in turn up to depth 16, each `p` with its `k`.
    assert_eq!(runs(&s).await.len(), 1 + 16 + 8, "{all:#?}");
}
