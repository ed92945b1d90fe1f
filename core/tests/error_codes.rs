//! The error-code registry ([`magrathea_core::codes`]) is complete, unique and documented.
//!
//! `docs/error-codes.md` is generated from the registry; after changing it, run
//!
//! ```text
//! MAGRATHEA_BLESS=1 cargo test -p magrathea-core --test error_codes
//! ```
//!
//! and review the diff.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use magrathea_core::codes::{self, AREAS, CODES};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the core crate sits in the workspace")
        .to_path_buf()
}

#[test]
fn the_committed_code_list_matches_the_registry() {
    let path = workspace_root().join("docs/error-codes.md");
    let generated = codes::markdown();
    if std::env::var_os("MAGRATHEA_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/error-codes.md differs from the registry in core/src/codes/; regenerate it with \
         MAGRATHEA_BLESS=1 cargo test -p magrathea-core --test error_codes"
    );
}

#[test]
fn codes_are_unique_well_formed_and_described() {
    let mut seen = BTreeSet::new();
    let prefixes: Vec<&str> = AREAS.iter().map(|a| a.prefix).collect();
    let mut last_area = 0;
    for c in CODES.iter() {
        assert!(seen.insert(c.code), "{} is registered twice", c.code);
        let body = c.code.strip_prefix("MAG-").unwrap_or("");
        let well_formed = if let Some(name) = body.strip_prefix("HTTP-") {
            !name.is_empty()
                && !name.ends_with('-')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-')
        } else {
            let digits = body.trim_start_matches(|ch: char| ch.is_ascii_uppercase());
            digits.len() == 3
                && digits.len() < body.len()
                && digits.bytes().all(|b| b.is_ascii_digit())
        };
        assert!(
            well_formed,
            "{} is neither MAG-<letters><3 digits> nor MAG-HTTP-<NAME>",
            c.code
        );
        let area = prefixes
            .iter()
            .position(|p| *p == c.prefix())
            .unwrap_or_else(|| panic!("{} has no area in AREAS", c.code));
        assert!(area >= last_area, "{} is out of its area's order", c.code);
        last_area = area;
        for text in [c.meaning, c.remedy] {
            assert!(
                !text.trim().is_empty() && !text.contains('\n'),
                "{}: one line each",
                c.code
            );
        }
        assert_eq!(codes::lookup(&format!("[{}]", c.code)), Some(c));
    }
    let unique_areas: BTreeSet<_> = prefixes.iter().collect();
    assert_eq!(
        unique_areas.len(),
        prefixes.len(),
        "an area is listed twice"
    );
}

/// Every `MAG-<letters><digits>` and `MAG-HTTP-<NAME>` in `text`, with its line number.
fn codes_in(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("MAG-") {
            let tail = &rest[at + 4..];
            let letters = tail.bytes().take_while(u8::is_ascii_uppercase).count();
            let len = if tail[..letters] == *"HTTP" && tail[letters..].starts_with('-') {
                let name = &tail[letters + 1..];
                let name_len = name
                    .bytes()
                    .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'-')
                    .count();
                let name_len = name[..name_len].trim_end_matches('-').len();
                if name_len > 0 {
                    letters + 1 + name_len
                } else {
                    0
                }
            } else {
                let digits = tail[letters..]
                    .bytes()
                    .take_while(u8::is_ascii_digit)
                    .count();
                if letters > 0 && digits > 0 {
                    letters + digits
                } else {
                    0
                }
            };
            if len > 0 {
                found.push((n + 1, format!("MAG-{}", &tail[..len])));
            }
            rest = &tail[len.max(letters)..];
        }
    }
    found
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_sources(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_scanner_finds_codes_with_and_without_brackets() {
    // Built at run time, so that the walk below does not find these codes in this file.
    let text = [
        "x [MAG-",
        "QQ123] y\n",
        "\"MAG-",
        "Y7\" MAG-",
        "HTTP-…\n",
        "(\"MAG-",
        "HTTP-NO-",
        "WAY\", MAG-",
        "HTTP-4",
        "04)",
    ]
    .concat();
    let codes: Vec<String> = ["QQ123", "Y7", "HTTP-NO-WAY", "HTTP-404"]
        .iter()
        .map(|c| ["MAG-", c].concat())
        .collect();
    let expected = vec![
        (1, codes[0].clone()),
        (2, codes[1].clone()),
        (3, codes[2].clone()),
        (3, codes[3].clone()),
    ];
    assert_eq!(codes_in(&text), expected);
}

#[test]
fn every_code_used_in_the_workspace_is_registered() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_sources(&root, &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("core/src/error.rs")),
        "the walk reaches the workspace's sources"
    );
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut used = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (line, code) in codes_in(&text) {
            used += 1;
            if codes::lookup(&code).is_none() {
                let at = file.strip_prefix(&root).unwrap_or(file).display();
                missing
                    .entry(code)
                    .or_default()
                    .push(format!("{at}:{line}"));
            }
        }
    }
    assert!(used > CODES.len(), "the walk found the codes in use");
    assert!(
        missing.is_empty(),
        "codes used in source but missing from core/src/codes/: {missing:#?}"
    );
}
