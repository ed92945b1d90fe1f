//! Where a scalar's characters stand in the source: the places the loader records on a
//! [`YamlNode`](crate::node::YamlNode) (`places`, `content`, `block`, `quoted`) so that a diagnostic about part of a
//! value (a condition's token, a placeholder) points at the character written.

use saphyr_parser::ScalarStyle;

use super::Reader;
use crate::diagnostic::Span;

impl Reader<'_> {
    /// [`YamlNode::places`] of the scalar whose source starts at character `start` (at
    /// `span`): its value's characters that are not blanks are found, in order, among the
    /// source's; a blank of the value stands where the next character written does. `None`
    /// when the source holds anything else (an escape, `''`, a comment), so nothing is placed
    /// wrongly.
    pub(super) fn scalar_places(
        &self,
        start: usize,
        span: Span,
        style: ScalarStyle,
        value: &str,
    ) -> Option<Box<[Span]>> {
        let wanted: Vec<char> = value.chars().filter(|c| !c.is_whitespace()).collect();
        let from = *self.char_bytes.get(start)?;
        let mut src = self.text.get(from..)?.chars().peekable();
        let (mut line, mut column) = (span.line, span.column);
        let advance = |c: char, line: &mut u32, column: &mut u32| {
            if c == '\n' {
                *line = line.saturating_add(1);
                *column = 1;
            } else {
                *column = column.saturating_add(1);
            }
        };
        match style {
            // Past the opening quote.
            ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => {
                let c = src.next()?;
                advance(c, &mut line, &mut column);
            }
            // Past the header (`>`, `>-`, `>2`, a comment), when the scalar starts there.
            ScalarStyle::Folded if src.peek() == Some(&'>') => {
                for c in src.by_ref() {
                    advance(c, &mut line, &mut column);
                    if c == '\n' {
                        break;
                    }
                }
            }
            _ => {}
        }
        let mut found: Vec<Span> = Vec::with_capacity(wanted.len());
        for c in src {
            if found.len() == wanted.len() {
                break;
            }
            if !c.is_whitespace() {
                let escape = match style {
                    ScalarStyle::DoubleQuoted => c == '\\' || c == '"',
                    ScalarStyle::SingleQuoted => c == '\'',
                    _ => false,
                };
                if escape || c != wanted[found.len()] {
                    return None;
                }
                found.push(Span::new(line, column));
            }
            advance(c, &mut line, &mut column);
        }
        if found.len() != wanted.len() || found.is_empty() {
            return None;
        }
        let last = *found.last()?;
        let mut next = found.into_iter().peekable();
        let places: Vec<Span> = value
            .chars()
            .map(|c| {
                if c.is_whitespace() {
                    next.peek().copied().unwrap_or(last)
                } else {
                    next.next().unwrap_or(last)
                }
            })
            .collect();
        Some(places.into_boxed_slice())
    }

    /// [`YamlNode::columns`] of the quoted scalar whose opening quote is character `quote` of
    /// the text, when it lies on one line and its escapes account for `value` exactly.
    pub(super) fn quoted_columns(
        &self,
        quote: usize,
        double: bool,
        value: &str,
    ) -> Option<Box<[u32]>> {
        let from = *self.char_bytes.get(quote)?;
        let line = self.text.get(from..)?.split('\n').next()?;
        // Character `i` of the line is column `i` from the quote: counted as it goes, in time
        // linear in the line.
        let mut src = line.chars().enumerate().skip(1);
        let mut cols = Vec::with_capacity(value.len() + 1);
        let col = |i: usize| u32::try_from(i).ok();
        for want in value.chars() {
            let (at, c) = src.next()?;
            cols.push(col(at)?);
            let got = match c {
                '\\' if double => {
                    let (_, e) = src.next()?;
                    let hex = match e {
                        'x' => 2,
                        'u' => 4,
                        'U' => 8,
                        _ => 0,
                    };
                    if hex == 0 {
                        // One-character escapes; which character they stand for need not be
                        // known here, only that it is one.
                        want
                    } else {
                        let digits: String = (0..hex)
                            .filter_map(|_| src.next())
                            .map(|(_, c)| c)
                            .collect();
                        char::from_u32(u32::from_str_radix(&digits, 16).ok()?)?
                    }
                }
                '\'' if !double => {
                    src.next().filter(|(_, c)| *c == '\'')?;
                    '\''
                }
                c => c,
            };
            if got != want {
                return None;
            }
        }
        let (end, close) = src.next()?;
        let quote_char = if double { '"' } else { '\'' };
        (close == quote_char).then_some(())?;
        cols.push(col(end)?);
        Some(cols.into_boxed_slice())
    }

    /// Where the literal block `value`, which the parser places at `at`, starts: its first
    /// line and the column after its indentation, when every line of the value is its source
    /// line without the indentation (see [`YamlNode::block`]).
    pub(super) fn literal_block(&self, value: &str, at: Span) -> Option<Span> {
        // The scalar's position is its first content line or, by the parser, its header's:
        // the first whose lines hold the value verbatim.
        let line = usize::try_from(at.line).ok()?;
        [line - 1, line]
            .into_iter()
            .find_map(|skip| self.literal_lines(value, skip))
    }

    /// [`Reader::literal_block`] with the value's first line on source line `skip + 1`.
    fn literal_lines(&self, value: &str, skip: usize) -> Option<Span> {
        let source: Vec<&str> = self.text.lines().skip(skip).collect();
        let indent = source
            .iter()
            .find(|l| !l.trim().is_empty())?
            .chars()
            .take_while(|c| *c == ' ')
            .count();
        let lines = value.strip_suffix('\n').unwrap_or(value).split('\n');
        for (k, line) in lines.enumerate() {
            let src = source.get(k)?;
            let verbatim = if line.is_empty() {
                src.trim().is_empty()
            } else {
                src.get(..indent)
                    .is_some_and(|i| i.chars().all(|c| c == ' '))
                    && src.get(indent..) == Some(line)
            };
            if !verbatim {
                return None;
            }
        }
        let column = u32::try_from(indent).ok()?.checked_add(1)?;
        Some(Span::new(u32::try_from(skip).ok()?.checked_add(1)?, column))
    }
}
