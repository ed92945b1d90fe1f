//! Documents already loaded, by their exact text: a start loads its document, and the run it
//! starts loads the same text again from its frozen copy; every start of a workflow whose file
//! did not change loads the same text once more. Parsing, validating and compiling a document
//! is most of the CPU a start costs, so [`load_workflow_shared`] keeps the result.
//!
//! A hit needs the same label and the same text, byte for byte (compared, not only hashed), and
//! the default [`LoadOptions`]; invalid documents are not kept. The cache holds at most
//! [`MAX_TEXT_BYTES`] of document text; when a new document would pass that, it starts over.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::{Diagnostics, LoadOptions, Loaded, load_workflow};

/// The most document text the cache holds.
pub const MAX_TEXT_BYTES: usize = 16 << 20;

#[derive(Default)]
struct Cache {
    entries: HashMap<u64, (String, String, Arc<Loaded>)>,
    text_bytes: usize,
    hasher: std::collections::hash_map::RandomState,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// [`load_workflow`] with the default options, shared with every earlier load of the same
/// label and text (see the module documentation).
pub fn load_workflow_shared(label: &str, text: &str) -> Result<Arc<Loaded>, Diagnostics> {
    let key = {
        let c = cache().lock().unwrap_or_else(PoisonError::into_inner);
        let key = c.hasher.hash_one((label, text));
        if let Some((l, t, loaded)) = c.entries.get(&key)
            && l == label
            && t == text
        {
            return Ok(loaded.clone());
        }
        key
    };
    let loaded = Arc::new(load_workflow(label, text, &LoadOptions::default())?);
    let mut c = cache().lock().unwrap_or_else(PoisonError::into_inner);
    let size = label.len() + text.len();
    if c.text_bytes + size > MAX_TEXT_BYTES {
        c.entries.clear();
        c.text_bytes = 0;
    }
    if size <= MAX_TEXT_BYTES {
        let old = c
            .entries
            .insert(key, (label.to_owned(), text.to_owned(), loaded.clone()));
        c.text_bytes += size;
        if let Some((l, t, _)) = old {
            c.text_bytes -= l.len() + t.len();
        }
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "start: done\nstates:\n  done: { type: terminal, result: ok }\n";

    #[test]
    fn the_same_text_is_loaded_once_and_a_changed_text_again() {
        let a = load_workflow_shared("cache-test-a.yaml", DOC).unwrap();
        let b = load_workflow_shared("cache-test-a.yaml", DOC).unwrap();
        assert!(
            Arc::ptr_eq(&a, &b),
            "the second load is the first one's result"
        );
        let changed = DOC.replace("ok", "fine");
        let c = load_workflow_shared("cache-test-a.yaml", &changed).unwrap();
        assert!(!Arc::ptr_eq(&a, &c), "a changed text is loaded anew");
        let other_label = load_workflow_shared("cache-test-b.yaml", DOC).unwrap();
        assert_eq!(
            other_label.path, "cache-test-b.yaml",
            "diagnostics keep their own label"
        );
    }

    #[test]
    fn an_invalid_document_is_refused_every_time() {
        let bad = "start: nowhere\nstates:\n  done: { type: terminal }\n";
        assert!(load_workflow_shared("cache-test-bad.yaml", bad).is_err());
        assert!(load_workflow_shared("cache-test-bad.yaml", bad).is_err());
    }
}
