//! The condition parser never panics; whatever parses also evaluates without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use magrathea_yaml::Condition;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(cond) = Condition::parse(text) {
            let state = json!({ "k": "v", "n": 3, "o": { "p": [true, null] } });
            let params = json!({ "a": 1.5 });
            let _ = cond.evaluate(&state, &params);
        }
    }
});
