//! Journal growth of a YAML run: bytes per state for runs of 10, 100 and 1,000 states.
//!
//! Run: `cargo bench -p magrathea-benches --bench yaml_journal`
//!
//! The workflow is a chain of `n` states: shell steps (`echo`) that store their output with
//! `storeAs` — so the run's variables grow with every state — and a `condition_task` every
//! fifth state reading them. It runs to DONE on a durable redb journal; the figure is the sum of
//! the encoded records' sizes over `n`. A journal that grows with the work has the same bytes
//! per state at every `n`; one that copies the run's variables into every step grows with `n`.
//! This is a size measure, not a timing: it is exact and the same on every machine.

use magrathea_core::{Engine, RunStatus};
use magrathea_yaml::{DocumentSource, YamlRuntime};
use serde_json::json;

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

async fn measure(n: usize) -> (usize, usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = dir.path().join("acme").join("shop");
    let workflows = project.join("_vance").join("workflows");
    std::fs::create_dir_all(&workflows).expect("project dir");
    std::fs::write(workflows.join("chain.yaml"), chain(n)).expect("document");
    let (docs, scope) = DocumentSource::for_project_dir(&project);
    let runtime = YamlRuntime::new(docs);
    let engine = runtime
        .install(Engine::builder().path(dir.path().join("journal.redb")))
        .build()
        .await
        .expect("engine");
    let run = runtime
        .start(&engine, &scope, "chain", json!({}), "bench")
        .await
        .expect("start");
    let view = engine.wait_settled(run).await.expect("wait");
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    let raw = engine.store().read_journal_raw(run).expect("journal");
    let bytes = raw.iter().map(|(_, b)| b.len()).sum();
    (bytes, raw.len())
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("yaml_journal/bytes_per_state: benchmark");
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    println!("| states | records | journal bytes | bytes per state |");
    println!("|---:|---:|---:|---:|");
    for n in [10, 100, 1_000] {
        let (bytes, records) = rt.block_on(measure(n));
        println!(
            "| {n} | {records} | {bytes} | {:.0} |",
            bytes as f64 / n as f64
        );
    }
}
