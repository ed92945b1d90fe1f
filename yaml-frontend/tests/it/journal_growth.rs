//! A YAML run's journal grows with its work: each state journals its entry, its resolved input
//! and its result, never the run's parameters or variables again (issue: O(N²) journals).

use crate::common;

use common::Project;
use magrathea_core::RunStatus;
use serde_json::json;

/// A chain of `n` states: shell steps that store their output (so the run's variables grow
/// with every state) and a condition every fifth state that reads them.
fn chain(n: usize) -> String {
    let mut doc = String::from(
        "start: s0\nparameters:\n  label: { type: string, default: \"a parameter the run carries along\" }\nstates:\n",
    );
    for i in 0..n {
        let next = if i + 1 == n {
            "end".to_string()
        } else {
            format!("s{}", i + 1)
        };
        if i % 5 == 4 {
            doc.push_str(&format!(
                "  s{i}:\n    type: condition_task\n    transitions:\n      - if: \"#state['v{}'] != null\"\n        to: {next}\n      - else: end\n",
                i - 1
            ));
        } else {
            doc.push_str(&format!(
                "  s{i}:\n    type: shell_task\n    run: \"echo step {i} of \\\"$MAGRATHEA_PARAM_LABEL\\\"\"\n    dirName: workspace\n    storeAs: v{i}\n    on: {{ success: {next} }}\n"
            ));
        }
    }
    doc.push_str("  end:\n    type: terminal\n    result: \"${state.v0.stdout}\"\n");
    doc
}

async fn bytes_per_state(n: usize) -> f64 {
    let p = Project::new(|rt| rt).await;
    p.workflow("chain", &chain(n));
    let view = p.run("chain", json!({})).await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    let raw = p
        .engine
        .store()
        .read_journal_raw(view.workflow_run_id)
        .unwrap();
    let bytes: usize = raw.iter().map(|(_, b)| b.len()).sum();
    bytes as f64 / n as f64
}

#[tokio::test(flavor = "multi_thread")]
async fn journal_bytes_per_state_do_not_grow_with_the_run() {
    let small = bytes_per_state(10).await;
    let large = bytes_per_state(200).await;
    // Linear growth: a state costs the same whether it is the 10th or the 200th. With the
    // variables journaled into every step, the 200-state run cost over 10 times as much per
    // state.
    assert!(
        large < small * 1.25,
        "bytes per state grew from {small:.0} (10 states) to {large:.0} (200 states)"
    );
}
