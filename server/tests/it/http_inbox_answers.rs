//! An inbox answer may be posted in the reference's own shape (§3.4), as the journal and the
//! item keep it: `{outcome: DECIDED, value: {approved | chosen | text}}`,
//! `{outcome: INSUFFICIENT_INFO}`, `{outcome: UNDECIDABLE}`; it drives the run as the
//! `{kind: …}` shape does.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

const GATES: &str = r#"
start: approve
states:
  approve:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship?" }
    on: { approved: pick, rejected: no, insufficient_info: no, undecidable: unsure }
  pick:
    type: gate_task
    inbox: { kind: DECISION, title: "Which?", options: [red, blue] }
    on: { red: no, blue: say, insufficient_info: no, undecidable: no }
  say:
    type: gate_task
    inbox: { kind: FEEDBACK, title: "Why?" }
    storeAs: why
    on: { success: done, insufficient_info: no, undecidable: no }
  done: { type: terminal, result: "${state.why.text}" }
  no: { type: terminal, result: no }
  unsure: { type: terminal, result: unsure }
"#;

/// Answers `item` with `body`: the status and the JSON answer.
async fn answer(s: &Server, item: &Value, body: Value) -> (u16, Value) {
    let r = s.answer(item["id"].as_str().unwrap(), &body).await;
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_references_answer_shape_decides_each_kind_of_gate() {
    let s = Server::start().await;
    write(&s.root.join("acme/shop/_vance/workflows/gates.yaml"), GATES);
    let run = s.start_run("shop", "gates", json!({})).await;

    let approval = s.pending_item(&run).await;
    for (bad, why) in [
        (json!({"outcome": "DECIDED"}), "needs `value`"),
        (
            json!({"outcome": "DECIDED", "value": {"approved": "yes"}}),
            "true or false",
        ),
        (json!({"outcome": "MAYBE"}), "unknown answer outcome"),
        (json!({"kind": "approve", "outcome": "DECIDED"}), "not both"),
        (json!({}), "needs `kind`"),
    ] {
        let (status, body) = answer(&s, &approval, bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert_eq!(body["error"]["code"], "MAG-HTTP-INVALID-ANSWER", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{bad}: {message}");
    }
    let decided = json!({"outcome": "DECIDED", "value": {"approved": true}, "comment": "ok"});
    let (status, body) = answer(&s, &approval, decided).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["applied"], true, "{body}");
    // The item keeps the answer in the shape it was posted in.
    let id = approval["id"].as_str().unwrap();
    let kept: Value = s
        .get_json(&format!("/brain/acme/project/shop/inbox/{id}"), Some(ACME))
        .await;
    assert_eq!(kept["answer"]["outcome"], "DECIDED", "{kept}");
    assert_eq!(kept["answer"]["value"], json!({"approved": true}), "{kept}");

    let decision = s.pending_item(&run).await;
    assert_eq!(decision["kind"], "DECISION");
    let (status, body) = answer(
        &s,
        &decision,
        json!({"outcome": "DECIDED", "value": {"chosen": "blue"}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let feedback = s.pending_item(&run).await;
    assert_eq!(feedback["kind"], "FEEDBACK");
    let (status, body) = answer(
        &s,
        &feedback,
        json!({"outcome": "DECIDED", "value": {"text": "because"}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let view = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(view["result"], "because", "{view}");

    // UNDECIDABLE routes as `undecidable`.
    let other = s.start_run("shop", "gates", json!({})).await;
    let approval = s.pending_item(&other).await;
    let (status, body) = answer(&s, &approval, json!({"outcome": "UNDECIDABLE"})).await;
    assert_eq!(status, 200, "{body}");
    let view = s.wait_status("shop", &other, &["DONE"]).await;
    assert_eq!(view["result"], "unsure", "{view}");
}
