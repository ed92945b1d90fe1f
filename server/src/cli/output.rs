//! How the commands write: [`outln!`] to stdout, [`errln!`] to stderr; how runs are printed
//! (one JSON object or a short summary); and the exit code a run's status maps to.
//!
//! A closed stdout — the reader of a pipe went away, as in `magrathea journal RUN | head -1`
//! — is not an error the user should see: [`outln!`] reports it as [`StdoutClosed`], which
//! `main` turns into a quiet exit with code 0 (what `git` and `ripgrep` do), after the command
//! has returned and closed its store. Commands that drive a run (`run`, `inbox answer`) exit
//! per the run's status even so. Any other write error on stdout (a full disk behind `>`) is
//! reported as an error. Writes to stderr never fail a command: messages to a closed stderr
//! are dropped.

use std::fmt;
use std::io::{self, Write};

use magrathea_core::{InboxItem, InboxStatus, RunStatus};
use magrathea_server::http::runs::RunDto;
use serde_json::Value;

use super::{EXIT_FAILED, EXIT_OK, EXIT_WAITING};

/// Writes a line to stdout: `outln!("…", args)`; evaluates to `anyhow::Result<()>`, an
/// error being [`StdoutClosed`] when the reader went away.
macro_rules! outln {
    () => {
        $crate::cli::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes to stdout without a newline; like [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::write_stdout(format_args!($($arg)*))
    };
}

/// Writes a line to stderr, dropping it when stderr is closed.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::output::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {errln, out, outln};

/// Stdout was closed by its reader (`EPIPE`): the command stops writing and exits quietly.
#[derive(Debug)]
pub(crate) struct StdoutClosed;

impl fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stdout was closed by its reader")
    }
}

impl std::error::Error for StdoutClosed {}

/// Whether this process wrote anything to stdout.
static WROTE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process wrote anything to stdout: a command that did cannot start over.
pub(crate) fn wrote_stdout() -> bool {
    WROTE.load(std::sync::atomic::Ordering::SeqCst)
}

/// Writes `args` to stdout and flushes, so that a closed pipe is noticed at this write.
pub(crate) fn write_stdout(args: fmt::Arguments<'_>) -> anyhow::Result<()> {
    WROTE.store(true, std::sync::atomic::Ordering::SeqCst);
    let text = args.to_string();
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(visible(&text).as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// Writes `args` to stderr; a failed write is dropped (there is nowhere left to report it).
pub(crate) fn write_stderr(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    let _ = io::stderr().lock().write_all(visible(&text).as_bytes());
}

/// `text` with every character that would act on the terminal or hide what it shows written
/// as a `\uXXXX` escape: control characters but a line's end and a tab (an escape sequence
/// in a state's name would recolour or rewrite the screen), the marks that reorder text
/// (U+202E would print a name backwards) and the invisible ones (a zero-width space makes
/// `done` and `done\u{200b}` look alike). Inside a JSON string the escape reads back as the
/// same character, so `--json` output stays the same JSON.
pub(crate) fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    fn hidden(c: char, next: Option<char>) -> bool {
        match c {
            '\n' | '\t' => false,
            '\r' => next != Some('\n'),
            c if c.is_control() => true,
            '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' => true,
            '\u{2060}'..='\u{2069}' | '\u{feff}' => true,
            _ => false,
        }
    }
    let mut chars = text.chars().peekable();
    let mut out: Option<String> = None;
    let mut at = 0;
    while let Some(c) = chars.next() {
        if hidden(c, chars.peek().copied()) {
            let out = out.get_or_insert_with(|| text[..at].to_owned());
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else if let Some(out) = out.as_mut() {
            out.push(c);
        }
        at += c.len_utf8();
    }
    out.map_or(std::borrow::Cow::Borrowed(text), std::borrow::Cow::Owned)
}

/// `error` and its causes in one line, as `{:#}` writes them, leaving out a cause whose text
/// the line holds already: many errors write their source into their own message.
pub(crate) fn chain(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.is_empty() {
            line = text;
        } else if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

/// Whether `error` is (or wraps) [`StdoutClosed`].
pub(crate) fn is_stdout_closed(error: &anyhow::Error) -> bool {
    error.downcast_ref::<StdoutClosed>().is_some()
}

/// The exit code of a command that drove a run to `status`.
pub(crate) fn exit_code(status: RunStatus) -> u8 {
    match status {
        RunStatus::Done => EXIT_OK,
        // A paused run waits on a person too: the operator who resumes it.
        RunStatus::Waiting | RunStatus::Paused => EXIT_WAITING,
        // A run still RUNNING (it sleeps on a timer) counts as not done.
        _ => EXIT_FAILED,
    }
}

/// The run as one line of JSON: the API's run DTO, which serialises every field (`null` or
/// `[]` when absent), so `result`, `reason`, `description` and `tags` are always present.
pub(crate) fn run_json(run: &RunDto) -> String {
    serde_json::to_string(run).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// Prints the run to stdout: JSON, or a summary with what to do next for waiting runs.
pub(crate) fn print_run(run: &RunDto, json: bool, pending: &[InboxItem]) -> anyhow::Result<()> {
    if json {
        return outln!("{}", run_json(run));
    }
    let view = &run.run;
    outln!(
        "run {} ({}) {}",
        view.workflow_run_id,
        view.workflow_name,
        view.status
    )?;
    if let Some(state) = &view.current_state {
        outln!("  state:  {state}")?;
    }
    if let Some(reason) = &view.reason {
        outln!("  reason: {}", one_line(reason))?;
    }
    if let Some(e) = &view.last_error {
        outln!(
            "  error:  {} attempt {}: {} — {}",
            e.name,
            e.attempt,
            e.outcome,
            e.error
        )?;
    }
    if let Some(result) = view.result.as_ref().filter(|r| !r.is_null()) {
        outln!("  result: {}", compact(result))?;
    }
    if let (Some(end), start) = (view.finished_at, view.created_at) {
        outln!("  took:   {}", duration(end.saturating_sub(start)))?;
    }
    for item in pending.iter().filter(|i| {
        i.workflow_run_id == view.workflow_run_id
            || run.sub_runs.iter().any(|s| s.run_id == i.workflow_run_id)
    }) {
        let whose = if item.workflow_run_id == view.workflow_run_id {
            String::new()
        } else {
            format!(" of sub-run {}", item.workflow_run_id)
        };
        outln!(
            "  waits on {} gate{whose}: {}",
            item.kind.as_str(),
            one_line(&item.title)
        )?;
        answer_line(item)?;
    }
    Ok(())
}

/// Now, in ms since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Whether a pending item's timeout is due at `now` with no process to fire it yet: an answer
/// given now is ignored (the timeout is journaled first).
pub(crate) fn overdue(item: &InboxItem, now: u64) -> bool {
    item.status == InboxStatus::Pending && item.expires_at.is_some_and(|at| at <= now)
}

/// How to answer a pending item, or when it timed out.
pub(crate) fn answer_line(item: &InboxItem) -> anyhow::Result<()> {
    let timed_out = match item.status {
        InboxStatus::TimedOut => item.expires_at,
        _ => item.expires_at.filter(|_| overdue(item, now_ms())),
    };
    if let Some(at) = timed_out {
        return outln!(
            "    timed out at {} (an answer is ignored; `magrathea resume` routes the run by \
             its timeout)",
            timestamp(at)
        );
    }
    outln!(
        "    answer: magrathea inbox answer {} {}{}",
        item.id,
        answer_hint(item),
        super::location_args()
    )
}

/// The workflow's version and the document's description and tags, for `runs show`.
pub(crate) fn print_labels(run: &RunDto) -> anyhow::Result<()> {
    if !run.run.workflow_version.is_empty() {
        outln!("  version: {}", run.run.workflow_version)?;
    }
    if let Some(hash) = &run.definition_hash {
        let draft = if run.draft { " (draft)" } else { "" };
        outln!("  definition: sha256 {hash}{draft}")?;
    }
    if let Some(description) = run.description.as_deref().map(str::trim) {
        outln!("  description: {}", description.replace('\n', "\n    "))?;
    }
    if !run.tags.is_empty() {
        outln!("  tags:   {}", run.tags.join(", "))?;
    }
    Ok(())
}

/// The flags that answer an item of this kind.
pub(crate) fn answer_hint(item: &InboxItem) -> String {
    match item.kind {
        magrathea_core::GateKind::Approval => "--approve | --reject".into(),
        magrathea_core::GateKind::Decision => item
            .options
            .iter()
            .map(|o| format!("--choose {o}"))
            .collect::<Vec<_>>()
            .join(" | "),
        magrathea_core::GateKind::Feedback => "--text TEXT".into(),
    }
}

/// `text` on one line: a line break in it is written `\n` (`\r`), so that a value from a
/// caller (a gate's title, a parameter) cannot add a line that looks like another row.
pub(crate) fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains(['\n', '\r']) {
        text.replace('\n', "\\n").replace('\r', "\\r").into()
    } else {
        text.into()
    }
}

/// A JSON value on one line, shortened for summaries.
pub(crate) fn compact(v: &Value) -> String {
    let s = match v {
        Value::String(s) => one_line(s).into_owned(),
        v => v.to_string(),
    };
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

/// `250 ms`, `1.2 s`, `3 min 4 s`.
pub(crate) fn duration(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// A wall-clock time (ms since the epoch) as `YYYY-MM-DD HH:MM:SS` UTC.
pub(crate) fn timestamp(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_would_act_on_the_terminal_is_printed_as_an_escape() {
        assert_eq!(
            visible("state 'a\u{1b}[31mRED' and 'b\u{202e}cba' and 'done\u{200b}'"),
            "state 'a\\u001b[31mRED' and 'b\\u202ecba' and 'done\\u200b'"
        );
        assert_eq!(visible("a\0b\rc\u{7f}"), "a\\u0000b\\u000dc\\u007f");
        // A line's end, a tab and every other character stay as they are, without a copy.
        let plain = "line one\r\n\tdéjà vu — 漢字 🙂\n";
        assert!(matches!(visible(plain), std::borrow::Cow::Borrowed(p) if p == plain));
        // Inside JSON the escape is the same character.
        let json = serde_json::to_string(&serde_json::json!({"name": "b\u{202e}c"})).unwrap();
        let back: serde_json::Value = serde_json::from_str(&visible(&json)).unwrap();
        assert_eq!(back["name"], "b\u{202e}c");
    }

    #[test]
    fn timestamps_and_durations_read_well() {
        assert_eq!(timestamp(0), "1970-01-01 00:00:00");
        assert_eq!(timestamp(1_709_251_199_000), "2024-02-29 23:59:59");
        assert_eq!(duration(250), "250 ms");
        assert_eq!(duration(1_234), "1.2 s");
        assert_eq!(duration(184_000), "3 min 4 s");
    }

    #[test]
    fn an_error_chain_names_each_cause_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot listen on :80: {source}")]
        struct Bind {
            source: std::io::Error,
        }
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "address in use");
        let e = anyhow::Error::new(Bind { source: io }).context("serving");
        assert_eq!(chain(&e), "serving: cannot listen on :80: address in use");
        let plain = anyhow::anyhow!("one").context("two");
        assert_eq!(chain(&plain), "two: one");
    }
}
