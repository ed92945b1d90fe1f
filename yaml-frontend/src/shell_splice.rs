//! `${params.…}` / `${state.…}` in a `shell_task`'s `run:` under `splice: variables`
//! (reference §2.4), spliced so that the shell reads each value as data and never as code.
//!
//! The reference resolves every placeholder of a state's spec as text before the task runs.
//! Spliced into a command as text, a value holding a quote, `;` or `$(…)` would become code,
//! which is why a placeholder in `run:` is an error unless the state opts into a splice.
//! Under `splice: variables` each distinct placeholder of the command gets an environment variable of its own,
//! `MAGRATHEA_SPLICE_<n>` (numbered from 1 in order of first appearance), holding exactly the
//! text the reference would have spliced, and the placeholder is replaced by a reference to
//! that variable written for where it stands:
//!
//! | where the placeholder stands | it becomes |
//! |---|---|
//! | outside quotes | `"${MAGRATHEA_SPLICE_1}"` |
//! | inside double quotes | `${MAGRATHEA_SPLICE_1}` |
//! | inside single quotes | `'"${MAGRATHEA_SPLICE_1}"'` (the quotes closed around it) |
//! | in a here-document whose delimiter is not quoted | `${MAGRATHEA_SPLICE_1}` |
//!
//! A `$` of the command right before a placeholder (`"$${params.amount}"`, a `$` before the
//! amount) is escaped (`\$`), so that it does not join the reference into `$$` (the shell's
//! process id) or, outside quotes, `$"…"` (bash's translated string).
//!
//! A backslash that escapes the first character of a placeholder (`echo \${params.x}`) would
//! escape the first character of its reference instead (a quote, which then opens a string
//! that never closes); a newline is put between them, so the backslash and the newline are a
//! line continuation, which the shell removes (outside quotes, inside double quotes and in a
//! here-document alike), and the value arrives as data as everywhere else. Under `splice:
//! quoted` the same holds for the quoted word.
//!
//! The shell never parses the result of expanding a variable again, so the value arrives as
//! one piece of data wherever the reference ends up, even where this scan misreads the
//! command's quoting (the text then looks odd, it does not run). Two places have no safe
//! splice and are refused when the document is validated: arithmetic `$((…))`, which `bash`
//! evaluates as an expression (an array subscript there runs command substitutions), and a
//! here-document with a quoted delimiter, where nothing expands and a value holding the
//! delimiter's line would end the document early.
//!
//! The scan knows POSIX `sh` quoting: backslash escapes, single and double quotes, comments,
//! `$(…)` and `$((…))`, and here-documents (`<<`, `<<-`, quoted or not).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::template::{Piece, Placeholder, Template};

/// The prefix of the variables that carry spliced values.
pub(crate) const SPLICE_PREFIX: &str = "MAGRATHEA_SPLICE_";

/// Where a placeholder stands in a command, by the shell's quoting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spot {
    /// Outside quotes (or in a comment).
    Bare,
    /// Inside double quotes.
    Double,
    /// Inside single quotes.
    Single,
    /// In the body of a here-document whose delimiter is not quoted.
    HereDoc,
    /// Where no splice is safe; the text says where.
    Unsafe(&'static str),
}

/// How a `shell_task`'s `run:` takes its placeholders (`splice:`), when it has any.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ShellRun {
    /// `splice: variables`: each through an environment variable of its own.
    Variables(ShellCommand),
    /// `splice: quoted`: each value spliced as one POSIX single-quoted word.
    Quoted(Template),
}

impl ShellRun {
    /// The command to run and the variables it needs beside the run's own.
    pub(crate) fn render(
        &self,
        params: &Value,
        state: &Value,
    ) -> (String, BTreeMap<String, String>) {
        match self {
            Self::Variables(command) => command.render(params, state),
            Self::Quoted(template) => (render_quoted(template, params, state), BTreeMap::new()),
        }
    }
}

/// A `run:` whose placeholders are spliced through environment variables.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellCommand {
    template: Template,
    /// For each placeholder, in order: where it stands and its variable's number.
    refs: Vec<Ref>,
}

/// One placeholder of a [`ShellCommand`].
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ref {
    /// Where it stands.
    spot: Spot,
    /// Its variable's number.
    n: usize,
    /// Whether a backslash escaping its first character stands right before it.
    escaped: bool,
}

/// A line continuation for a reference after an escaping backslash: the backslash and this
/// newline are removed together by the shell.
fn continuation(escaped: bool) -> &'static str {
    if escaped { "\n" } else { "" }
}

/// A `$` that the text puts right before a placeholder (`$${params.amount}`: a `$`, then the
/// value) would join the reference spliced in its place: `$$` is the shell's process id, and
/// outside quotes `$"…"` is bash's translated string and `$'…'` its escaped string. Such a `$`
/// is escaped with a backslash, so that it stays the `$` the document wrote; one escaped
/// already, and one inside single quotes (`Spot::Single`), is text as it is.
fn keep_dollar(out: &mut String, spot: Spot) {
    if spot == Spot::Single {
        return;
    }
    let Some(before) = out.strip_suffix('$') else {
        return;
    };
    if before.chars().rev().take_while(|c| *c == '\\').count() % 2 == 0 {
        out.insert(before.len(), '\\');
    }
}

/// `splice: quoted`: each value as one POSIX single-quoted word, so `; rm -rf /` or `$(…)` in
/// a value arrive as data; a missing value gives `''`.
fn render_quoted(template: &Template, params: &Value, state: &Value) -> String {
    let mut out = String::new();
    let mut spots = spots(template).into_iter();
    for piece in template.pieces() {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(p) => {
                let (spot, escaped) = spots.next().unwrap_or((Spot::Bare, false));
                keep_dollar(&mut out, spot);
                out.push_str(continuation(escaped));
                out.push('\'');
                out.push_str(&p.text(params, state).replace('\'', "'\\''"));
                out.push('\'');
            }
        }
    }
    out
}

impl ShellCommand {
    /// Scans `run`. `None` when it holds no placeholder (it runs as written).
    pub(crate) fn parse(run: &str) -> Option<Self> {
        let template = Template::parse(run);
        template.placeholders().next()?;
        let spots = spots(&template);
        let mut distinct: Vec<&Placeholder> = Vec::new();
        let refs = template
            .placeholders()
            .zip(spots)
            .map(|(p, (spot, escaped))| {
                let same = |d: &&Placeholder| d.root == p.root && d.path == p.path;
                let n = match distinct.iter().position(same) {
                    Some(i) => i + 1,
                    None => {
                        distinct.push(p);
                        distinct.len()
                    }
                };
                Ref { spot, n, escaped }
            })
            .collect();
        Some(Self { template, refs })
    }

    /// The placeholders that stand where no splice is safe, with where that is.
    pub(crate) fn unsafe_spots(&self) -> impl Iterator<Item = (&Placeholder, &'static str)> {
        self.template
            .placeholders()
            .zip(&self.refs)
            .filter_map(|(p, r)| match r.spot {
                Spot::Unsafe(place) => Some((p, place)),
                _ => None,
            })
    }

    /// The command with each placeholder replaced by its variable's reference, and the
    /// variables with the values' text.
    pub(crate) fn render(
        &self,
        params: &Value,
        state: &Value,
    ) -> (String, BTreeMap<String, String>) {
        let mut command = String::new();
        let mut env = BTreeMap::new();
        let mut refs = self.refs.iter();
        for piece in self.template.pieces() {
            match piece {
                Piece::Text(t) => command.push_str(t),
                Piece::Var(p) => {
                    let Some(&Ref { spot, n, escaped }) = refs.next() else {
                        break;
                    };
                    let name = format!("{SPLICE_PREFIX}{n}");
                    keep_dollar(&mut command, spot);
                    command.push_str(continuation(escaped));
                    command.push_str(&match spot {
                        Spot::Double | Spot::HereDoc => format!("${{{name}}}"),
                        Spot::Single => format!("'\"${{{name}}}\"'"),
                        // Validation refuses unsafe spots; a quoted reference is the safest.
                        Spot::Bare | Spot::Unsafe(_) => format!("\"${{{name}}}\""),
                    });
                    env.entry(name)
                        .or_insert_with(|| p.text(params, state).into_owned());
                }
            }
        }
        (command, env)
    }
}

/// A character of the command, or a placeholder (a word character that is never a quote).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Ch(char),
    Var,
}

/// A here-document announced on the current line, whose body starts on the next.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HereDoc {
    /// `None` when a placeholder stands in the delimiter: its end cannot be known.
    delimiter: Option<String>,
    quoted: bool,
    strip_tabs: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    Bare,
    Double,
    Single,
    Comment,
    /// `$(…)`: like `Bare`, until its parentheses close.
    Command(u32),
    /// `` `…` ``: like `Bare` (quotes start afresh inside), until the closing backquote.
    Backtick,
    /// A parameter expansion `${…}` (not a placeholder), until its braces close.
    Param(Param),
    /// `$((…))`, until its parentheses close.
    Arithmetic(u32),
    /// `((…))`, bash's arithmetic command, until its parentheses close.
    ArithCommand(u32),
    /// `[[ … ]]`, bash's test, whose `-eq`, `-lt`, … evaluate their operands as arithmetic.
    Test,
    /// `let …`, whose words are arithmetic, until the command ends.
    Let,
    Body(HereDoc),
}

/// Where a parameter expansion `${NAME…}` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Param {
    /// Braces open, its own included.
    depth: u32,
    /// Within double quotes.
    in_double: bool,
    /// Past its operator: `Some(true)` after `#`, `%` or `/` (a pattern follows, whose
    /// unquoted characters match rather than stand for themselves), `Some(false)` after any
    /// other (`:-`, `+`, …: a word follows).
    pattern: Option<bool>,
    /// In an array subscript (`${a[…]}`) or a substring's offset and length (`${x:…}`),
    /// which bash evaluates as arithmetic.
    arithmetic: bool,
}

/// Where each placeholder of `template` stands, in order, and whether a backslash escaping
/// its first character stands right before it.
fn spots(template: &Template) -> Vec<(Spot, bool)> {
    let toks: Vec<Tok> = template
        .pieces()
        .flat_map(|piece| -> Box<dyn Iterator<Item = Tok> + '_> {
            match piece {
                Piece::Text(t) => Box::new(t.chars().map(Tok::Ch)),
                Piece::Var(_) => Box::new(std::iter::once(Tok::Var)),
            }
        })
        .collect();
    Scan::default().run(&toks)
}

#[derive(Default)]
struct Scan {
    stack: Vec<Mode>,
    /// The `case … esac` statements open inside a `$(…)`: the depth of the stack they were
    /// opened at, and their own parentheses open. A `)` that closes none of those ends a
    /// pattern (`a) …;;`), not the `$(…)`.
    cases: Vec<(usize, u32)>,
    pending: Vec<HereDoc>,
    spots: Vec<(Spot, bool)>,
    /// Whether the token just scanned was a backslash escaping the next one.
    escaping: bool,
    /// Whether the last token ended a word (a `#` then starts a comment).
    word_start: bool,
}

impl Scan {
    fn mode(&self) -> &Mode {
        self.stack.last().unwrap_or(&Mode::Bare)
    }

    fn spot(&self) -> Spot {
        // bash evaluates these as arithmetic, where a value's text runs as code (an array
        // subscript inside it runs commands), quoted or not, and so what a command
        // substitution inside them prints.
        for mode in &self.stack {
            match mode {
                Mode::ArithCommand(_) => return Spot::Unsafe("inside `((…))`"),
                Mode::Test => return Spot::Unsafe("inside `[[ … ]]`"),
                Mode::Let => return Spot::Unsafe("in the words of `let`"),
                Mode::Param(p) if p.arithmetic => {
                    return Spot::Unsafe("in an array subscript or a substring offset of `${…}`");
                }
                _ => {}
            }
        }
        match self.mode() {
            Mode::Bare | Mode::Comment | Mode::Command(_) | Mode::Backtick => Spot::Bare,
            // In a pattern a value must be quoted to be itself, within double quotes too.
            Mode::Param(p) if p.pattern == Some(true) || !p.in_double => Spot::Bare,
            Mode::Param(_) => Spot::Double,
            Mode::Double => Spot::Double,
            Mode::Single => Spot::Single,
            Mode::Arithmetic(_) => Spot::Unsafe("inside `$((…))`"),
            // Returned above.
            Mode::ArithCommand(_) | Mode::Test | Mode::Let => Spot::Unsafe("in arithmetic"),
            Mode::Body(doc) if doc.quoted || doc.delimiter.is_none() => {
                Spot::Unsafe("in a here-document with a quoted delimiter")
            }
            Mode::Body(_) => Spot::HereDoc,
        }
    }

    fn run(mut self, toks: &[Tok]) -> Vec<(Spot, bool)> {
        self.word_start = true;
        let ch = |i: usize| match toks.get(i) {
            Some(Tok::Ch(c)) => Some(*c),
            _ => None,
        };
        let mut i = 0;
        let mut line_start = true;
        while i < toks.len() {
            if line_start && let Mode::Body(doc) = self.mode().clone() {
                let end = (i..toks.len())
                    .find(|&j| toks[j] == Tok::Ch('\n'))
                    .unwrap_or(toks.len());
                if is_delimiter(&toks[i..end], &doc) {
                    self.stack.pop();
                    self.word_start = true;
                    self.next_body();
                    i = end + 1;
                    continue;
                }
            }
            line_start = false;
            let escaped = std::mem::take(&mut self.escaping);
            let Tok::Ch(c) = toks[i] else {
                self.spots.push((self.spot(), escaped));
                self.word_start = false;
                i += 1;
                continue;
            };
            let mut step = 1;
            match self.mode().clone() {
                Mode::Bare | Mode::Command(_) => {
                    step = self.bare(c, toks, i, &ch);
                }
                Mode::Backtick if c == '`' => {
                    self.stack.pop();
                    self.word_start = false;
                }
                Mode::Backtick => step = self.bare(c, toks, i, &ch),
                Mode::Param(p) => step = self.param(c, p, i, &ch),
                Mode::Double => match c {
                    '\\' => step = 2,
                    '"' => {
                        self.stack.pop();
                    }
                    '$' => step = self.dollar(i, &ch),
                    '`' => self.stack.push(Mode::Backtick),
                    _ => {}
                },
                Mode::Single => {
                    if c == '\'' {
                        self.stack.pop();
                    }
                }
                Mode::Comment => {
                    if c == '\n' {
                        self.stack.pop();
                        self.word_start = true;
                        self.newline();
                    }
                }
                Mode::Arithmetic(depth) => self.paren(c, depth, Mode::Arithmetic),
                Mode::ArithCommand(depth) => self.paren(c, depth, Mode::ArithCommand),
                Mode::Test if c == ']' && ch(i + 1) == Some(']') => {
                    self.stack.pop();
                    self.word_start = false;
                    step = 2;
                }
                Mode::Test => step = self.bare(c, toks, i, &ch),
                Mode::Let if matches!(c, ';' | '\n' | '&' | '|' | ')') => {
                    // The command ends: the character is read again where `let` began.
                    self.stack.pop();
                    step = 0;
                }
                Mode::Let => step = self.bare(c, toks, i, &ch),
                Mode::Body(doc) => match c {
                    '\\' if !doc.quoted => step = 2,
                    '$' if !doc.quoted => step = self.dollar(i, &ch),
                    '`' if !doc.quoted => self.stack.push(Mode::Backtick),
                    _ => {}
                },
            }
            if c == '\n' && matches!(self.mode(), Mode::Body(_)) {
                line_start = true;
            }
            // An escape does not take a placeholder along: each one gets its spot, and is
            // marked as escaped.
            if step == 2 && toks.get(i + 1) == Some(&Tok::Var) {
                step = 1;
                self.escaping = true;
            }
            i += step;
        }
        self.spots
    }

    /// A character outside quotes (or inside `$(…)`); how many tokens it takes.
    fn bare(
        &mut self,
        c: char,
        toks: &[Tok],
        i: usize,
        ch: &impl Fn(usize) -> Option<char>,
    ) -> usize {
        let word_start = self.word_start;
        self.word_start = c.is_whitespace() || ";&|()<>".contains(c);
        match c {
            '\\' => {
                self.word_start = false;
                return 2;
            }
            '\'' => self.stack.push(Mode::Single),
            '"' => self.stack.push(Mode::Double),
            '`' => self.stack.push(Mode::Backtick),
            '#' if word_start => self.stack.push(Mode::Comment),
            '$' => return self.dollar(i, ch),
            '[' if word_start && ch(i + 1) == Some('[') => {
                self.stack.push(Mode::Test);
                self.word_start = true;
                return 2;
            }
            '(' if word_start && ch(i + 1) == Some('(') => {
                self.stack.push(Mode::ArithCommand(2));
                return 2;
            }
            'l' if word_start && self.keyword(i, ch, "let") => {
                self.stack.push(Mode::Let);
                self.word_start = true;
                return 3;
            }
            '<' if ch(i + 1) == Some('<') && ch(i + 2) != Some('<') => {
                return self.here_doc(toks, i + 2, ch) - i;
            }
            '<' if ch(i + 1) == Some('<') => return 3,
            '\n' => self.newline(),
            _ => {
                if let Mode::Command(depth) = *self.mode() {
                    if word_start && self.keyword(i, ch, "case") {
                        self.cases.push((self.stack.len(), 0));
                    } else if word_start && self.keyword(i, ch, "esac") {
                        self.case_closed();
                    } else if !self.case_pattern(c) {
                        self.paren(c, depth, Mode::Command);
                        // Cases opened inside a `$(…)` that closed are closed with it.
                        let depth = self.stack.len();
                        self.cases.retain(|(at, _)| *at <= depth);
                    }
                }
            }
        }
        1
    }

    /// Whether the word `word` starts at `i` (followed by a blank, `;`, `)` or the end).
    fn keyword(&self, i: usize, ch: &impl Fn(usize) -> Option<char>, word: &str) -> bool {
        word.chars().enumerate().all(|(k, w)| ch(i + k) == Some(w))
            && ch(i + word.len()).is_none_or(|c| c.is_whitespace() || ";)".contains(c))
    }

    /// The `esac` of the innermost `case` open at this depth.
    fn case_closed(&mut self) {
        if self
            .cases
            .last()
            .is_some_and(|(at, _)| *at == self.stack.len())
        {
            self.cases.pop();
        }
    }

    /// Counts a parenthesis inside a `case` open at this depth; true when `c` ends one of its
    /// patterns (a `)` closing none of the case's own parentheses), which no `$(…)` counts.
    fn case_pattern(&mut self, c: char) -> bool {
        let depth = self.stack.len();
        let Some((at, open)) = self.cases.last_mut() else {
            return false;
        };
        if *at != depth {
            return false;
        }
        match c {
            '(' => {
                *open += 1;
                false
            }
            ')' if *open == 0 => true,
            ')' => {
                *open -= 1;
                false
            }
            _ => false,
        }
    }

    /// A `$`: enters `$((…))` or `$(…)`; how many tokens it takes.
    fn dollar(&mut self, i: usize, ch: &impl Fn(usize) -> Option<char>) -> usize {
        match (ch(i + 1), ch(i + 2)) {
            (Some('('), Some('(')) => {
                self.stack.push(Mode::Arithmetic(2));
                3
            }
            (Some('('), _) => {
                self.stack.push(Mode::Command(1));
                // A command starts: its first word may be a keyword (`case`) or a comment.
                self.word_start = true;
                2
            }
            // A placeholder is a token of its own: `${` in the text is a parameter expansion.
            (Some('{'), _) => {
                let in_double = matches!(self.mode(), Mode::Double | Mode::Body(_))
                    || matches!(self.mode(), Mode::Param(p) if p.in_double);
                self.stack.push(Mode::Param(Param {
                    depth: 1,
                    in_double,
                    pattern: None,
                    arithmetic: false,
                }));
                2
            }
            _ => 1,
        }
    }

    /// A character inside a parameter expansion `${…}`; how many tokens it takes. Quotes
    /// start afresh inside (as the shells read `"${X#"$v"}"`), except single quotes in the
    /// word of one within double quotes, which stand for themselves.
    fn param(
        &mut self,
        c: char,
        mut p: Param,
        i: usize,
        ch: &impl Fn(usize) -> Option<char>,
    ) -> usize {
        let at = self.stack.len() - 1;
        let mut step = 1;
        match c {
            '\\' => step = 2,
            '"' => self.stack.push(Mode::Double),
            '\'' if p.pattern == Some(true) || !p.in_double => self.stack.push(Mode::Single),
            '`' => self.stack.push(Mode::Backtick),
            '$' => step = self.dollar(i, ch),
            '{' => p.depth += 1,
            '}' => p.depth -= 1,
            '#' | '%' | '/' if p.pattern.is_none() && i > 0 && ch(i - 1) != Some('{') => {
                p.pattern = Some(true);
            }
            // `${a[…]}`: a subscript, until its bracket closes.
            '[' if p.pattern.is_none() => p.arithmetic = true,
            ']' if p.pattern.is_none() => p.arithmetic = false,
            // `${x:offset:length}`, not `${x:-word}` and its kind.
            ':' if p.pattern.is_none() && !matches!(ch(i + 1), Some('-' | '=' | '?' | '+')) => {
                p.pattern = Some(false);
                p.arithmetic = true;
            }
            ':' | '-' | '=' | '?' | '+' if p.pattern.is_none() => p.pattern = Some(false),
            _ => {}
        }
        // The expansion itself, under whatever was just entered.
        if p.depth == 0 {
            // Nothing was entered on its closing brace.
            self.stack.pop();
        } else {
            self.stack[at] = Mode::Param(p);
        }
        step
    }

    /// Counts a parenthesis of a `$(…)` or `$((…))`; leaves it when they balance.
    fn paren(&mut self, c: char, depth: u32, mode: fn(u32) -> Mode) {
        let depth = match c {
            '(' => depth + 1,
            ')' => depth - 1,
            _ => return,
        };
        self.stack.pop();
        if depth > 0 {
            self.stack.push(mode(depth));
        }
    }

    /// An unquoted newline: a here-document announced on the line starts (also inside a
    /// `$(…)` or backquotes, whose body it is then).
    fn newline(&mut self) {
        if matches!(self.mode(), Mode::Bare | Mode::Command(_) | Mode::Backtick) {
            self.next_body();
        }
    }

    fn next_body(&mut self) {
        if !self.pending.is_empty() {
            let doc = self.pending.remove(0);
            self.stack.push(Mode::Body(doc));
        }
    }

    /// Reads a here-document's operator from just after `<<`: `-`, blanks, the delimiter
    /// word. Returns the index after the word.
    fn here_doc(
        &mut self,
        toks: &[Tok],
        mut i: usize,
        ch: &impl Fn(usize) -> Option<char>,
    ) -> usize {
        let strip_tabs = ch(i) == Some('-');
        if strip_tabs {
            i += 1;
        }
        while matches!(ch(i), Some(' ' | '\t')) {
            i += 1;
        }
        let mut delimiter = Some(String::new());
        let mut quoted = false;
        let mut quote: Option<char> = None;
        while let Some(tok) = toks.get(i) {
            let Tok::Ch(c) = *tok else {
                delimiter = None;
                self.spots
                    .push((Spot::Unsafe("in the delimiter of a here-document"), false));
                i += 1;
                continue;
            };
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), c) => push(&mut delimiter, c),
                (None, '\'' | '"') => {
                    quoted = true;
                    quote = Some(c);
                }
                (None, '\\') => {
                    quoted = true;
                    if let Some(next) = ch(i + 1) {
                        push(&mut delimiter, next);
                    }
                    i += 1;
                }
                (None, c) if c.is_whitespace() || ";&|()<>".contains(c) => break,
                (None, c) => push(&mut delimiter, c),
            }
            i += 1;
        }
        self.pending.push(HereDoc {
            delimiter,
            quoted,
            strip_tabs,
        });
        self.word_start = false;
        i
    }
}

fn push(word: &mut Option<String>, c: char) {
    if let Some(w) = word {
        w.push(c);
    }
}

/// Whether a body line ends its here-document.
fn is_delimiter(line: &[Tok], doc: &HereDoc) -> bool {
    let Some(delimiter) = &doc.delimiter else {
        return false;
    };
    let mut text = String::new();
    for tok in line {
        match tok {
            Tok::Ch(c) => text.push(*c),
            Tok::Var => return false,
        }
    }
    let text = if doc.strip_tabs {
        text.trim_start_matches('\t')
    } else {
        &text
    };
    text == delimiter
}

#[cfg(test)]
mod tests;
