//! Every validation rule: message, code and line:column.

use magrathea_yaml::{Diagnostics, ErrorKind, LoadOptions, Severity, load_workflow};
mod conditions;
mod outcomes;
mod structure;
mod values;

fn diags(text: &str) -> Diagnostics {
    match load_workflow("wf.yaml", text, &LoadOptions::default()) {
        Ok(l) => l.warnings,
        Err(d) => d,
    }
}

fn rendered(text: &str) -> Vec<String> {
    diags(text).iter().map(ToString::to_string).collect()
}

/// Asserts that some diagnostic renders exactly as `expected`.
#[track_caller]
fn has(text: &str, expected: &str) {
    let all = rendered(text);
    assert!(
        all.iter().any(|d| d == expected),
        "expected {expected:?} in {all:#?}"
    );
}

fn doc(states: &str) -> String {
    format!("start: a\nstates:\n{states}")
}

const END: &str = "  end:\n    type: terminal\n";
