//! What a YAML syntax error means for a document's author: the parser's complaint, pointed at
//! the mistake itself where the text shows it (an unclosed bracket, a tab, a key indented
//! between its siblings, an unclosed quote) and said with what was expected.

use saphyr_parser::ScanError;

use crate::diagnostic::{Code, Diagnostic, Span};

/// The longest key YAML reads without quotes or `? ` (YAML 1.2, "implicit keys").
const MAX_PLAIN_KEY: usize = 1024;

/// The diagnostic of the syntax error `e` in `text`, the document at `path`.
pub(crate) fn diagnose(path: &str, text: &str, e: &ScanError) -> Diagnostic {
    let m = e.marker();
    let at = |line: usize, col: usize| {
        Span::new(
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(col + 1).unwrap_or(u32::MAX),
        )
    };
    let info = e.info();
    // The scanner names where it was when it gave up, which is not always where the
    // mistake is: point at the mistake itself where the text shows it.
    // "found a tab …" after a scalar, "tabs disallowed within this context" in an
    // indentation: the tab may lie before where the scanner stopped, on the same line.
    if (info.contains("found a tab") || info.contains("tabs disallowed"))
        && let Some((line, col)) = first_tab_from(text, m.index().saturating_sub(m.col()))
    {
        return Diagnostic::error(
            path,
            at(line, col),
            Code::Syntax,
            "invalid YAML: a tab character where YAML expects spaces (YAML indents with \
             spaces only)",
        );
    }
    // Inside an unclosed `[`/`{`, the scanner trips over what follows (a `:` of the next
    // key, the indentation of the next line): the bracket is the mistake.
    let in_flow = [
        "flow sequence",
        "flow mapping",
        "flow construct",
        "placement of ':'",
        // The next line of a flow collection left open is "invalid indentation".
        "indentation",
        // A flow collection left open at the end of the text.
        "expected node content",
    ]
    .iter()
    .any(|what| info.contains(what));
    let close = |open: char| if open == '[' { ']' } else { '}' };
    match unclosed_flow(text, m.index() + 1) {
        Some(FlowMistake::Unclosed(line, col, open)) if in_flow => {
            return Diagnostic::error(
                path,
                at(line, col),
                Code::Syntax,
                format_args!(
                    "invalid YAML: {info}; this `{open}` is not closed by a `{}` (found \
                     the problem at {}:{})",
                    close(open),
                    m.line(),
                    m.col() + 1
                ),
            );
        }
        Some(FlowMistake::Mismatched(line, col, open)) if in_flow => {
            return Diagnostic::error(
                path,
                at(line, col),
                Code::Syntax,
                format_args!(
                    "invalid YAML: {info}; this bracket closes a `{open}`: expected `{}`",
                    close(open)
                ),
            );
        }
        _ => {}
    }
    // `key:<tab>value`: the parser asks for whitespace, and a tab is whitespace to a reader.
    if info.contains("must be followed by a valid YAML whitespace")
        && let Some(line_text) = text.lines().nth(m.line().saturating_sub(1))
        // A byte-order mark is no column of the first line.
        && let line_text = line_text.strip_prefix('\u{FEFF}').unwrap_or(line_text)
        && let Some(byte) = line_text.find(":\t")
    {
        let col = line_text[..byte].chars().count() + 1;
        return Diagnostic::error(
            path,
            at(m.line(), col),
            Code::Syntax,
            "invalid YAML: a tab after `:` where YAML expects a space between a key and its \
             value: expected `key: value` with a space",
        );
    }
    // `key:value` with no space after the colon is one plain text, not a key: the parser
    // notices only at a later line (an indented key under it, the next sibling).
    if (info.contains("mapping values are not allowed")
        || info.contains("simple key expect")
        || info.contains("could not find expected ':'"))
        && let Some((line, col, key)) = glued_key(text, m.line())
    {
        return Diagnostic::error(
            path,
            at(line, col),
            Code::Syntax,
            format_args!(
                "invalid YAML: `{key}:` is not followed by a space, so it is not read as a key \
                 (YAML takes `{key}:…` as one text): expected `{key}: ` and its value"
            ),
        );
    }
    // A mapping's line without any `:` (`outcome success`): the parser stops at the next one
    // (a `key: value` below it then reads as the plain text's continuation).
    // After a blank line or a comment, the parser reads the next key as a second document
    // or a key it did not expect: the line without a colon is at that key's indentation.
    let sibling_before = |(line, col): (usize, usize)| {
        line < m.line() && indentation_of(text, m.line()) == Some(col)
    };
    if (info.contains("simple key expect")
        || (info.contains("mapping values are not allowed")
            && colonless_line(text, m.line()).is_some_and(|(line, _)| line < m.line()))
        || ((info.contains("did not find expected <document start>")
            || info.contains("did not find expected key"))
            && colonless_line(text, m.line()).is_some_and(sibling_before)))
        && let Some((line, col)) = colonless_line(text, m.line())
    {
        return Diagnostic::error(
            path,
            at(line, col),
            Code::Syntax,
            "invalid YAML: this line of a mapping has no `:`: expected `key: value`",
        );
    }
    if (info.contains("mapping values are not allowed") || info.contains("simple key expect"))
        && let Some(line_text) = text.lines().nth(m.line().saturating_sub(1))
        && line_text
            .trim_start()
            .split(": ")
            .next()
            .is_some_and(|key| {
                key.chars().count() > MAX_PLAIN_KEY && !key.starts_with(['"', '\'', '?'])
            })
    {
        // YAML reads a key written without quotes or `? ` only up to 1,024 characters: named
        // where the key begins.
        let indent = line_text.chars().take_while(|c| c.is_whitespace()).count();
        return Diagnostic::error(
            path,
            at(m.line(), indent),
            Code::Syntax,
            format_args!(
                "invalid YAML: a key without quotes may be at most {MAX_PLAIN_KEY} characters \
                 long: expected a shorter key, or the key in quotes"
            ),
        );
    }
    if info.contains("mapping values are not allowed") {
        // `a: b` on a line indented further than the key above it continues that key's
        // plain value, where a `: ` cannot appear.
        return Diagnostic::error(
            path,
            at(m.line(), m.col()),
            Code::Syntax,
            format_args!(
                "invalid YAML: {info}: expected this key at the indentation of the keys \
                 beside it (indented further, it continues the value above), or the \
                 value quoted if its `: ` is text"
            ),
        );
    }
    // A key of a list item written at the column of the item's `-`: the parser wants
    // another item there.
    if info.contains("did not find expected '-' indicator")
        && let Some(hint) = key_at_dash_column(text, m.line())
    {
        return Diagnostic::error(path, at(m.line(), m.col()), Code::Syntax, hint);
    }
    if info.contains("did not find expected key")
        && let Some(line_text) = text.lines().nth(m.line().saturating_sub(1))
        && let dash = line_text.trim_start_matches(' ')
        && (dash == "-" || dash.starts_with("- "))
    {
        let indent = line_text.len() - dash.len();
        return Diagnostic::error(
            path,
            at(m.line(), indent),
            Code::Syntax,
            format_args!(
                "invalid YAML: {info}: a list item (`- `) stands among the keys of a mapping: \
                 expected `key: value` here, or the list indented under a key of its own \
                 (`key:` then `  - item`)"
            ),
        );
    }
    if info.contains("did not find expected key")
        && let Some(hint) = indentation_hint(text, m.line())
    {
        return Diagnostic::error(
            path,
            at(m.line(), m.col()),
            Code::Syntax,
            format_args!("invalid YAML: {info}: {hint}"),
        );
    }
    if info.contains("unknown anchor") {
        let alias = word_at(text, m.index());
        let name = alias.trim_start_matches('*');
        return Diagnostic::error(
            path,
            at(m.line(), m.col()),
            Code::Syntax,
            format_args!(
                "invalid YAML: the alias `{alias}` names no anchor: expected `&{name}` on a \
                 value earlier in the document, or the text quoted if the `*` is meant \
                 literally"
            ),
        );
    }
    if let Some(c) = info
        .strip_prefix("unexpected character: `")
        .and_then(|rest| rest.chars().next())
        .filter(|c| matches!(c, '@' | '`'))
    {
        return Diagnostic::error(
            path,
            at(m.line(), m.col()),
            Code::Syntax,
            format_args!(
                "invalid YAML: '{c}' is reserved and cannot begin a plain value: expected \
                 the value quoted (e.g. \"{c}…\")"
            ),
        );
    }
    if info.contains("recursion limit exceeded") {
        // The reader's own limit on flow collections, met before the loader's depth limit:
        // the same mistake, said the same way.
        return Diagnostic::error(
            path,
            at(m.line(), m.col()),
            Code::TooComplex,
            "collections nested too deeply: expected a flatter document",
        );
    }
    if info.contains("invalid trailing content after") {
        // `'it's'`: the quote ended the value and the text goes on. The scanner names a
        // double-quoted scalar whichever quote it was.
        let line_start = m.index().saturating_sub(m.col());
        let quote = text
            .chars()
            .skip(line_start)
            .take(m.col())
            .collect::<String>()
            .trim_end()
            .chars()
            .last()
            .filter(|c| matches!(c, '\'' | '"'))
            .unwrap_or('"');
        let inside = if quote == '\'' {
            "a `'` inside single quotes is written `''` (`'it''s'`)"
        } else {
            "a `\"` inside double quotes is written `\\\"`"
        };
        return Diagnostic::error(
            path,
            at(m.line(), m.col()),
            Code::Syntax,
            format_args!(
                "invalid YAML: text after the closing {quote} of a quoted value: expected the \
                 value to end at its closing quote; {inside}, or the whole value quoted with \
                 the other quote"
            ),
        );
    }
    if info.contains("unknown escape character") {
        // The scanner points at the opening quote: the escape it does not know is the
        // mistake, the first backslash of the scalar not followed by one YAML knows.
        let chars: Vec<char> = text.chars().skip(m.index()).collect();
        let mut bad = None;
        let mut i = 1; // past the opening quote
        while i + 1 < chars.len() && chars[i] != '"' {
            if chars[i] == '\\' {
                if !"0abt\tnvfre \"/\\N_LPxuU\n\r".contains(chars[i + 1]) {
                    bad = Some(i);
                    break;
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        let index = m.index() + bad.unwrap_or(0);
        let (line, col) = position_of(text, |i, _| i == index).unwrap_or((m.line(), m.col()));
        let escape: String = chars.iter().skip(bad.unwrap_or(0)).take(2).collect();
        return Diagnostic::error(
            path,
            at(line, col),
            Code::Syntax,
            format_args!(
                "invalid YAML: unknown escape `{escape}` in a double-quoted string: expected \
                 one of \\\\ \\\" \\/ \\n \\t \\r \\0 \\a \\b \\e \\f \\v \\xXX \\uXXXX \\UXXXXXXXX, \
                 or the text single-quoted (where a backslash is itself)"
            ),
        );
    }
    if info.contains("indentation in quoted scalar") && !closes_later(text, m.index()) {
        let quote = text.chars().nth(m.index()).unwrap_or('\'');
        return Diagnostic::error(
            path,
            at(m.line(), m.col()),
            Code::Syntax,
            format_args!(
                "invalid YAML: the quoted text that starts here is never closed: expected a \
                 closing `{quote}` (or no quote at the start, if it is meant as text)"
            ),
        );
    }
    if info.contains("indentation in quoted scalar") {
        return Diagnostic::error(
            path,
            at(m.line(), m.col()),
            Code::Syntax,
            format_args!(
                "invalid YAML: {info}: expected the closing quote of the quoted text that \
                 starts here (a quoted text that goes on to the next line indents it further \
                 than its key)"
            ),
        );
    }
    if info.contains("quoted scalar") && info.contains("end of stream") {
        return Diagnostic::error(
            path,
            at(m.line(), m.col()),
            Code::Syntax,
            format_args!(
                "invalid YAML: {info}: expected a closing quote for the quoted text that \
                 starts here"
            ),
        );
    }
    Diagnostic::error(
        path,
        at(m.line(), m.col()),
        Code::Syntax,
        format_args!("invalid YAML: {info}"),
    )
}

/// The line (1-based), column (0-based, of the `:`) and key of a `key:value` written without
/// the space after the colon, on line `line` or the content lines just above it.
/// The message for line `line` (1-based) when it holds a `key:` at the column of the `-` of
/// the list item above it: the key meant for that item, or a new item without its `-`.
fn key_at_dash_column(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.checked_sub(1)?)?;
    let body = here.trim_start_matches(' ');
    let col = here.len() - body.len();
    let key = body
        .split(':')
        .next()
        .filter(|k| !k.is_empty() && body.contains(':'))?;
    // The nearest line above indented no deeper than this one: the list item's `-`.
    let item = lines[..line - 1].iter().rev().find(|l| {
        let t = l.trim_start_matches(' ');
        !t.is_empty() && !t.starts_with('#') && l.len() - t.len() <= col
    })?;
    let item_body = item.trim_start_matches(' ');
    if item.len() - item_body.len() != col || !item_body.starts_with("- ") {
        return None;
    }
    let first = item_body[2..].trim_start_matches(' ');
    let inner = col + (item_body.len() - first.len());
    let beside = first.split(':').next().unwrap_or_default();
    Some(format!(
        "invalid YAML: `{key}:` stands at the column of the `-` of the list item above, where \
         YAML expects another item: expected it indented by {inner} (beside `{beside}`) to \
         belong to that item, or `- {key}:` to start an item of its own"
    ))
}

fn glued_key(text: &str, line: usize) -> Option<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let last = line.min(lines.len());
    (last.saturating_sub(3)..last).rev().find_map(|i| {
        let l = lines[i];
        let body = l.trim_start_matches(' ');
        let body = body.strip_prefix("- ").unwrap_or(body);
        let key_len = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_-.".contains(c)))
            .unwrap_or(body.len());
        let rest = &body[key_len..];
        let glued = key_len > 0
            && rest.starts_with(':')
            && rest[1..]
                .chars()
                .next()
                .is_some_and(|c| !c.is_whitespace() && !matches!(c, ':' | '/'));
        glued.then(|| {
            let col = l.len() - body.len() + key_len;
            (i + 1, col, body[..key_len].to_owned())
        })
    })
}

/// The line (1-based) and indentation of the nearest content line before line `line` (or on
/// it) that has no `:` at all, among the two mapping lines just above it (blank lines and
/// comments between them do not count).
fn colonless_line(text: &str, line: usize) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let last = line.min(lines.len());
    lines[..last]
        .iter()
        .enumerate()
        .rev()
        .map(|(i, l)| (i, l.trim_start_matches(' ')))
        .filter(|(_, body)| !body.is_empty() && !body.starts_with('#'))
        .take(2)
        .find_map(|(i, body)| {
            let content = !body.starts_with(['-', '"', '\'', '[', '{']);
            (content && !body.contains(':')).then(|| (i + 1, lines[i].len() - body.len()))
        })
}

/// The indentation of line `line` (1-based), if the text has that line.
fn indentation_of(text: &str, line: usize) -> Option<usize> {
    let l = text.lines().nth(line.checked_sub(1)?)?;
    Some(l.len() - l.trim_start_matches(' ').len())
}

/// Whether the quote at character `start` (`'` or `"`) is closed anywhere after it: `''`
/// inside single quotes and a backslash's escape inside double quotes do not close.
fn closes_later(text: &str, start: usize) -> bool {
    let mut chars = text.chars().skip(start);
    let Some(quote) = chars.next().filter(|c| matches!(c, '\'' | '"')) else {
        return true;
    };
    let mut chars = chars.peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if quote == '"' => {
                chars.next();
            }
            '\'' if quote == '\'' && chars.peek() == Some(&'\'') => {
                chars.next();
            }
            c if c == quote => return true,
            _ => {}
        }
    }
    false
}

/// The line (1-based) and column (0-based) of the first tab at or after character `from`.
fn first_tab_from(text: &str, from: usize) -> Option<(usize, usize)> {
    position_of(text, |i, c| i >= from && c == '\t')
}

/// The line and column of the first character `hit` picks (by character index and value).
fn position_of(text: &str, hit: impl Fn(usize, char) -> bool) -> Option<(usize, usize)> {
    let (mut line, mut col) = (1, 0);
    for (i, c) in text.chars().enumerate() {
        if hit(i, c) {
            return Some((line, col));
        }
        if i == 0 && c == '\u{FEFF}' {
            // A byte-order mark is no column of the first line, as the parser counts.
            continue;
        }
        if c == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
    }
    None
}

/// For a line indented to match no mapping above it: the indentations it could have, from the
/// lines above (the line just above, then each less indented key that holds it), e.g.
/// "this line is indented by 3 spaces, which matches no mapping above it: expected 4 (beside
/// `type`), 2 (beside `done`) or 0 (beside `states`)". `None` when the line matches one.
fn indentation_hint(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let content = |l: &&&str| {
        let t = l.trim_start_matches(' ');
        !t.is_empty() && !t.starts_with('#')
    };
    let here = indent(lines.get(line.checked_sub(1)?)?);
    let mut options: Vec<(usize, String)> = Vec::new();
    for l in lines[..line - 1].iter().rev().filter(content) {
        // A key after a list item's `- ` stands where its text begins, not at the dash.
        let body = l.trim_start_matches(' ');
        let i = match body.strip_prefix("- ") {
            Some(after) => l.len() - after.trim_start_matches(' ').len(),
            None => indent(l),
        };
        if options.last().is_none_or(|(last, _)| i < *last) {
            let key = body.trim_start_matches("- ").trim_start_matches(' ');
            let key = key.split(':').next().unwrap_or(key).trim();
            options.push((i, key.to_owned()));
        }
        if indent(l) == 0 {
            break;
        }
    }
    if options.iter().any(|(i, _)| *i == here) {
        return None;
    }
    let listed: Vec<String> = options
        .iter()
        .map(|(i, key)| format!("{i} (beside `{key}`)"))
        .collect();
    let expected = match listed.split_last()? {
        (last, []) => last.clone(),
        (last, rest) => format!("{} or {last}", rest.join(", ")),
    };
    Some(format!(
        "this line is indented by {here} spaces, which matches no mapping above it: expected \
         {expected}"
    ))
}

/// What went wrong with the brackets before character `until` (brackets inside quotes and
/// comments do not count).
enum FlowMistake {
    /// The innermost `[` or `{` still open, at its line and column.
    Unclosed(usize, usize, char),
    /// The first `]` or `}` that closes the other kind of bracket, at its line and column, and
    /// the bracket it should have closed.
    Mismatched(usize, usize, char),
}

fn unclosed_flow(text: &str, until: usize) -> Option<FlowMistake> {
    let mut open: Vec<(usize, char)> = Vec::new();
    let mut mismatched: Option<(usize, char)> = None;
    let brackets = magrathea_exec::yaml_text::flow_brackets(text).take_while(|(i, _)| *i < until);
    for (i, c) in brackets {
        if matches!(c, '[' | '{') {
            open.push((i, c));
        } else if let Some((_, o)) = open.pop()
            && (o == '[') != (c == ']')
            && mismatched.is_none()
        {
            mismatched = Some((i, o));
        }
    }
    if let Some((index, o)) = mismatched {
        let (line, col) = position_of(text, |i, _| i == index)?;
        return Some(FlowMistake::Mismatched(line, col, o));
    }
    let (index, c) = open.pop()?;
    let (line, col) = position_of(text, |i, _| i == index)?;
    Some(FlowMistake::Unclosed(line, col, c))
}

/// The text from byte `at` to the next space, comma, bracket or line end (an alias as
/// written, for a message).
fn word_at(text: &str, at: usize) -> &str {
    let rest = text.get(at..).unwrap_or_default();
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, ',' | ']' | '}'))
        .unwrap_or(rest.len());
    &rest[..end]
}
