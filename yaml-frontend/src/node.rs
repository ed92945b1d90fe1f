//! The span-preserving YAML tree: every node knows where it starts in the source.

use serde_json::Value;

use crate::diagnostic::Span;

/// One YAML node with its source position.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlNode {
    /// Where the node starts (for quoted scalars: the opening quote).
    pub span: Span,
    /// Where the scalar's characters start when they appear verbatim on one source line, so
    /// that character `i` of the value sits at `content.shifted(i)`. `None` for collections and
    /// for scalars with escapes, folding or several lines.
    pub content: Option<Span>,
    /// Where a literal block scalar's (`|`) first line starts when every line of the value
    /// appears verbatim, at one indentation, on the source lines below its header: character
    /// `c` of the value's line `k` sits at `block.line + k`, `block.column + c`. `None`
    /// otherwise.
    pub block: Option<Span>,
    /// For a quoted scalar on one source line whose value is not its text (escapes such as
    /// `\"` or `\x41`, or `''` in single quotes): the column, counted from the opening
    /// quote, of each character of the value, then of the closing quote. `None` otherwise.
    pub columns: Option<Box<[u32]>>,
    /// For a scalar over several source lines that none of the above place (plain, quoted
    /// without escapes, or folded `>`): the line and column of each character of the value,
    /// a blank the folding made standing at the next character written. `None` otherwise.
    pub places: Option<Box<[Span]>>,
    /// The characters as written, for a plain scalar that resolved to a number: `1.10` is the
    /// float 1.1, but a free-text field such as `version:` keeps `"1.10"`. `None` otherwise.
    pub written: Option<Box<str>>,
    /// The value.
    pub kind: YamlKind,
}

/// The value of a [`YamlNode`], resolved per the YAML 1.2 core schema.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum YamlKind {
    /// `null`, `~` or empty.
    Null,
    /// `true` / `false` (YAML 1.2: never `yes`/`on`).
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// A float (may be infinite or NaN).
    Float(f64),
    /// A string (every quoted or block scalar, and unresolved plain scalars).
    Str(String),
    /// A sequence.
    Seq(Vec<YamlNode>),
    /// A mapping in source order: (key node, value node).
    Map(Vec<(YamlNode, YamlNode)>),
}

impl YamlNode {
    /// The string value, if this is a string.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            YamlKind::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The entries, if this is a mapping.
    #[must_use]
    pub fn as_map(&self) -> Option<&[(YamlNode, YamlNode)]> {
        match &self.kind {
            YamlKind::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The items, if this is a sequence.
    #[must_use]
    pub fn as_seq(&self) -> Option<&[YamlNode]> {
        match &self.kind {
            YamlKind::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// The value under the first key whose text is `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&YamlNode> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.key_text().as_deref() == Some(key))
            .map(|(_, v)| v)
    }

    /// The text of a scalar used as a mapping key (`true` renders as `"true"`); `None` for
    /// collections.
    #[must_use]
    pub fn key_text(&self) -> Option<String> {
        match &self.kind {
            YamlKind::Null => Some("null".to_owned()),
            YamlKind::Bool(b) => Some(b.to_string()),
            YamlKind::Int(i) => Some(i.to_string()),
            YamlKind::Float(f) => Some(f.to_string()),
            YamlKind::Str(s) => Some(s.clone()),
            YamlKind::Seq(_) | YamlKind::Map(_) => None,
        }
    }

    /// The scalar as the author wrote it when it is a number ([`YamlNode::written`]), else
    /// [`YamlNode::key_text`]: the text a free-text field takes from a number.
    #[must_use]
    pub fn text_as_written(&self) -> Option<String> {
        match &self.written {
            Some(w) => Some(w.to_string()),
            None => self.key_text(),
        }
    }

    /// A short noun for messages: `a string`, `a number`, `a mapping`, ...
    #[must_use]
    pub fn kind_name(&self) -> &'static str {
        match &self.kind {
            YamlKind::Null => "null",
            YamlKind::Bool(_) => "a boolean",
            YamlKind::Int(_) => "an integer",
            YamlKind::Float(_) => "a number",
            YamlKind::Str(_) => "a string",
            YamlKind::Seq(_) => "a list",
            YamlKind::Map(_) => "a mapping",
        }
    }

    /// The span of character `offset` of a scalar's value: exact when the scalar is verbatim
    /// on one line, a verbatim literal block, or placed character by character ([`Self::places`]),
    /// otherwise the node's start.
    #[must_use]
    pub fn span_at(&self, char_offset: usize) -> Span {
        if let Some(c) = self.content {
            return c.shifted(char_offset);
        }
        if let Some(cols) = &self.columns
            && let Some(&col) = cols.get(char_offset.min(cols.len().saturating_sub(1)))
        {
            return self.span.shifted(col as usize);
        }
        if let Some(places) = &self.places
            && let Some(&at) = places.get(char_offset.min(places.len().saturating_sub(1)))
        {
            return at;
        }
        if let (Some(b), YamlKind::Str(s)) = (self.block, &self.kind) {
            let before: String = s.chars().take(char_offset).collect();
            let line = u32::try_from(before.matches('\n').count()).unwrap_or(u32::MAX);
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
            return Span::new(b.line.saturating_add(line), b.column).shifted(column);
        }
        self.span
    }

    /// Converts to JSON. Non-string keys use their text; non-finite floats become strings
    /// (`inf`, `-inf`, `NaN`) because JSON has no such numbers.
    #[must_use]
    pub fn to_json(&self) -> Value {
        match &self.kind {
            YamlKind::Null => Value::Null,
            YamlKind::Bool(b) => Value::Bool(*b),
            YamlKind::Int(i) => Value::from(*i),
            YamlKind::Float(f) => serde_json::Number::from_f64(*f)
                .map_or_else(|| Value::String(f.to_string()), Value::Number),
            YamlKind::Str(s) => Value::String(s.clone()),
            YamlKind::Seq(items) => Value::Array(items.iter().map(Self::to_json).collect()),
            YamlKind::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.key_text().unwrap_or_default(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// Number of nodes in this subtree, this one included.
    pub(crate) fn size(&self) -> usize {
        1 + match &self.kind {
            YamlKind::Seq(items) => items.iter().map(Self::size).sum(),
            YamlKind::Map(entries) => entries.iter().map(|(k, v)| k.size() + v.size()).sum(),
            _ => 0,
        }
    }
}
