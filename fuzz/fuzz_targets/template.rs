//! Template resolution and the typo check never panic, and text without `${` comes back
//! untouched.
#![no_main]

use libfuzzer_sys::fuzz_target;
use magrathea_yaml::{Template, likely_typos, resolve_str};
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let params = json!({ "a": "x", "n": { "m": [1, 2] } });
        let state = json!({ "s": { "t": "y" } });
        let out = resolve_str(text, &params, &state);
        if !text.contains("${") {
            assert_eq!(out, text);
        }
        let _ = Template::parse(text).resolve(&params, &state);
        for w in likely_typos(text) {
            assert!(text.is_char_boundary(w.offset));
        }
    }
});
