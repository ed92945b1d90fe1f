//! Recursive-descent parser for the condition language, with the sandbox enforced.
//!
//! Precedence, lowest first: `?:`/ternary, `||`, `&&`, comparison/`in`/`matches`
//! (non-associative), `!`, postfix `[i]`/`.name`, primary.

use regex::Regex;
use serde_json::Value;

use super::ast::{CompareOp, Expr, ExprKind, Variable};
use super::error::ConditionError;
use super::lexer::{Tok, Token, lex};

type PResult = Result<Expr, ConditionError>;

/// Which variables an expression may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// A workflow's conditions: `#state`, `#params`, `#tasks`.
    Workflow,
    /// An event filter: `#event` only.
    Filter,
}

/// Parses `src` into an expression of `dialect`.
pub(crate) fn parse(src: &str, dialect: Dialect) -> PResult {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
        dialect,
    };
    let e = p.expr()?;
    let t = p.peek();
    if t.tok != Tok::Eof {
        return Err(ConditionError::syntax(
            t.offset,
            format!(
                "unexpected {} after a complete expression",
                describe(&t.tok)
            ),
        ));
    }
    Ok(e)
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Current nesting of sub-expressions; bounded so that hostile input (`((((…`, `!!!!…`)
    /// is an error, not a stack overflow of the process that loads the document.
    depth: usize,
    /// The variables this expression may read.
    dialect: Dialect,
}

/// Deepest nesting of parentheses, ternaries, indexes and negations a condition may have.
const MAX_DEPTH: usize = 64;

/// `first` alone, or `first` and `rest` as one `kind` node at `offset` (its first operator).
fn chain(first: Expr, rest: Vec<Expr>, offset: usize, kind: fn(Vec<Expr>) -> ExprKind) -> Expr {
    if rest.is_empty() {
        return first;
    }
    let mut terms = Vec::with_capacity(rest.len() + 1);
    terms.push(first);
    terms.extend(rest);
    Expr {
        offset,
        kind: kind(terms),
    }
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Var(v) => format!("'#{v}'"),
        Tok::Ident(w) => format!("'{w}'"),
        Tok::Int(i) => format!("number {i}"),
        Tok::Dec(d) => format!("number {d}"),
        Tok::Str(s) => format!("string '{s}'"),
        Tok::Placeholder(_) => "placeholder".to_owned(),
        Tok::Eof => "end of expression".to_owned(),
        other => format!("'{}'", symbol(other)),
    }
}

fn symbol(t: &Tok) -> &'static str {
    match t {
        Tok::LBrack => "[",
        Tok::RBrack => "]",
        Tok::LParen => "(",
        Tok::RParen => ")",
        Tok::LBrace => "{",
        Tok::RBrace => "}",
        Tok::Dot => ".",
        Tok::Comma => ",",
        Tok::Question => "?",
        Tok::Colon => ":",
        Tok::Elvis => "?:",
        Tok::Not => "!",
        Tok::And => "&&",
        Tok::Or => "||",
        Tok::Eq => "==",
        Tok::Ne => "!=",
        Tok::Lt => "<",
        Tok::Le => "<=",
        Tok::Gt => ">",
        Tok::Ge => ">=",
        Tok::Assign => "=",
        Tok::Bean => "@",
        Tok::Selection(s) | Tok::Op(s) => s,
        _ => "?",
    }
}

fn word_is(t: &Tok, w: &str) -> bool {
    matches!(t, Tok::Ident(x) if x.eq_ignore_ascii_case(w))
}

fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

impl Parser {
    /// The variable `#name` at `offset`, if this dialect has it.
    fn variable(&self, name: &str, offset: usize) -> Result<Variable, ConditionError> {
        let sandbox = |message: String| Err(ConditionError::sandbox(offset, message));
        match (self.dialect, name) {
            (Dialect::Workflow, "state") => Ok(Variable::State),
            (Dialect::Workflow, "params") => Ok(Variable::Params),
            (Dialect::Workflow, "tasks") => Ok(Variable::Tasks),
            (Dialect::Workflow, "event") => sandbox(
                "'#event' exists only in event filters (`subscribe.filter:`, a hook's \
                 `filter:`); a workflow's conditions read #state, #params or #tasks"
                    .to_owned(),
            ),
            (Dialect::Workflow, _) => sandbox(format!(
                "unknown variable '#{name}': expected #state, #params or #tasks"
            )),
            (Dialect::Filter, "event") => Ok(Variable::Event),
            (Dialect::Filter, "state" | "params" | "tasks") => sandbox(format!(
                "'#{name}' is a workflow variable: event filters see only #event (the event's \
                 JSON, e.g. #event['workflowName'])"
            )),
            (Dialect::Filter, _) => sandbox(format!(
                "unknown variable '#{name}': event filters see only #event"
            )),
        }
    }

    fn peek(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn expect(&mut self, want: &Tok, what: &str) -> Result<Token, ConditionError> {
        let t = self.peek();
        if &t.tok == want {
            return Ok(self.bump());
        }
        Err(ConditionError::syntax(
            t.offset,
            format!("expected {what}, found {}", describe(&t.tok)),
        ))
    }

    fn nested(&mut self, f: fn(&mut Self) -> PResult) -> PResult {
        if self.depth >= MAX_DEPTH {
            return Err(ConditionError::syntax(
                self.peek().offset,
                format!("expression nested too deeply: at most {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn expr(&mut self) -> PResult {
        self.nested(Self::expr_inner)
    }

    fn expr_inner(&mut self) -> PResult {
        let cond = self.or()?;
        let t = self.peek().clone();
        match t.tok {
            Tok::Question => {
                self.bump();
                let a = self.expr()?;
                self.expect(&Tok::Colon, "':' of the ternary 'c ? a : b'")?;
                let b = self.expr()?;
                Ok(Expr {
                    offset: t.offset,
                    kind: ExprKind::Ternary(bx(cond), bx(a), bx(b)),
                })
            }
            Tok::Elvis => {
                self.bump();
                let b = self.expr()?;
                Ok(Expr {
                    offset: t.offset,
                    kind: ExprKind::Elvis(bx(cond), bx(b)),
                })
            }
            Tok::Assign => Err(ConditionError::sandbox(
                t.offset,
                "assignment '=' is not allowed in conditions (did you mean '=='?)".to_owned(),
            )),
            _ => Ok(cond),
        }
    }

    /// A chain of terms joined by `||`, as one node (not a tree as deep as the chain is long).
    fn or(&mut self) -> PResult {
        let first = self.and()?;
        let mut terms = Vec::new();
        let mut offset = first.offset;
        while matches!(self.peek().tok, Tok::Or) || word_is(&self.peek().tok, "or") {
            let off = self.bump().offset;
            if terms.is_empty() {
                offset = off;
            }
            terms.push(self.and()?);
        }
        Ok(chain(first, terms, offset, ExprKind::Or))
    }

    /// A chain of terms joined by `&&`, as one node.
    fn and(&mut self) -> PResult {
        let first = self.relation()?;
        let mut terms = Vec::new();
        let mut offset = first.offset;
        while matches!(self.peek().tok, Tok::And) || word_is(&self.peek().tok, "and") {
            let off = self.bump().offset;
            if terms.is_empty() {
                offset = off;
            }
            terms.push(self.relation()?);
        }
        Ok(chain(first, terms, offset, ExprKind::And))
    }

    fn compare_op(t: &Tok) -> Option<CompareOp> {
        Some(match t {
            Tok::Eq => CompareOp::Eq,
            Tok::Ne => CompareOp::Ne,
            Tok::Lt => CompareOp::Lt,
            Tok::Le => CompareOp::Le,
            Tok::Gt => CompareOp::Gt,
            Tok::Ge => CompareOp::Ge,
            Tok::Ident(w) => match w.to_ascii_lowercase().as_str() {
                "eq" => CompareOp::Eq,
                "ne" => CompareOp::Ne,
                "lt" => CompareOp::Lt,
                "le" => CompareOp::Le,
                "gt" => CompareOp::Gt,
                "ge" => CompareOp::Ge,
                _ => return None,
            },
            _ => return None,
        })
    }

    fn relation(&mut self) -> PResult {
        let l = self.unary()?;
        let t = self.peek().clone();
        if let Tok::Op(op) = t.tok {
            return Err(ConditionError::sandbox(
                t.offset,
                format!("operator '{op}' is not supported in conditions"),
            ));
        }
        // SpEL's other relational operators: refused by name, not as a stray word.
        if let Tok::Ident(w) = &t.tok {
            let instead = match w.to_ascii_lowercase().as_str() {
                "between" => Some("write 'x >= a && x <= b'"),
                "instanceof" => Some("types are not named in conditions"),
                _ => None,
            };
            if let Some(instead) = instead {
                return Err(ConditionError::sandbox(
                    t.offset,
                    format!("operator '{w}' is not supported in conditions: {instead}"),
                ));
            }
        }
        if let Some(op) = Self::compare_op(&t.tok) {
            self.bump();
            let r = self.unary()?;
            let next = self.peek();
            if Self::compare_op(&next.tok).is_some() {
                return Err(ConditionError::syntax(
                    next.offset,
                    "comparisons do not chain: expected '&&', '||' or parentheses".to_owned(),
                ));
            }
            return Ok(Expr {
                offset: t.offset,
                kind: ExprKind::Compare(op, bx(l), bx(r)),
            });
        }
        if word_is(&t.tok, "in") {
            self.bump();
            self.expect(&Tok::LBrace, "'{' starting the list of 'in {a, b}'")?;
            let mut items = Vec::new();
            if self.peek().tok != Tok::RBrace {
                loop {
                    items.push(self.unary()?);
                    if self.peek().tok == Tok::Comma {
                        self.bump();
                        continue;
                    }
                    break;
                }
            }
            self.expect(&Tok::RBrace, "',' or '}' in the list of 'in {a, b}'")?;
            return Ok(Expr {
                offset: t.offset,
                kind: ExprKind::In(bx(l), items),
            });
        }
        if word_is(&t.tok, "matches") {
            self.bump();
            let pt = self.bump();
            let Tok::Str(pattern) = pt.tok else {
                return Err(ConditionError::syntax(
                    pt.offset,
                    format!(
                        "expected a quoted regular expression after 'matches', found {}",
                        describe(&pt.tok)
                    ),
                ));
            };
            if self.dialect == Dialect::Workflow
                && crate::template::Template::parse(&pattern)
                    .as_literal()
                    .is_none()
            {
                return Err(ConditionError::syntax(
                    pt.offset,
                    format!(
                        "the regular expression after 'matches' holds a placeholder ('{pattern}'): \
                         expected the expression written out, since it is compiled when the \
                         document loads; compare the value with '==' or 'in {{…}}' instead, or \
                         write '\\$\\{{' to match a literal '${{'"
                    ),
                ));
            }
            let re = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| {
                // The regex crate's message ends with a line `error: <what>`.
                let text = e.to_string();
                let last = text.lines().last().unwrap_or_default();
                let detail = last.strip_prefix("error: ").unwrap_or(last).to_owned();
                ConditionError::syntax(pt.offset, format!("invalid regular expression: {detail}"))
            })?;
            return Ok(Expr {
                offset: t.offset,
                kind: ExprKind::Matches(bx(l), re),
            });
        }
        Ok(l)
    }

    fn unary(&mut self) -> PResult {
        self.nested(Self::unary_inner)
    }

    fn unary_inner(&mut self) -> PResult {
        let t = self.peek().clone();
        if t.tok == Tok::Not || word_is(&t.tok, "not") {
            self.bump();
            let e = self.unary()?;
            return Ok(Expr {
                offset: t.offset,
                kind: ExprKind::Not(bx(e)),
            });
        }
        if t.tok == Tok::Op("-") {
            self.bump();
            let n = self.bump();
            let v = match n.tok {
                Tok::Int(i) => Value::from(-i),
                Tok::Dec(d) => Value::from(-d),
                _ => {
                    return Err(ConditionError::sandbox(
                        t.offset,
                        "arithmetic operator '-' is not supported in conditions: expected a \
                         negative number literal"
                            .to_owned(),
                    ));
                }
            };
            return Ok(Expr {
                offset: t.offset,
                kind: ExprKind::Literal(v),
            });
        }
        self.postfix()
    }

    fn postfix(&mut self) -> PResult {
        let mut e = self.primary()?;
        loop {
            let t = self.peek().clone();
            match &t.tok {
                Tok::LBrack => {
                    self.bump();
                    let i = self.expr()?;
                    self.expect(&Tok::RBrack, "']' closing the index")?;
                    e = Expr {
                        offset: e.offset,
                        kind: ExprKind::Index(bx(e), bx(i)),
                    };
                }
                Tok::Dot => {
                    self.bump();
                    let n = self.bump();
                    let Tok::Ident(name) = n.tok else {
                        return Err(ConditionError::syntax(
                            n.offset,
                            format!(
                                "expected a property name after '.', found {}",
                                describe(&n.tok)
                            ),
                        ));
                    };
                    if self.peek().tok == Tok::LParen {
                        return Err(ConditionError::sandbox(
                            n.offset,
                            format!("method calls are not allowed in conditions: '{name}(...)'"),
                        ));
                    }
                    e = Expr {
                        offset: e.offset,
                        kind: ExprKind::Property(bx(e), name),
                    };
                }
                Tok::Selection(s) => {
                    return Err(ConditionError::sandbox(
                        t.offset,
                        format!(
                            "'{s}' (safe navigation, selection or projection) is not supported in \
                             conditions: expected '[...]' or '.name'"
                        ),
                    ));
                }
                _ => return Ok(e),
            }
        }
    }

    fn primary(&mut self) -> PResult {
        let t = self.bump();
        let lit = |v: Value| {
            Ok(Expr {
                offset: t.offset,
                kind: ExprKind::Literal(v),
            })
        };
        match &t.tok {
            Tok::Int(i) => lit(Value::from(*i)),
            Tok::Dec(d) => lit(Value::from(*d)),
            Tok::Str(s) if self.dialect == Dialect::Workflow && s.contains("${") => {
                let template = crate::template::Template::parse(s);
                Ok(Expr {
                    offset: t.offset,
                    kind: match template.as_literal() {
                        Some(text) => ExprKind::Literal(Value::String(text.to_owned())),
                        None => ExprKind::Template(template),
                    },
                })
            }
            Tok::Str(s) => lit(Value::String(s.clone())),
            Tok::Placeholder(p) => match self.dialect {
                Dialect::Workflow => Ok(Expr {
                    offset: t.offset,
                    kind: ExprKind::Placeholder(p.clone()),
                }),
                Dialect::Filter => Err(ConditionError::sandbox(
                    t.offset,
                    "an event filter reads `#event` only; `${…}` placeholders are for a \
                     workflow's conditions"
                        .to_owned(),
                )),
            },
            Tok::LParen => {
                let e = self.expr()?;
                self.expect(&Tok::RParen, "')'")?;
                Ok(e)
            }
            Tok::Var(name) => {
                if self.peek().tok == Tok::LParen {
                    return Err(ConditionError::sandbox(
                        t.offset,
                        format!("function calls are not allowed in conditions: '#{name}(...)'"),
                    ));
                }
                let v = self.variable(name, t.offset)?;
                Ok(Expr {
                    offset: t.offset,
                    kind: ExprKind::Var(v),
                })
            }
            Tok::Bean => Err(ConditionError::sandbox(
                t.offset,
                "bean references '@name' are not allowed in conditions".to_owned(),
            )),
            Tok::Ident(w) => {
                let lower = w.to_ascii_lowercase();
                match lower.as_str() {
                    "true" => lit(Value::Bool(true)),
                    "false" => lit(Value::Bool(false)),
                    "null" => lit(Value::Null),
                    "t" if self.peek().tok == Tok::LParen => Err(ConditionError::sandbox(
                        t.offset,
                        "type references T(...) are not allowed in conditions".to_owned(),
                    )),
                    "new" => Err(ConditionError::sandbox(
                        t.offset,
                        "constructor calls 'new ...' are not allowed in conditions".to_owned(),
                    )),
                    _ if self.peek().tok == Tok::LParen => Err(ConditionError::sandbox(
                        t.offset,
                        format!("method calls are not allowed in conditions: '{w}(...)'"),
                    )),
                    _ => Err(ConditionError::sandbox(
                        t.offset,
                        match self.dialect {
                            Dialect::Workflow => format!(
                                "bare name '{w}' is not allowed in conditions: read variables \
                                 as #state['key'] or #params['key']"
                            ),
                            Dialect::Filter => format!(
                                "bare name '{w}' is not allowed in event filters: read the \
                                 event as #event['key'] or #event.key"
                            ),
                        },
                    )),
                }
            }
            Tok::LBrace => Err(ConditionError::syntax(
                t.offset,
                "inline lists '{...}' are only allowed after 'in'".to_owned(),
            )),
            Tok::Op(op) => Err(ConditionError::sandbox(
                t.offset,
                format!("operator '{op}' is not supported in conditions"),
            )),
            Tok::Assign => Err(ConditionError::sandbox(
                t.offset,
                "assignment '=' is not allowed in conditions".to_owned(),
            )),
            other => Err(ConditionError::syntax(
                t.offset,
                format!(
                    "expected a value, a variable or '(', found {}",
                    describe(other)
                ),
            )),
        }
    }
}
