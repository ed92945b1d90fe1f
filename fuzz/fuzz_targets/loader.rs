//! The loader never panics and never loops on any text: it loads or reports diagnostics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use magrathea_yaml::{LoadOptions, load_workflow};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let opts = LoadOptions::default();
        match load_workflow("fuzz.yaml", text, &opts) {
            Ok(loaded) => {
                // A loaded document's start state exists.
                assert!(loaded.doc.states.contains_key(&loaded.doc.start.value));
            }
            Err(diags) => {
                for d in diags.iter() {
                    let _ = d.to_string();
                }
            }
        }
    }
});
