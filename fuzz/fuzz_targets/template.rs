//! Template resolution never panics, and text without `${` comes back untouched.
#![no_main]

use libfuzzer_sys::fuzz_target;
use magrathea_yaml::resolve_str;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let params = json!({ "a": "x", "n": { "m": [1, 2] } });
        let state = json!({ "s": { "t": "y" } });
        let out = resolve_str(text, &params, &state);
        if !text.contains("${") {
            assert_eq!(out, text);
        }
    }
});
