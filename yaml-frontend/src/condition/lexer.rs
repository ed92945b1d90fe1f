//! Tokens of the condition language, each with its byte offset.

use super::error::ConditionError;

/// A token kind.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// `#name`.
    Var(String),
    /// `${params.x}` / `${state.x}`.
    Placeholder(crate::template::Placeholder),
    /// `@name` or `&name` (bean references; always rejected by the parser).
    Bean,
    /// A bare word: keyword, operator word or (rejected) identifier.
    Ident(String),
    Int(i64),
    Dec(f64),
    Str(String),
    LBrack,
    RBrack,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Dot,
    Comma,
    Question,
    Colon,
    /// `?:`.
    Elvis,
    /// `?.`, `.?[`, `.![`, `.^[`, `.$[`: navigation/selection/projection forms.
    Selection(&'static str),
    Not,
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `=`: assignment, always rejected.
    Assign,
    /// An arithmetic or other unsupported operator, rejected by the parser.
    Op(&'static str),
    Eof,
}

/// A token and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) tok: Tok,
    pub(crate) offset: usize,
}

/// Splits `src` into tokens ending with `Eof`.
pub(crate) fn lex(src: &str) -> Result<Vec<Token>, ConditionError> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let two = src.get(i..i + 2).unwrap_or("");
        let three = src.get(i..i + 3).unwrap_or("");
        let (tok, len) = match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            b'#' | b'@' | b'&' if b.get(i + 1).is_some_and(|n| is_ident_start(*n)) => {
                let end = ident_end(b, i + 1);
                let tok = if c == b'#' {
                    Tok::Var(src[i + 1..end].to_owned())
                } else {
                    Tok::Bean
                };
                (tok, end - i)
            }
            b'$' if two == "${" => match crate::template::placeholder_at(src, i) {
                Some(p) => {
                    let len = p.len;
                    (Tok::Placeholder(p), len)
                }
                None => {
                    return Err(ConditionError::syntax(
                        start,
                        "this `${` is not a placeholder: expected `${params.<key>}` or \
                         `${state.<key>}`"
                            .to_owned(),
                    ));
                }
            },
            b'\'' | b'"' => string(src, i)?,
            b'0'..=b'9' => number(src, i)?,
            _ if is_ident_start(c) => {
                let end = ident_end(b, i);
                (Tok::Ident(src[i..end].to_owned()), end - i)
            }
            _ => match (three, two) {
                ("===" | "!==", _) => {
                    return Err(ConditionError::syntax(
                        start,
                        format!(
                            "'{three}' is not an operator of conditions: expected '{}'",
                            &three[..2]
                        ),
                    ));
                }
                (".?[", _) => (Tok::Selection(".?["), 3),
                (".![", _) => (Tok::Selection(".!["), 3),
                (".^[", _) => (Tok::Selection(".^["), 3),
                (".$[", _) => (Tok::Selection(".$["), 3),
                (_, "?:") => (Tok::Elvis, 2),
                (_, "?.") => (Tok::Selection("?."), 2),
                (_, "&&") => (Tok::And, 2),
                (_, "||") => (Tok::Or, 2),
                (_, "==") => (Tok::Eq, 2),
                (_, "!=") => (Tok::Ne, 2),
                (_, "<=") => (Tok::Le, 2),
                (_, ">=") => (Tok::Ge, 2),
                (_, "++") => (Tok::Op("++"), 2),
                (_, "--") => (Tok::Op("--"), 2),
                _ => match c {
                    b'[' => (Tok::LBrack, 1),
                    b']' => (Tok::RBrack, 1),
                    b'(' => (Tok::LParen, 1),
                    b')' => (Tok::RParen, 1),
                    b'{' => (Tok::LBrace, 1),
                    b'}' => (Tok::RBrace, 1),
                    b'.' => (Tok::Dot, 1),
                    b',' => (Tok::Comma, 1),
                    b'?' => (Tok::Question, 1),
                    b':' => (Tok::Colon, 1),
                    b'!' => (Tok::Not, 1),
                    b'<' => (Tok::Lt, 1),
                    b'>' => (Tok::Gt, 1),
                    b'=' => (Tok::Assign, 1),
                    b'+' => (Tok::Op("+"), 1),
                    b'-' => (Tok::Op("-"), 1),
                    b'*' => (Tok::Op("*"), 1),
                    b'/' => (Tok::Op("/"), 1),
                    b'%' => (Tok::Op("%"), 1),
                    b'^' => (Tok::Op("^"), 1),
                    b'&' | b'|' => {
                        let (ch, meant, word) = if c == b'&' {
                            ('&', "&&", "and")
                        } else {
                            ('|', "||", "or")
                        };
                        return Err(ConditionError::syntax(
                            start,
                            format!("unexpected character '{ch}': expected '{meant}' ({word})"),
                        ));
                    }
                    _ => {
                        let ch = src[i..].chars().next().unwrap_or('?');
                        return Err(ConditionError::syntax(
                            start,
                            format!("unexpected character '{ch}'"),
                        ));
                    }
                },
            },
        };
        out.push(Token { tok, offset: start });
        i += len;
    }
    out.push(Token {
        tok: Tok::Eof,
        offset: src.len(),
    });
    Ok(out)
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$'
}

fn ident_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
        i += 1;
    }
    i
}

/// Lexes a quoted string; SpEL doubles the quote to escape it: `'it''s'`.
fn string(src: &str, start: usize) -> Result<(Tok, usize), ConditionError> {
    let b = src.as_bytes();
    let q = b[start];
    let mut i = start + 1;
    let mut seg = i;
    let mut s = String::new();
    loop {
        if i >= b.len() {
            return Err(ConditionError::syntax(
                start,
                format!(
                    "unterminated string literal: expected a closing {}",
                    q as char
                ),
            ));
        }
        if b[i] == q {
            s.push_str(&src[seg..i]);
            if b.get(i + 1) == Some(&q) {
                s.push(q as char);
                i += 2;
                seg = i;
                continue;
            }
            break;
        }
        i += 1;
    }
    Ok((Tok::Str(s), i + 1 - start))
}

fn number(src: &str, start: usize) -> Result<(Tok, usize), ConditionError> {
    let b = src.as_bytes();
    let digits = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let too_large = || ConditionError::syntax(start, "integer literal is too large".to_owned());
    // SpEL's hexadecimal integers: `0x1F`, `0X1fL`.
    if b[start] == b'0'
        && matches!(b.get(start + 1), Some(b'x' | b'X'))
        && b.get(start + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        let mut i = start + 2;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
        let v = i64::from_str_radix(&src[start + 2..i], 16).map_err(|_| too_large())?;
        if matches!(b.get(i), Some(b'L' | b'l')) {
            i += 1;
        }
        return Ok((Tok::Int(v), i - start));
    }
    let mut i = digits(start);
    let mut real = false;
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i = digits(i + 1);
        real = true;
    }
    // An exponent: `1.5e3`, `1E-3`, `2e+6`.
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        if b.get(i + 1 + sign).is_some_and(u8::is_ascii_digit) {
            i = digits(i + 1 + sign);
            real = true;
        }
    }
    let text = &src[start..i];
    // A type suffix, as SpEL writes them: `10L` (long), `1.5d`, `2f` (real).
    let suffix = match b.get(i) {
        Some(b'd' | b'D' | b'f' | b'F') => {
            real = true;
            1
        }
        Some(b'L' | b'l') if !real => 1,
        _ => 0,
    };
    let len = i + suffix - start;
    if real {
        let v: f64 = text
            .parse()
            .map_err(|_| ConditionError::syntax(start, "invalid decimal literal".to_owned()))?;
        return Ok((Tok::Dec(v), len));
    }
    let v = text.parse::<i64>().map_err(|_| too_large())?;
    Ok((Tok::Int(v), len))
}
