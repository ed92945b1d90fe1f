//! What one fan-out hands its sub-runs is bounded: an inline branch gets a copy of its run's
//! parameters and variables, so a large parameter over many items would multiply into
//! gigabytes; past 64 MiB in all the state ends `failure` with `[MAG-PR005]` and starts
//! nothing. Under the bound the fan-out runs as before.

use crate::common;

use common::Project;
use magrathea_core::{Record, RunStatus};
use serde_json::json;

/// Each item runs an inline branch, which sees the run's `pad` parameter.
const FAN: &str = r#"
start: each
parameters:
  items: { type: array }
  pad: { type: string }
states:
  each:
    type: foreach_task
    items: "${params.items}"
    maxParallelism: 4
    start: ok
    states:
      ok: { type: terminal, result: "${state.item}" }
    storeAs: out
    on: { success: end, failure: end }
  end: { type: terminal, result: "${state.out}" }
"#;

fn started(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r, Record::ChildStarted { .. }))
        .count()
}

#[tokio::test]
async fn a_fan_out_handing_its_sub_runs_too_much_input_starts_none() {
    let p = Project::new(|rt| rt).await;
    p.workflow("fan", FAN);
    // 1,000 copies of a 70 KB parameter: 70 MB, past the 64 MiB bound.
    let items: Vec<u32> = (0..1_000).collect();
    let view = p
        .run("fan", json!({ "items": items, "pad": "x".repeat(70_000) }))
        .await;
    assert_eq!(view.status, RunStatus::Done);
    let error = view.result.clone().unwrap()["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(error.starts_with("[MAG-PR005] state 'each'"), "{error}");
    assert_eq!(started(&p.records(&view)), 0, "nothing started");

    // Three copies are well within it.
    let view = p
        .run(
            "fan",
            json!({ "items": [1, 2, 3], "pad": "x".repeat(70_000) }),
        )
        .await;
    assert_eq!(view.result.unwrap(), json!([1, 2, 3]));
}
