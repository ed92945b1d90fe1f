//! Reads YAML text into a span-preserving [`YamlNode`] tree.
//!
//! Built on the `saphyr-parser` event stream (a YAML 1.2 parser that reports the position of
//! every event) rather than a DOM library, so that scalar resolution follows the YAML 1.2
//! core schema exactly (see `scalar.rs`) and alias expansion is counted as it happens.
//! Aliases are resolved by copying the anchored node; every copied node counts against
//! [`LoadOptions::max_nodes`], so an alias bomb ("billion laughs") is rejected long before it
//! could exhaust memory. A `<<` key merges the mapping (or list of mappings) it names into
//! the mapping that holds it, as YAML 1.1's merge type and the reference's SnakeYAML do.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span as YSpan, Tag};

use crate::diagnostic::{Code, Diagnostic, Diagnostics, Span};
use crate::node::{YamlKind, YamlNode};
use crate::scalar::{Resolved, resolve_plain};

mod places;

/// Limits applied while reading a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Largest accepted document in bytes. Default: 1 MiB.
    pub max_bytes: usize,
    /// Largest number of nodes after alias expansion. Default: 100 000.
    pub max_nodes: usize,
    /// Deepest accepted nesting of collections. Default: 128.
    pub max_depth: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            max_bytes: 1024 * 1024,
            max_nodes: 100_000,
            max_depth: 128,
        }
    }
}

impl LoadOptions {
    /// Sets [`LoadOptions::max_bytes`].
    #[must_use]
    pub fn max_bytes(mut self, n: usize) -> Self {
        self.max_bytes = n;
        self
    }

    /// Sets [`LoadOptions::max_nodes`].
    #[must_use]
    pub fn max_nodes(mut self, n: usize) -> Self {
        self.max_nodes = n;
        self
    }

    /// Sets [`LoadOptions::max_depth`].
    #[must_use]
    pub fn max_depth(mut self, n: usize) -> Self {
        self.max_depth = n;
        self
    }
}

enum Frame {
    Seq {
        node: YamlNode,
        anchor: usize,
        items: Vec<YamlNode>,
    },
    Map {
        node: YamlNode,
        anchor: usize,
        entries: Vec<(YamlNode, YamlNode)>,
        key: Option<YamlNode>,
        /// Each key's text and the index of its first entry: duplicates are found in constant
        /// time, so a mapping of many keys loads in linear time.
        seen: HashMap<String, usize>,
    },
}

struct Reader<'t> {
    path: &'t str,
    text: &'t str,
    /// Byte offset of each character, plus `text.len()` at the end.
    char_bytes: Vec<usize>,
    opts: &'t LoadOptions,
    anchors: HashMap<usize, YamlNode>,
    nodes: usize,
    /// Of `nodes`, the copies aliases made.
    aliased: usize,
    stack: Vec<Frame>,
    diags: Diagnostics,
}

/// The first character YAML 1.2 does not allow in a stream (§5.1: only tab, line breaks and
/// printable characters; not NUL, BEL, DEL or the C1 controls but NEL), located: the parser
/// reports a NUL as an unclosed quote somewhere else, and passes others through.
fn unprintable(path: &str, text: &str) -> Option<Diagnostic> {
    let printable = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | '\u{85}')
            || (' '..='~').contains(&c)
            || ('\u{A0}'..='\u{D7FF}').contains(&c)
            || ('\u{E000}'..='\u{FFFD}').contains(&c)
            || c >= '\u{10000}'
    };
    let (at, c) = text.char_indices().find(|&(_, c)| !printable(c))?;
    // Counted as the parser counts: a byte-order mark is no column of the first line.
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let first_line = before.rsplit('\n').next().unwrap_or_default();
    let column = first_line
        .strip_prefix('\u{FEFF}')
        .filter(|_| line == 1)
        .unwrap_or(first_line)
        .chars()
        .count()
        + 1;
    Some(Diagnostic::error(
        path,
        Span::new(
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(column).unwrap_or(u32::MAX),
        ),
        Code::Syntax,
        format_args!(
            "invalid YAML: the control character U+{:04X} is not allowed in a document: expected \
             printable text; write it as the escape \"{}\" inside a double-quoted string",
            u32::from(c),
            if u32::from(c) <= 0xFF {
                format!("\\x{:02X}", u32::from(c))
            } else {
                format!("\\u{:04X}", u32::from(c))
            }
        ),
    ))
}

/// Parses `text` (labelled `path` in diagnostics) into a node tree.
///
/// A stream with no document yields a `Null` node at 1:1. Errors: syntax (with the parser's
/// line:column), size, node count/alias expansion, nesting depth, more than one document,
/// duplicate mapping keys, collections used as keys.
pub fn parse_yaml(path: &str, text: &str, opts: &LoadOptions) -> Result<YamlNode, Diagnostics> {
    let (root, diags) = parse_yaml_with_key_errors(path, text, opts)?;
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(root)
}

/// Whether `text` has a carriage return that is not followed by a line feed.
fn has_lone_cr(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter()
        .enumerate()
        .any(|(i, &c)| c == b'\r' && b.get(i + 1) != Some(&b'\n'))
}

/// `text` with each lone carriage return a line feed (byte for byte the same length).
fn lone_cr_as_lf(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() != Some(&'\n') {
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

/// Like [`parse_yaml`], but a document whose only mistakes are in its keys (a duplicate key,
/// whose later entries are left out; a key that is not a scalar) is still returned, with
/// those errors, so that the rest of the document can be checked too.
pub(crate) fn parse_yaml_with_key_errors(
    path: &str,
    text: &str,
    opts: &LoadOptions,
) -> Result<(YamlNode, Diagnostics), Diagnostics> {
    if text.len() > opts.max_bytes {
        return Err(Diagnostic::error(
            path,
            Span::new(1, 1),
            Code::TooLarge,
            format_args!(
                "document is {} bytes: expected at most {} bytes",
                text.len(),
                opts.max_bytes
            ),
        )
        .into());
    }
    // A lone carriage return (an old Mac editor's line break) is a line break to the parser;
    // as a line feed, which has the same length, every position counted here agrees with it.
    let lf_breaks;
    let text = if has_lone_cr(text) {
        lf_breaks = lone_cr_as_lf(text);
        lf_breaks.as_str()
    } else {
        text
    };
    if let Some(d) = unprintable(path, text) {
        return Err(d.into());
    }
    let mut char_bytes: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
    char_bytes.push(text.len());
    let mut r = Reader {
        path,
        text,
        char_bytes,
        opts,
        anchors: HashMap::new(),
        nodes: 0,
        aliased: 0,
        stack: Vec::new(),
        diags: Diagnostics::new(),
    };
    let root = r.run().map_err(Diagnostics::from)?;
    let root = root.unwrap_or(YamlNode {
        span: Span::new(1, 1),
        content: None,
        block: None,
        columns: None,
        places: None,
        written: None,
        kind: YamlKind::Null,
    });
    Ok((root, r.diags))
}

fn span_of(s: &YSpan) -> Span {
    let line = u32::try_from(s.start.line()).unwrap_or(u32::MAX);
    let col = u32::try_from(s.start.col() + 1).unwrap_or(u32::MAX);
    Span::new(line, col)
}

/// A tag as written: `!!int` for the core schema's, else handle and suffix (`!custom`).
fn tag_text(tag: &Tag) -> String {
    if tag.is_yaml_core_schema() {
        format!("!!{}", tag.suffix)
    } else {
        format!("{}{}", tag.handle, tag.suffix)
    }
}

/// The type a scalar's tag gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScalarTag {
    /// No tag: a plain scalar is resolved by the core schema, a quoted or block one is text.
    Resolved,
    Str,
    Int,
    Float,
    Bool,
    Null,
}

impl Reader<'_> {
    fn err(&self, span: Span, code: Code, msg: impl std::fmt::Display) -> Diagnostic {
        Diagnostic::error(self.path, span, code, msg)
    }

    fn syntax(&self, e: &ScanError) -> Diagnostic {
        crate::syntax_error::diagnose(self.path, self.text, e)
    }

    fn run(&mut self) -> Result<Option<YamlNode>, Diagnostic> {
        let mut root: Option<YamlNode> = None;
        let mut docs = 0usize;
        for item in Parser::new_from_str(self.text) {
            let (ev, ys) = item.map_err(|e| self.syntax(&e))?;
            let span = span_of(&ys);
            let done = match ev {
                Event::DocumentStart(_) => {
                    docs += 1;
                    if docs > 1 {
                        // Said, and the first document still checked, so that one pass
                        // reports its errors too; the rest of the file is not read.
                        let second = self.err(
                            span,
                            Code::Syntax,
                            "a second YAML document: expected exactly one document per file",
                        );
                        self.diags.push(second);
                        break;
                    }
                    None
                }
                Event::Scalar(value, style, anchor, tag) => {
                    let tag = self.scalar_tag(tag.as_deref(), span)?;
                    let node = self.scalar(&value, style, span, &ys, tag)?;
                    Some((node, anchor))
                }
                Event::Alias(id) => {
                    let Some(target) = self.anchors.get(&id) else {
                        return Err(self.err(span, Code::Syntax, "alias to an unknown anchor"));
                    };
                    let size = target.size();
                    let mut node = target.clone();
                    self.aliased = self.aliased.saturating_add(size);
                    self.count(size, span)?;
                    node.span = span;
                    node.content = None;
                    Some((node, 0))
                }
                Event::SequenceStart(anchor, tag) => {
                    self.collection_tag(tag.as_deref(), "seq", span)?;
                    self.open(span)?;
                    let node = YamlNode {
                        span,
                        content: None,
                        block: None,
                        columns: None,
                        places: None,
                        written: None,
                        kind: YamlKind::Null,
                    };
                    self.stack.push(Frame::Seq {
                        node,
                        anchor,
                        items: Vec::new(),
                    });
                    None
                }
                Event::MappingStart(anchor, tag) => {
                    self.collection_tag(tag.as_deref(), "map", span)?;
                    self.open(span)?;
                    let node = YamlNode {
                        span,
                        content: None,
                        block: None,
                        columns: None,
                        places: None,
                        written: None,
                        kind: YamlKind::Null,
                    };
                    self.stack.push(Frame::Map {
                        node,
                        anchor,
                        entries: Vec::new(),
                        key: None,
                        seen: HashMap::new(),
                    });
                    None
                }
                Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                    Some(Frame::Seq {
                        mut node,
                        anchor,
                        items,
                    }) => {
                        node.kind = YamlKind::Seq(items);
                        Some((node, anchor))
                    }
                    Some(Frame::Map {
                        mut node,
                        anchor,
                        entries,
                        ..
                    }) => {
                        node.kind = YamlKind::Map(self.merged(entries));
                        Some((node, anchor))
                    }
                    None => None,
                },
                _ => None,
            };
            if let Some((node, anchor)) = done {
                if anchor != 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                if let Some(n) = self.attach(node) {
                    root = Some(n);
                }
            }
        }
        Ok(root)
    }

    /// A mapping's entries with its merge keys applied (`<<: *base`, or `<<: [*a, *b]`, as
    /// YAML 1.1's merge type and SnakeYAML have it): the merged mappings' entries take the
    /// place of the `<<` entry, except keys the mapping sets itself; of several mappings, the
    /// first to set a key wins. A `<<` whose value is not a mapping (or a list of them) is an
    /// error.
    fn merged(&mut self, entries: Vec<(YamlNode, YamlNode)>) -> Vec<(YamlNode, YamlNode)> {
        // Only a plain `<<` merges: a quoted one is an ordinary key (its text starts after
        // the quote, where a plain scalar's starts at the node).
        let is_merge = |k: &YamlNode| k.as_str() == Some("<<") && k.content == Some(k.span);
        if !entries.iter().any(|(k, _)| is_merge(k)) {
            return entries;
        }
        let own: std::collections::HashSet<String> = entries
            .iter()
            .filter(|(k, _)| !is_merge(k))
            .filter_map(|(k, _)| k.key_text())
            .collect();
        let mut taken = own;
        let mut out = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            if !is_merge(&k) {
                out.push((k, v));
                continue;
            }
            let maps: Vec<YamlNode> = match v.kind {
                YamlKind::Map(_) => vec![v],
                YamlKind::Seq(items) => {
                    // The mappings of the list merge; each other item is named where it
                    // stands, with what it is.
                    let (maps, others): (Vec<_>, Vec<_>) =
                        items.into_iter().partition(|i| i.as_map().is_some());
                    for item in &others {
                        self.diags.push(Diagnostic::error(
                            self.path,
                            item.span,
                            Code::WrongType,
                            format_args!(
                                "an item of the list '<<' merges is {}: expected an alias of a \
                                 mapping (`<<: [*a, *b]`)",
                                crate::build::found(item),
                            ),
                        ));
                    }
                    maps
                }
                _ => {
                    self.diags.push(Diagnostic::error(
                        self.path,
                        v.span,
                        Code::WrongType,
                        format_args!(
                            "'<<' merges a mapping into this one, and its value is {}: expected \
                             an alias of a mapping (`<<: *base`) or a list of them \
                             (`<<: [*a, *b]`)",
                            crate::build::found(&v)
                        ),
                    ));
                    continue;
                }
            };
            for map in maps {
                let YamlKind::Map(merged) = map.kind else {
                    continue;
                };
                for (mk, mv) in merged {
                    if mk.key_text().is_some_and(|t| taken.insert(t)) {
                        out.push((mk, mv));
                    }
                }
            }
        }
        out
    }

    fn count(&mut self, n: usize, span: Span) -> Result<(), Diagnostic> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > self.opts.max_nodes {
            let max = self.opts.max_nodes;
            // Aliases are named only when they made some of the nodes: a long document
            // without any is not sent looking for them.
            return Err(if self.aliased == 0 {
                self.err(
                    span,
                    Code::TooComplex,
                    format_args!(
                        "document has more than {max} nodes (keys, values and list items): \
                         expected a smaller document; split it, for example into sub-workflows"
                    ),
                )
            } else {
                self.err(
                    span,
                    Code::TooComplex,
                    format_args!(
                        "document expands to more than {max} nodes ({} of them copies made by \
                         aliases): expected a smaller document; repeated aliases of aliases (an \
                         alias bomb) are rejected",
                        self.aliased
                    ),
                )
            });
        }
        Ok(())
    }

    fn open(&mut self, span: Span) -> Result<(), Diagnostic> {
        self.count(1, span)?;
        if self.stack.len() >= self.opts.max_depth {
            return Err(self.err(
                span,
                Code::TooComplex,
                format_args!(
                    "collections nested deeper than {} levels: expected a flatter document",
                    self.opts.max_depth
                ),
            ));
        }
        Ok(())
    }

    /// What a scalar's tag asks for: the core schema's `!!str`, `!!int`, `!!float`, `!!bool`
    /// and `!!null` (and the non-specific `!`, a string) decide its type; any other tag is an
    /// error, not silently dropped.
    fn scalar_tag(&self, tag: Option<&Tag>, span: Span) -> Result<ScalarTag, Diagnostic> {
        let Some(tag) = tag else {
            return Ok(ScalarTag::Resolved);
        };
        if format!("{}{}", tag.handle, tag.suffix) == "!" {
            return Ok(ScalarTag::Str);
        }
        if tag.is_yaml_core_schema() {
            match tag.suffix.as_str() {
                "str" => return Ok(ScalarTag::Str),
                "int" => return Ok(ScalarTag::Int),
                "float" => return Ok(ScalarTag::Float),
                "bool" => return Ok(ScalarTag::Bool),
                "null" => return Ok(ScalarTag::Null),
                _ => {}
            }
        }
        Err(self.err(
            span,
            Code::Syntax,
            format_args!(
                "unknown tag `{}` on a scalar: expected no tag, or one of the core schema's \
                 !!str, !!int, !!float, !!bool, !!null",
                tag_text(tag)
            ),
        ))
    }

    /// A collection's tag may only say what it is (`!!seq`, `!!map`).
    fn collection_tag(&self, tag: Option<&Tag>, is: &str, span: Span) -> Result<(), Diagnostic> {
        match tag {
            None => Ok(()),
            Some(t) if t.is_yaml_core_schema() && t.suffix == is => Ok(()),
            Some(t) => Err(self.err(
                span,
                Code::Syntax,
                format_args!(
                    "unknown tag `{}` on a {}: expected no tag, or !!{is}",
                    tag_text(t),
                    if is == "seq" { "list" } else { "mapping" }
                ),
            )),
        }
    }

    fn scalar(
        &mut self,
        value: &str,
        style: ScalarStyle,
        span: Span,
        ys: &YSpan,
        tag: ScalarTag,
    ) -> Result<YamlNode, Diagnostic> {
        self.count(1, span)?;
        let resolved = |value: &str| match resolve_plain(value) {
            Resolved::Null => YamlKind::Null,
            Resolved::Bool(b) => YamlKind::Bool(b),
            Resolved::Int(i) => YamlKind::Int(i),
            Resolved::Float(f) => YamlKind::Float(f),
            Resolved::Str => YamlKind::Str(value.to_owned()),
        };
        let kind = match tag {
            ScalarTag::Resolved if style == ScalarStyle::Plain => resolved(value),
            ScalarTag::Resolved | ScalarTag::Str => YamlKind::Str(value.to_owned()),
            ScalarTag::Int | ScalarTag::Float | ScalarTag::Bool | ScalarTag::Null => {
                let kind = match (tag, resolved(value.trim())) {
                    (ScalarTag::Int, k @ YamlKind::Int(_))
                    | (ScalarTag::Float, k @ YamlKind::Float(_))
                    | (ScalarTag::Bool, k @ YamlKind::Bool(_))
                    | (ScalarTag::Null, k @ YamlKind::Null) => Some(k),
                    (ScalarTag::Float, YamlKind::Int(i)) => Some(YamlKind::Float(i as f64)),
                    _ => None,
                };
                kind.ok_or_else(|| {
                    let (name, what) = match tag {
                        ScalarTag::Int => ("int", "an integer"),
                        ScalarTag::Float => ("float", "a number"),
                        ScalarTag::Bool => ("bool", "true or false"),
                        _ => ("null", "empty, ~ or null"),
                    };
                    self.err(
                        span,
                        Code::WrongType,
                        format_args!("`{value}` is tagged !!{name}: expected {what}"),
                    )
                })?
            }
        };
        let written = matches!(kind, YamlKind::Int(_) | YamlKind::Float(_)).then(|| value.into());
        let skip = match style {
            ScalarStyle::Plain => Some(0),
            ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => Some(1),
            _ => None,
        };
        let content = skip.and_then(|skip| {
            let start = ys.start.index() + skip;
            let end = start + value.chars().count();
            let (b0, b1) = (*self.char_bytes.get(start)?, *self.char_bytes.get(end)?);
            let verbatim = !value.contains('\n') && self.text.get(b0..b1) == Some(value);
            verbatim.then(|| span.shifted(skip))
        });
        let block = (style == ScalarStyle::Literal)
            .then(|| self.literal_block(value, span))
            .flatten();
        let columns = match style {
            ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted if content.is_none() => {
                self.quoted_columns(ys.start.index(), style == ScalarStyle::DoubleQuoted, value)
            }
            _ => None,
        };
        let places = match style {
            ScalarStyle::Plain
            | ScalarStyle::SingleQuoted
            | ScalarStyle::DoubleQuoted
            | ScalarStyle::Folded
                if content.is_none() && columns.is_none() =>
            {
                self.scalar_places(ys.start.index(), span, style, value)
            }
            _ => None,
        };
        Ok(YamlNode {
            span,
            content,
            block,
            columns,
            places,
            written,
            kind,
        })
    }

    /// Attaches a finished node to its parent; returns it when it is the document root.
    fn attach(&mut self, node: YamlNode) -> Option<YamlNode> {
        let path = self.path;
        match self.stack.last_mut() {
            None => Some(node),
            Some(Frame::Seq { items, .. }) => {
                items.push(node);
                None
            }
            Some(Frame::Map {
                entries, key, seen, ..
            }) => {
                match key.take() {
                    None => *key = Some(node),
                    Some(k) => {
                        match k.key_text() {
                            None => {
                                self.diags.push(Diagnostic::error(
                                    path,
                                    k.span,
                                    Code::WrongType,
                                    format_args!(
                                        "{} used as a mapping key: expected a scalar key",
                                        k.kind_name()
                                    ),
                                ));
                                // Left out, as a duplicate key's entry is.
                                return None;
                            }
                            Some(text) => {
                                if let Some(&first) = seen.get(&text) {
                                    self.diags.push(Diagnostic::error(
                                        path,
                                        k.span,
                                        Code::DuplicateKey,
                                        format_args!(
                                            "duplicate key '{text}': expected each key once \
                                             (first defined at {})",
                                            entries[first].0.span
                                        ),
                                    ));
                                    // Only the first entry is kept: the rest of the document
                                    // is checked as if the later ones were not there.
                                    return None;
                                }
                                seen.insert(text, entries.len());
                            }
                        }
                        entries.push((k, node));
                    }
                }
                None
            }
        }
    }
}
