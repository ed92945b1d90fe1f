//! YAML parsed with serde — settings, recipes, trigger documents, the token file — with the
//! one bound its parser lacks. The parser's work grows with the square of the depth of nested
//! flow collections (`[[[…]]]`): 20,000 levels, 40 KB of text, take seconds, and the 1 MiB a
//! request may write take most of an hour of one thread. A document nested deeper than
//! [`MAX_FLOW_DEPTH`] is refused before it is parsed (`[MAG-Y003]`), in time linear in its
//! length. Workflow documents have a loader of their own, with its own limits.

use std::fmt;

use serde::de::DeserializeOwned;

/// The deepest nesting of flow collections (`[…]`, `{…}`) a document may have.
pub const MAX_FLOW_DEPTH: usize = 64;

/// Why a document was not read.
#[derive(Debug)]
pub enum YamlError {
    /// Nested deeper than [`MAX_FLOW_DEPTH`]: the collection that went past it opens at
    /// `line`, `column` (from 1).
    TooDeep {
        /// Its line.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// A key given twice in one mapping: the second at `line`, `column` (from 1), the first
    /// at `first` (line, column).
    Duplicate {
        /// The key.
        key: String,
        /// The second one's line.
        line: usize,
        /// The second one's column.
        column: usize,
        /// Where the first one is.
        first: (usize, usize),
    },
    /// A tab where YAML expects spaces, at `line`, `column` (from 1).
    Tab {
        /// Its line.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// The parser's error.
    Parse(serde_yaml_ng::Error),
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooDeep { line, column } => write!(
                f,
                "[MAG-Y003] the collection at line {line} column {column} is nested more than \
                 {MAX_FLOW_DEPTH} `[`/`{{` deep: expected at most {MAX_FLOW_DEPTH}; write the \
                 structure flatter (block mappings and lists, or fewer levels)"
            ),
            Self::Duplicate { key, first, .. } => write!(
                f,
                "duplicate key '{key}': expected each key once (first defined at {}:{})",
                first.0, first.1
            ),
            Self::Tab { .. } => f.write_str(
                "invalid YAML: a tab character where YAML expects spaces (YAML indents with \
                 spaces only)",
            ),
            Self::Parse(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for YamlError {}

impl YamlError {
    /// Where the error is (line and column from 1), when the parser says.
    #[must_use]
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            Self::TooDeep { line, column }
            | Self::Duplicate { line, column, .. }
            | Self::Tab { line, column } => Some((*line, *column)),
            Self::Parse(e) => e.location().map(|l| (l.line(), l.column())),
        }
    }

    /// The error as a diagnostic of the document `label`: `label:line:column: [code] why`
    /// (`code` for the parser's errors; nesting too deep keeps its own), or `label: …` when
    /// the parser names no place; without a label, `line L, column C: …`. With `MAG-Y001`
    /// (not well-formed YAML), an error of the document's shape takes the code of its kind,
    /// as a workflow's does: an unknown field `MAG-Y005`, a missing one `MAG-Y006`, a value of
    /// the wrong kind `MAG-Y007`, a word not among the allowed ones `MAG-Y026`.
    #[must_use]
    pub fn located(&self, label: &str, code: &str) -> String {
        let why = match self {
            Self::TooDeep { .. } => self.to_string(),
            Self::Duplicate { .. } if code == "MAG-Y001" => format!("[MAG-Y025] {self}"),
            Self::Duplicate { .. } | Self::Tab { .. } => format!("[{code}] {self}"),
            Self::Parse(e) => {
                let why = without_places(&e.to_string(), self.position());
                format!("[{}] {}", of_kind(code, &why), in_plain_words(&why))
            }
        };
        match (self.position(), label.is_empty()) {
            (Some((line, column)), false) => format!("{label}:{line}:{column}: {why}"),
            (Some((line, column)), true) => format!("line {line}, column {column}: {why}"),
            (None, false) => format!("{label}: {why}"),
            (None, true) => why,
        }
    }
}

/// The parser's message without the places it names in its words (` at line 2 column 1`):
/// the error's own place is said in front, as every diagnostic says it; another one (where
/// the collection being read opened) is said as `(opened on line L, column C)`.
fn without_places(text: &str, at: Option<(usize, usize)>) -> String {
    const MARK: &str = " at line ";
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        let tail = &rest[i + MARK.len()..];
        let digits = |t: &str| t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let line_len = digits(tail);
        let place = tail[line_len..].strip_prefix(" column ").and_then(|after| {
            let column_len = digits(after);
            let line = tail[..line_len].parse::<usize>().ok()?;
            let column = after[..column_len].parse::<usize>().ok()?;
            Some((line, column, tail.len() - after.len() + column_len))
        });
        out.push_str(&rest[..i]);
        match place {
            Some((line, column, len)) => {
                if Some((line, column)) != at {
                    out.push_str(&format!(" (opened on line {line}, column {column})"));
                }
                rest = &tail[len..];
            }
            None => {
                out.push_str(MARK);
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `code`, or for `MAG-Y001` the code of the kind of the parser's message `why` when it is
/// one of the document's shape rather than of its syntax (see [`YamlError::located`]).
fn of_kind<'a>(code: &'a str, why: &str) -> &'a str {
    if code != "MAG-Y001" {
        return code;
    }
    if why.contains("unknown field `") {
        "MAG-Y005"
    } else if why.contains("missing field `") {
        "MAG-Y006"
    } else if why.contains("unknown variant `") {
        "MAG-Y026"
    } else if (why.contains("invalid type: ")
        || why.contains("invalid value: ")
        || why.contains("invalid length "))
        // A number past 128 bits is one the parser cannot hold at all.
        && !why.contains(" as u128,")
        && !why.contains(" as i128,")
    {
        "MAG-Y007"
    } else {
        code
    }
}

/// The parser's message with the Rust types it names said as a document's author knows them
/// (`expected u32` → `expected a whole number of 0 or more`, `expected struct Defaults` →
/// `expected a mapping`), and what a bare syntax error expected.
fn in_plain_words(why: &str) -> String {
    let mut out = why.to_owned();
    if let Some((before, after)) = out.split_once("expected struct ") {
        let rest = after.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_');
        out = format!("{before}expected a mapping{rest}");
    }
    if let Some((before, field)) = out.split_once("missing field `")
        && !field.contains(':')
    {
        out = format!("{before}missing field `{field}: expected it in this mapping");
    }
    // The scanner's own step says nothing to a document's author.
    out = out.replace(", while scanning for the next token", "");
    if out.ends_with("found character that cannot start any token") {
        out.push_str(
            ": expected a value, a key or a list item (a value that starts with `@` or a \
             backquote must be quoted)",
        );
    }
    // A whole number past 64 bits, which no value of ours can hold.
    for wide in ["u128", "i128"] {
        let said = format!("` as {wide}, expected any YAML value");
        if let Some(head) = out.strip_suffix(&said)
            && let Some((before, number)) = head.rsplit_once("invalid type: integer `")
        {
            out = format!(
                "{before}the number {number} is too large: expected a whole number between \
                 -9223372036854775808 and 18446744073709551615; quote it to keep it as text"
            );
        }
    }
    for (rust, plain) in [
        ("expected u8", "expected a whole number of 0 or more"),
        ("expected u16", "expected a whole number of 0 or more"),
        ("expected u32", "expected a whole number of 0 or more"),
        ("expected u64", "expected a whole number of 0 or more"),
        ("expected usize", "expected a whole number of 0 or more"),
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
    ] {
        if let Some(rest) = out.strip_suffix(rust) {
            out = format!("{rest}{plain}");
        } else {
            out = out.replace(&format!("{rust} "), &format!("{plain} "));
        }
    }
    out
}

/// `text` as a `T`, once [`check_depth`] let it through.
///
/// # Errors
///
/// [`YamlError::TooDeep`] or the parser's error.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    check_depth(text)?;
    serde_yaml_ng::from_str(text).map_err(|e| {
        // The parser reads as it goes: a value of the wrong kind before a syntax error
        // further on is reported first. Text that is no YAML at all is said as such.
        if let Some(duplicate) = duplicate(text, &e) {
            return duplicate;
        }
        let e = if of_kind("MAG-Y001", &e.to_string()) == "MAG-Y001" {
            e
        } else {
            match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
                Err(syntax)
                    if syntax.location().is_some() && !syntax.to_string().contains("duplicate") =>
                {
                    syntax
                }
                _ => e,
            }
        };
        tab(text, &e).unwrap_or(YamlError::Parse(e))
    })
}

/// The parser's "found character that cannot start any token" said as what it is when the
/// character is a tab: indentation YAML does not take.
fn tab(text: &str, e: &serde_yaml_ng::Error) -> Option<YamlError> {
    if !e.to_string().contains("cannot start any token") {
        return None;
    }
    let at = e.location()?;
    let line = text.lines().nth(at.line().checked_sub(1)?)?;
    (line.chars().nth(at.column().checked_sub(1)?)? == '\t').then_some(YamlError::Tab {
        line: at.line(),
        column: at.column(),
    })
}

/// The parser's "duplicate field `key`" (which it places at the mapping's start) located at
/// the key's second appearance among keys of one indentation, when the text shows one.
fn duplicate(text: &str, e: &serde_yaml_ng::Error) -> Option<YamlError> {
    let message = e.to_string();
    let key = message
        .strip_prefix("duplicate field `")?
        .split_once('`')?
        .0
        .to_owned();
    let mut seen: Vec<(usize, usize)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let body = line.trim_start_matches(' ');
        let body = body.strip_prefix("- ").unwrap_or(body);
        let named = body
            .strip_prefix(key.as_str())
            .or_else(|| body.strip_prefix(&format!("\"{key}\"")))
            .or_else(|| body.strip_prefix(&format!("'{key}'")));
        if named.is_some_and(|rest| rest.starts_with(':')) {
            let column = line.len() - body.len() + 1;
            if let Some(first) = seen.iter().find(|(_, c)| *c == column) {
                return Some(YamlError::Duplicate {
                    key,
                    line: i + 1,
                    column,
                    first: *first,
                });
            }
            seen.push((i + 1, column));
        }
    }
    None
}

/// Refuses text whose flow collections nest deeper than [`MAX_FLOW_DEPTH`]. Brackets in
/// quoted text and comments do not count; one in plain text (`a: b[c`) counts, which only
/// errs on the side of refusing text no settings file has.
///
/// # Errors
///
/// [`YamlError::TooDeep`], naming where.
pub fn check_depth(text: &str) -> Result<(), YamlError> {
    let mut depth = 0usize;
    for (index, bracket) in flow_brackets(text) {
        if matches!(bracket, '[' | '{') {
            depth += 1;
            if depth > MAX_FLOW_DEPTH {
                let before: Vec<char> = text.chars().take(index).collect();
                let line = 1 + before.iter().filter(|c| **c == '\n').count();
                let column = 1 + before.iter().rev().take_while(|c| **c != '\n').count();
                return Err(YamlError::TooDeep { line, column });
            }
        } else {
            depth = depth.saturating_sub(1);
        }
    }
    Ok(())
}

/// The flow brackets (`[`, `]`, `{`, `}`) of `text` outside quoted text and comments, with
/// their character index, in order. A quote opens quoted text only where a scalar may begin
/// (`it's` is plain text).
pub fn flow_brackets(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut quote: Option<char> = None;
    let (mut comment, mut prev) = (false, ' ');
    text.chars().enumerate().filter_map(move |(i, c)| {
        let at_start = prev.is_whitespace() || "[{,:".contains(prev) || i == 0;
        let mut bracket = None;
        match (quote, c) {
            _ if comment => comment = c != '\n',
            (Some('"'), '"') if prev == '\\' => {}
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') if at_start => quote = Some(c),
            (None, '#') if prev.is_whitespace() => comment = true,
            (None, '[' | '{' | ']' | '}') => bracket = Some((i, c)),
            _ => {}
        }
        prev = c;
        bracket
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing_and_shallow_text_parses() {
        // At this depth the parser would take minutes: the scan refuses it first.
        let deep = format!("x: {}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = from_str::<serde_yaml_ng::Value>(&deep).unwrap_err();
        assert!(
            matches!(err, YamlError::TooDeep { line: 1, column } if column == 4 + MAX_FLOW_DEPTH),
            "{err}"
        );
        assert!(err.to_string().starts_with("[MAG-Y003]"), "{err}");

        let at_limit = format!(
            "x: {}1{}\n",
            "[".repeat(MAX_FLOW_DEPTH),
            "]".repeat(MAX_FLOW_DEPTH)
        );
        assert!(from_str::<serde_yaml_ng::Value>(&at_limit).is_ok());
        let over = format!("a: 1\nx: {}{}\n", "{".repeat(65), "}".repeat(65));
        assert!(matches!(
            check_depth(&over),
            Err(YamlError::TooDeep {
                line: 2,
                column: 68
            })
        ));
    }

    #[test]
    fn a_wrong_type_is_said_in_a_documents_words() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code, reason = "read by the test's parse only")]
        struct S {
            depth: u32,
            ratio: f64,
        }
        for (text, words) in [
            (
                "depth: deep\nratio: 1\n",
                "expected a whole number of 0 or more",
            ),
            (
                "depth: -1\nratio: 1\n",
                "expected a whole number of 0 or more",
            ),
            ("depth: 1\nratio: x\n", "expected a number"),
        ] {
            let e = from_str::<S>(text)
                .unwrap_err()
                .located("s.yaml", "MAG-Y001");
            assert!(e.ends_with(words), "{e}");
            assert!(e.contains("[MAG-Y007]"), "a value of the wrong kind: {e}");
        }
    }

    /// The parser's places are said once: its error's in front, where the collection it was
    /// reading opened in words.
    #[test]
    fn a_syntax_error_names_its_place_once_and_where_its_collection_opened() {
        let e = from_str::<serde_yaml_ng::Value>("workflow: [hello\n")
            .unwrap_err()
            .located("e.yaml", "MAG-TR005");
        assert!(e.starts_with("e.yaml:2:1: [MAG-TR005] "), "{e}");
        assert!(e.contains("(opened on line 1, column 11)"), "{e}");
        assert!(!e.contains("line 2 column 1"), "{e}");
    }

    /// Errors of a document's shape name no Rust type and take the code of their kind; a
    /// tab says it is one; the codes of other documents stay theirs.
    #[test]
    fn errors_of_shape_and_syntax_say_what_was_expected() {
        #[derive(Debug, Default, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code, reason = "read by the test's parse only")]
        struct Inner {
            seconds: u32,
        }
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code, reason = "read by the test's parse only")]
        struct S {
            #[serde(default)]
            inner: Inner,
            on: String,
        }
        for (text, want) in [
            (
                "on: x\ninner: 5\n",
                "s.yaml:2:8: [MAG-Y007] inner: invalid type: integer `5`, expected a mapping",
            ),
            (
                "on: x\ninnr: {}\n",
                "s.yaml:2:1: [MAG-Y005] unknown field `innr`",
            ),
            (
                "inner: {seconds: 1}\n",
                "[MAG-Y006] missing field `on`: expected it in this mapping",
            ),
            (
                "on: x\ninner:\n\tseconds: 1\n",
                "s.yaml:3:1: [MAG-Y001] invalid YAML: a tab character where YAML expects spaces",
            ),
            ("on: `x`\n", "expected a value, a key or a list item"),
        ] {
            let e = from_str::<S>(text)
                .unwrap_err()
                .located("s.yaml", "MAG-Y001");
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains("struct"), "{e}");
        }
        let e = from_str::<S>("on: x\ninner: 5\n")
            .unwrap_err()
            .located("e.yaml", "MAG-TR005");
        assert!(e.contains("[MAG-TR005] inner: invalid type"), "{e}");
    }

    #[test]
    fn a_duplicate_key_is_placed_at_its_second_appearance() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code, reason = "read by the test's parse only")]
        struct S {
            workflow: String,
            params: Option<serde_json::Value>,
        }
        let text = "workflow: a\nparams:\n  workflow: inner\nworkflow: b\n";
        let e = from_str::<S>(text)
            .unwrap_err()
            .located("e.yaml", "MAG-TR005");
        assert_eq!(
            e,
            "e.yaml:4:1: [MAG-TR005] duplicate key 'workflow': expected each key once (first \
             defined at 1:1)"
        );
    }

    #[test]
    fn brackets_in_quotes_and_comments_do_not_count() {
        let quoted = format!(
            "a: \"{}\"\nb: '{}'\n# {}\nc: [1, 2]\n",
            "[".repeat(100),
            "{".repeat(100),
            "[".repeat(100)
        );
        check_depth(&quoted).unwrap();
        let v: serde_yaml_ng::Value = from_str(&quoted).unwrap();
        assert_eq!(v["c"][1], serde_yaml_ng::Value::from(2));
        // A parser error passes through as it is.
        assert!(matches!(
            from_str::<serde_yaml_ng::Value>("a: [1"),
            Err(YamlError::Parse(_))
        ));
    }
}
