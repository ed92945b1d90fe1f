//! Diagnostics: positioned, coded messages about a workflow document.
//!
//! Every diagnostic renders as `path:line:column: [MAG-Ynnn] message`. The code is stable
//! across releases so users can search for it; the message says what was found and what was
//! expected.

use std::fmt;

/// A position in the source text: 1-based line and 1-based column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub column: u32,
}

impl Span {
    /// A span at `line`:`column` (both 1-based).
    #[must_use]
    pub const fn new(line: u32, column: u32) -> Self {
        Self { line, column }
    }

    /// The same line, `chars` characters further right.
    #[must_use]
    pub fn shifted(self, chars: usize) -> Self {
        let chars = u32::try_from(chars).unwrap_or(u32::MAX);
        Self {
            line: self.line,
            column: self.column.saturating_add(chars),
        }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// How serious a diagnostic is. Errors reject the document; warnings do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Severity {
    /// The document is rejected.
    Error,
    /// The document loads, but probably does not do what its author meant.
    Warning,
}

/// The stable code of a diagnostic. Rendered as `MAG-Ynnn` (`MAG-YAnnn` for static analysis,
/// `MAG-SCnnn` for scheduler documents).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// `MAG-Y001`: the text is not well-formed YAML.
    Syntax,
    /// `MAG-Y002`: the document exceeds `LoadOptions::max_bytes`.
    TooLarge,
    /// `MAG-Y003`: too many nodes, too deep, or an alias expands too far (alias bomb).
    TooComplex,
    /// `MAG-Y004`: unknown task type.
    UnknownTaskType,
    /// `MAG-Y005`: unknown field.
    UnknownField,
    /// `MAG-Y006`: a required field is missing.
    MissingField,
    /// `MAG-Y007`: a field has the wrong kind of value.
    WrongType,
    /// `MAG-Y008`: `start` does not name a state.
    UnknownStart,
    /// `MAG-Y009`: `states` is empty.
    NoStates,
    /// `MAG-Y010`: a transition target is not a state.
    UnknownTarget,
    /// `MAG-Y011`: `else:` is not the last rule, or appears twice.
    MisplacedElse,
    /// `MAG-Y012`: a condition rule lacks `if` or `to`.
    MalformedRule,
    /// `MAG-Y013`: a terminal state declares transitions.
    TerminalTransitions,
    /// `MAG-Y014`: a non-terminal state has no way out (warning).
    NoWayOut,
    /// `MAG-Y015`: unknown error kind in `catch:` or `retry.on`.
    UnknownErrorKind,
    /// `MAG-Y016`: invalid parameter schema.
    InvalidParameter,
    /// `MAG-Y017`: invalid duration.
    InvalidDuration,
    /// `MAG-Y018`: invalid retry block.
    InvalidRetry,
    /// `MAG-Y019`: invalid bounds block.
    InvalidBounds,
    /// `MAG-Y020`: invalid `timeoutSeconds`.
    InvalidTimeout,
    /// `MAG-Y021`: `storeAs` is not a variable key.
    InvalidStoreAs,
    /// `MAG-Y022`: a condition expression does not parse.
    ConditionSyntax,
    /// `MAG-Y023`: a condition expression leaves the sandbox.
    ConditionSandbox,
    /// `MAG-Y024`: a `${…}` that is left as text looks like a misspelt placeholder (warning).
    Template,
    /// `MAG-Y025`: a mapping key appears twice.
    DuplicateKey,
    /// `MAG-Y026`: a value is not one of the allowed words.
    InvalidValue,
    /// `MAG-Y027`: a state is never reached from `start` (warning).
    Unreachable,
    /// `MAG-Y028`: a `shell_task` splices `${params.…}` or `${state.…}` into its command where
    /// no splice is safe (inside `$((…))`, a here-document with a quoted delimiter), or at all
    /// under `splice: none`: use the `MAGRATHEA_PARAM_<KEY>` / `MAGRATHEA_VAR_<KEY>`
    /// environment variable instead.
    ShellSplice,
    /// `MAG-Y037`: `bounds` sets both `maxWallclockSeconds` and `runTimeoutMs`.
    DeadlineTwice,
    /// `MAG-Y038`: `onFailure:` has a `timeoutSeconds` that is not a positive number of
    /// seconds, or a `timeoutSeconds` or `approvers` without `policy: pause_for_approval`.
    InvalidPauseForApproval,
    /// `MAG-Y039`: a state sets a field that has no effect on its task type (warning), e.g.
    /// `timeoutSeconds` on a `timer_task` or `condition_task`.
    InertField,
    /// `MAG-Y040`: a `script_task`'s literal `path` names no script it can run (missing,
    /// absolute, with `..`, out of its root, or in an unknown workspace); found by
    /// [`crate::load_workflow_checked`] against the caller's documents.
    ScriptPath,
    /// `MAG-Y041`: a `shell_task` has no `dirName:` (warning): it would end `technical_error`.
    ShellWithoutWorkspace,
    /// `MAG-Y042`: a `shell_task`'s literal `dirName:` names no workspace of the project
    /// (warning): it would end `technical_error`; found by [`crate::load_workflow_checked`].
    UnknownWorkspace,
    /// `MAG-Y043`: an `agent_task`'s literal `params.schema` is no schema a structured reply
    /// can be checked against (warning): with a recipe that asks for one, the task would end
    /// `technical_error`.
    AgentSchema,
    /// `MAG-Y029`: a `parallel_task` or `foreach_task` names no sub-run, or both a `workflow:`
    /// and inline `states:`.
    FanOutBody,
    /// `MAG-Y030`: `maxParallelism` is not an integer of at least 1.
    InvalidParallelism,
    /// `MAG-Y031`: `toleratedFailures` is neither a count nor a percentage.
    InvalidTolerance,
    /// `MAG-YA001`: a transition on an outcome the task can never end with (a warning).
    ImpossibleOutcome,
    /// `MAG-YA002`: a transition its state, as configured, never takes (warning).
    InertTransition,
    /// `MAG-YA003`: outcomes the task can end with that no `on:`/`catch:` routes (warning).
    UnroutedOutcome,
    /// `MAG-YA004`: a `condition_task` without `else` whose rules may all be false (warning).
    NoElse,
    /// `MAG-YA005`: a `workflow_task` names a workflow that does not exist (warning).
    UnknownSubWorkflow,
    /// `MAG-YA006`: a loop with no timer, gate or bound on it (warning).
    UnboundedLoop,
    /// `MAG-YA007`: an `agent_task` names a recipe the project and its tenant do not have
    /// (warning): the task would end `technical_error`; found by
    /// [`crate::load_workflow_checked`].
    UnknownRecipe,
    /// `MAG-YA008`: a `workflow_task` leaves out a required parameter of its workflow, or
    /// passes one as a value of another type (warning): the sub-run would be refused; found
    /// by [`crate::load_workflow_checked`].
    SubWorkflowParams,
    /// `MAG-YA009`: a `shell_task` or `script_task` asks for a timeout above the tenant's
    /// `bounds.maxTaskTimeoutSeconds` (warning): the step would end `technical_error` with
    /// `MAG-BD030` before it starts; found by [`crate::load_workflow_checked`].
    TimeoutAboveBound,
    /// `MAG-YA010`: a `tool_task` calls a tool the workflow's own pool (its `allowedTools:`,
    /// or the default pool) leaves out (warning): every run of it ends `permission_error`.
    ToolNotAllowed,
    /// `MAG-YA011`: a `catch:` entry names the outcome an `on:` entry of its state routes
    /// elsewhere (warning): `on:` is tried first, so the catch entry is never taken.
    ShadowedCatch,
    /// `MAG-YA012`: no `terminal` state is reached from `start` (warning): a run can never end
    /// `DONE`, only by an outcome nothing routes, a cancel or its bounds.
    NoTerminal,
    /// `MAG-SC001`: a scheduler document sets both `recipe:` and `workflow:`.
    ScheduleRecipeAndWorkflow,
    /// `MAG-SC002`: a scheduler document names a `recipe:`, which Magrathea does not schedule.
    ScheduleRecipe,
    /// `MAG-SC003`: a scheduler document names no `workflow:`.
    ScheduleNoWorkflow,
    /// `MAG-SC004`: a scheduler document sets both `cron:` and `at:`.
    ScheduleCronAndAt,
    /// `MAG-SC005`: a scheduler document sets neither `cron:` nor `at:`.
    ScheduleNoTime,
    /// `MAG-SC006`: a `cron:` expression does not parse.
    ScheduleCron,
    /// `MAG-SC007`: a `timezone:` is not an IANA time zone.
    ScheduleTimezone,
    /// `MAG-SC008`: an `at:` is not an ISO-8601 instant with an offset.
    ScheduleAt,
    /// `MAG-SC009`: `timezone:` is given with `at:`, which carries its own offset.
    ScheduleTimezoneWithAt,
    /// `MAG-SC010`: a `cron:` expression matches no time at all (e.g. 30 February).
    ScheduleNeverFires,
}

impl Code {
    /// The stable code text, e.g. `MAG-Y004`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Syntax => "MAG-Y001",
            Self::TooLarge => "MAG-Y002",
            Self::TooComplex => "MAG-Y003",
            Self::UnknownTaskType => "MAG-Y004",
            Self::UnknownField => "MAG-Y005",
            Self::MissingField => "MAG-Y006",
            Self::WrongType => "MAG-Y007",
            Self::UnknownStart => "MAG-Y008",
            Self::NoStates => "MAG-Y009",
            Self::UnknownTarget => "MAG-Y010",
            Self::MisplacedElse => "MAG-Y011",
            Self::MalformedRule => "MAG-Y012",
            Self::TerminalTransitions => "MAG-Y013",
            Self::NoWayOut => "MAG-Y014",
            Self::UnknownErrorKind => "MAG-Y015",
            Self::InvalidParameter => "MAG-Y016",
            Self::InvalidDuration => "MAG-Y017",
            Self::InvalidRetry => "MAG-Y018",
            Self::InvalidBounds => "MAG-Y019",
            Self::InvalidTimeout => "MAG-Y020",
            Self::InvalidStoreAs => "MAG-Y021",
            Self::ConditionSyntax => "MAG-Y022",
            Self::ConditionSandbox => "MAG-Y023",
            Self::Template => "MAG-Y024",
            Self::DuplicateKey => "MAG-Y025",
            Self::InvalidValue => "MAG-Y026",
            Self::Unreachable => "MAG-Y027",
            Self::ShellSplice => "MAG-Y028",
            Self::DeadlineTwice => "MAG-Y037",
            Self::InvalidPauseForApproval => "MAG-Y038",
            Self::InertField => "MAG-Y039",
            Self::ScriptPath => "MAG-Y040",
            Self::ShellWithoutWorkspace => "MAG-Y041",
            Self::UnknownWorkspace => "MAG-Y042",
            Self::AgentSchema => "MAG-Y043",
            Self::FanOutBody => "MAG-Y029",
            Self::InvalidParallelism => "MAG-Y030",
            Self::InvalidTolerance => "MAG-Y031",
            Self::ImpossibleOutcome => "MAG-YA001",
            Self::InertTransition => "MAG-YA002",
            Self::UnroutedOutcome => "MAG-YA003",
            Self::NoElse => "MAG-YA004",
            Self::UnknownSubWorkflow => "MAG-YA005",
            Self::UnboundedLoop => "MAG-YA006",
            Self::UnknownRecipe => "MAG-YA007",
            Self::SubWorkflowParams => "MAG-YA008",
            Self::TimeoutAboveBound => "MAG-YA009",
            Self::ToolNotAllowed => "MAG-YA010",
            Self::ShadowedCatch => "MAG-YA011",
            Self::NoTerminal => "MAG-YA012",
            Self::ScheduleRecipeAndWorkflow => "MAG-SC001",
            Self::ScheduleRecipe => "MAG-SC002",
            Self::ScheduleNoWorkflow => "MAG-SC003",
            Self::ScheduleCronAndAt => "MAG-SC004",
            Self::ScheduleNoTime => "MAG-SC005",
            Self::ScheduleCron => "MAG-SC006",
            Self::ScheduleTimezone => "MAG-SC007",
            Self::ScheduleAt => "MAG-SC008",
            Self::ScheduleTimezoneWithAt => "MAG-SC009",
            Self::ScheduleNeverFires => "MAG-SC010",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One positioned finding about a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file path exactly as the caller labelled it.
    pub path: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (characters).
    pub column: u32,
    /// The stable code; also the first token of `message`.
    pub code: Code,
    /// `[MAG-Ynnn] what was found; what was expected`.
    pub message: String,
    /// Error or warning.
    pub severity: Severity,
}

/// Longest value a message quotes whole, in characters.
const MAX_QUOTED: usize = 120;

/// `message` with each value it quotes (`'…'`, no blank inside) that is longer than
/// [`MAX_QUOTED`] characters cut to its start and its length: a 5,000-digit duration makes a
/// diagnostic of one line, not of 5,000 characters.
fn shorten_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(1024));
    let mut rest = message;
    while let Some(open) = rest.find('\'') {
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        let Some(close) = rest.find('\'') else { break };
        let quoted = &rest[..close];
        let chars = quoted.chars().count();
        if chars > MAX_QUOTED && !quoted.contains(char::is_whitespace) {
            out.extend(quoted.chars().take(MAX_QUOTED / 2));
            out.push_str(&format!("… ({chars} characters)"));
        } else {
            out.push_str(quoted);
        }
        out.push('\'');
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

impl Diagnostic {
    /// An error at `span`; `text` is prefixed with `[code] `.
    #[must_use]
    pub fn error(path: &str, span: Span, code: Code, text: impl fmt::Display) -> Self {
        Self::new(path, span, code, text, Severity::Error)
    }

    /// A warning at `span`; `text` is prefixed with `[code] `.
    #[must_use]
    pub fn warning(path: &str, span: Span, code: Code, text: impl fmt::Display) -> Self {
        Self::new(path, span, code, text, Severity::Warning)
    }

    fn new(path: &str, span: Span, code: Code, text: impl fmt::Display, sev: Severity) -> Self {
        Self {
            path: path.to_owned(),
            line: span.line,
            column: span.column,
            code,
            message: shorten_values(&format!("[{code}] {text}")),
            severity: sev,
        }
    }

    /// The position as a [`Span`].
    #[must_use]
    pub fn span(&self) -> Span {
        Span::new(self.line, self.column)
    }

    /// The diagnostic as every command and the HTTP API print it:
    /// `path:line:column: [MAG-…] message`, a warning with `warning:` before its code.
    #[must_use]
    pub fn rendered(&self) -> String {
        self.rendered_at(&self.path)
    }

    /// [`Diagnostic::rendered`] with `path` shown for the document's path (a server shows
    /// paths relative to its tree).
    #[must_use]
    pub fn rendered_at(&self, path: &str) -> String {
        let warning = if self.severity == Severity::Warning {
            "warning: "
        } else {
            ""
        };
        format!(
            "{path}:{}:{}: {warning}{}",
            self.line, self.column, self.message
        )
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path, self.line, self.column, self.message
        )
    }
}

impl std::error::Error for Diagnostic {}

/// An ordered collection of diagnostics, sorted by position when rendered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// An empty collection.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one diagnostic.
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    /// Adds all diagnostics of `other`.
    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    /// True when at least one diagnostic is an error.
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    /// True when the collection is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Number of diagnostics.
    #[must_use]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// All diagnostics, in insertion order.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.items.iter()
    }

    /// Only the errors.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| d.severity == Severity::Error)
    }

    /// Only the warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items
            .iter()
            .filter(|d| d.severity == Severity::Warning)
    }

    /// Sorts by line, then column (stable for equal positions), and drops exact repeats: a
    /// state that takes a mapping by a YAML merge key (`<<: *a`) finds again, at the same place
    /// and in the same words, what is wrong with what it took.
    pub fn sort(&mut self) {
        self.items.sort_by_key(|d| (d.line, d.column));
        let mut seen = std::collections::HashSet::new();
        self.items.retain(|d| {
            seen.insert((
                d.path.clone(),
                d.line,
                d.column,
                d.severity,
                d.message.clone(),
            ))
        });
    }

    /// Splits into (errors, warnings).
    #[must_use]
    pub fn partition(self) -> (Diagnostics, Diagnostics) {
        let (e, w) = self
            .items
            .into_iter()
            .partition(|d| d.severity == Severity::Error);
        (Diagnostics { items: e }, Diagnostics { items: w })
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Self { items: vec![d] }
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a> IntoIterator for &'a Diagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = std::slice::Iter<'a, Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.items {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_path_line_column_code_message() {
        let d = Diagnostic::error("wf.yaml", Span::new(3, 5), Code::UnknownTaskType, "boom");
        assert_eq!(d.to_string(), "wf.yaml:3:5: [MAG-Y004] boom");
        assert_eq!(d.span(), Span::new(3, 5));
    }

    #[test]
    fn partition_and_sort() {
        let mut ds = Diagnostics::new();
        ds.push(Diagnostic::warning(
            "a",
            Span::new(9, 1),
            Code::NoWayOut,
            "w",
        ));
        ds.push(Diagnostic::error("a", Span::new(2, 1), Code::NoStates, "e"));
        ds.sort();
        assert_eq!(ds.iter().next().map(|d| d.line), Some(2));
        assert!(ds.has_errors());
        let (e, w) = ds.partition();
        assert_eq!((e.len(), w.len()), (1, 1));
        assert!(!w.has_errors());
    }
}
