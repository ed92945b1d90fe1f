//! The JavaScript sandbox of `script_task` and of hooks: one QuickJS runtime per execution.
//!
//! A script is the body of an async function whose parameters are what the script sees
//! (`params` and `state` for `script_task`, `event`, `workflows` and `log` for a hook); a
//! [`Setup`] names them and builds their values in the script's context.
//!
//! The sandbox is a bare QuickJS context (the language's intrinsics only): there is no module
//! loader, no `std`/`os` modules, no `require`, no `fetch`, no timers; nothing reaches the file
//! system, the network or processes. The runtime's allocator is capped by a memory limit, and
//! an interrupt handler stops the script at its deadline or when the task is abandoned.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::function::Rest;
use rquickjs::promise::PromiseState;
use rquickjs::{CaughtError, Context, Ctx, Function, Object, Promise, Runtime};
use serde_json::Value;

/// The file name under which the runtime's own helpers are compiled, so that their frames
/// are never mistaken for the user's lines.
pub(crate) const HELPER_FILE: &str = "<magrathea>";

/// At most this many `console` lines of one execution reach the log.
const MAX_CONSOLE_LINES: usize = 1000;

/// At most this many bytes of one `console` line reach the log (the rest is cut, and the cut
/// said), so one execution writes at most about 4 MiB there.
const MAX_CONSOLE_LINE_BYTES: usize = 4096;

/// A `console` line as the log gets it: control characters escaped (a script cannot forge
/// log lines of its own with a newline), at most [`MAX_CONSOLE_LINE_BYTES`] bytes of it.
fn log_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len().min(MAX_CONSOLE_LINE_BYTES) + 32);
    for (i, c) in line.char_indices() {
        if out.len() >= MAX_CONSOLE_LINE_BYTES {
            out.push_str(&format!("… ({} more bytes cut)", line.len() - i));
            return out;
        }
        // Line and paragraph separators end a line for some readers, and bidirectional
        // controls reorder what a reader sees: escaped like control characters.
        let bidi = matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c);
        if c.is_control() || bidi {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// What one execution may use.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// The cap on the runtime's heap, in bytes.
    pub(crate) memory_bytes: usize,
    /// The cap on the JavaScript stack, in bytes.
    pub(crate) stack_bytes: usize,
    /// How long the script may run.
    pub(crate) timeout: Duration,
    /// The most bytes of JSON the returned value may take (a task's output limit), and so one
    /// object or array per 64 of them: checked on the text before it is read, as a value of
    /// many small objects costs far more memory than its text.
    pub(crate) result_bytes: usize,
    /// Whose budget of `console` output in the log the script draws on (its tenant's: see
    /// [`super::console_budget`]).
    pub(crate) log_tenant: String,
}

/// The result limit of a script that is not a task's (a hook's): a task's default.
pub(crate) const DEFAULT_RESULT_BYTES: usize = 4 << 20;

/// Bytes of the result limit per object or array the result may hold (as the engine's own
/// check of a task's output).
const RESULT_BYTES_PER_CONTAINER: usize = 64;

/// Why `text`, a script's result as JSON, is refused before it is read: longer than `max`
/// bytes, or with more objects and arrays than one per [`RESULT_BYTES_PER_CONTAINER`] of it.
fn oversized_result(text: &str, max: usize) -> Option<String> {
    if text.len() > max {
        return Some(format!(
            "[MAG-BD002] the return value is {} bytes of JSON, more than the {max} bytes a task \
             output may hold (EngineBuilder::max_task_output_bytes)",
            text.len()
        ));
    }
    let most = max / RESULT_BYTES_PER_CONTAINER;
    let (mut count, mut in_string, mut escaped) = (0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => count += 1,
                _ => {}
            }
        }
    }
    (count > most).then(|| {
        format!(
            "[MAG-BD002] the return value holds {count} objects and arrays, more than the \
             {most} a task output may hold (one per {RESULT_BYTES_PER_CONTAINER} bytes of its \
             {max}-byte limit); return fewer, larger values, or a reference"
        )
    })
}

/// A script to run and what it sees.
#[derive(Debug)]
pub(crate) struct Job<'a> {
    /// The body of the async function, as written by the user.
    pub(crate) body: &'a str,
    /// The name errors and stack traces report (the script's path).
    pub(crate) file_name: &'a str,
    /// The run's parameters, bound to `params`.
    pub(crate) params: &'a Value,
    /// The run's variables, bound to `state`.
    pub(crate) state: &'a Value,
    /// A label for `console` lines in the log (the run and state).
    pub(crate) log_label: &'a str,
}

/// The script of one execution, whatever it is given to see.
#[derive(Debug)]
pub(crate) struct Program<'a> {
    /// The body of the async function, as written by the user.
    pub(crate) body: &'a str,
    /// The name errors and stack traces report (the script's path).
    pub(crate) file_name: &'a str,
    /// A label for `console` lines in the log.
    pub(crate) log_label: &'a str,
}

/// What a script sees: the parameters of its function, built in its context.
pub(crate) trait Setup {
    /// The parameters' names and values, in order. Host functions made here run on the
    /// script's thread.
    fn arguments<'js>(
        &self,
        ctx: &Ctx<'js>,
    ) -> Result<Vec<(&'static str, rquickjs::Value<'js>)>, Failure>;
}

/// `script_task`'s view: `params` and `state`.
struct TaskArguments<'a> {
    params: &'a Value,
    state: &'a Value,
}

impl Setup for TaskArguments<'_> {
    fn arguments<'js>(
        &self,
        ctx: &Ctx<'js>,
    ) -> Result<Vec<(&'static str, rquickjs::Value<'js>)>, Failure> {
        Ok(vec![
            ("params", json_in(ctx, self.params)?),
            ("state", json_in(ctx, self.state)?),
        ])
    }
}

/// Why a script produced no value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// The script did not compile.
    Compile {
        /// The error's name (usually `SyntaxError`), if it is an `Error`.
        name: Option<String>,
        /// The error's message.
        message: String,
        /// The line of the user's file the error points at, from 1.
        line: Option<u32>,
    },
    /// The script threw (or its promise rejected).
    Thrown {
        /// The error's name (`Error`, `TypeError`, `SyntaxError`, …), if it is an `Error`.
        name: Option<String>,
        /// The error's message, or the thrown value as text.
        message: String,
        /// The line of the user's file the error points at, from 1.
        line: Option<u32>,
    },
    /// The script ran past its timeout and was interrupted.
    Timeout,
    /// The task was abandoned (its run was cancelled) and the script was interrupted.
    Cancelled,
    /// The script exceeded the memory limit.
    OutOfMemory,
    /// The script's promise never settled: nothing left to run could settle it.
    NeverSettled,
    /// The return value is not JSON-compatible.
    BadResult(String),
    /// The sandbox itself failed.
    Engine(String),
}

/// Why the interrupt handler stopped the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    Cancelled,
}

/// Runs `job` to completion on the current thread (call it from a blocking thread). `cancel`
/// stops the script when set.
pub(crate) fn run(
    job: &Job<'_>,
    limits: &Limits,
    cancel: Arc<AtomicBool>,
) -> Result<Value, Failure> {
    let program = Program {
        body: job.body,
        file_name: job.file_name,
        log_label: job.log_label,
    };
    let arguments = TaskArguments {
        params: job.params,
        state: job.state,
    };
    execute(&program, &arguments, limits, cancel)
}

/// Runs `program` with what `setup` gives it, to completion on the current thread (call it
/// from a blocking thread). `cancel` stops the script when set.
pub(crate) fn execute(
    program: &Program<'_>,
    setup: &impl Setup,
    limits: &Limits,
    cancel: Arc<AtomicBool>,
) -> Result<Value, Failure> {
    let rt = Runtime::new().map_err(|e| Failure::Engine(format!("cannot create runtime: {e}")))?;
    rt.set_memory_limit(limits.memory_bytes);
    rt.set_max_stack_size(limits.stack_bytes);
    let deadline = Instant::now() + limits.timeout;
    let stop: Rc<Cell<Option<Stop>>> = Rc::new(Cell::new(None));
    let handler_stop = stop.clone();
    let handler_cancel = cancel.clone();
    rt.set_interrupt_handler(Some(Box::new(move || {
        if handler_stop.get().is_some() {
            return true;
        }
        if handler_cancel.load(Ordering::Relaxed) {
            handler_stop.set(Some(Stop::Cancelled));
        } else if Instant::now() >= deadline {
            handler_stop.set(Some(Stop::Timeout));
        }
        handler_stop.get().is_some()
    })));
    let ctx =
        Context::full(&rt).map_err(|e| Failure::Engine(format!("cannot create context: {e}")))?;
    let result = ctx.with(|ctx| {
        let outcome = drive(
            &ctx,
            program,
            setup,
            (deadline, limits.result_bytes, &limits.log_tenant),
            &cancel,
            &stop,
        );
        // An interrupt wins over whatever error it surfaced as.
        match stop.get() {
            Some(Stop::Timeout) => Err(Failure::Timeout),
            Some(Stop::Cancelled) => Err(Failure::Cancelled),
            None => outcome,
        }
    });
    drop(ctx);
    drop(rt);
    result
}

/// Compiles the body, calls it and runs the job queue until its promise settles.
fn drive<'js>(
    ctx: &Ctx<'js>,
    job: &Program<'_>,
    setup: &impl Setup,
    (deadline, result_bytes, log_tenant): (Instant, usize, &str),
    cancel: &AtomicBool,
    stop: &Cell<Option<Stop>>,
) -> Result<Value, Failure> {
    install_console(ctx, job.log_label, log_tenant).map_err(|e| failure(ctx, job.file_name, e))?;
    let to_json: Function = helper(ctx, TO_JSON).map_err(|e| failure(ctx, job.file_name, e))?;
    let (names, values): (Vec<&str>, Vec<rquickjs::Value<'js>>) =
        setup.arguments(ctx)?.into_iter().unzip();
    // The wrapper opens on the body's first line, so the user's line numbers are the file's.
    let source = format!("(async function ({}) {{{}\n}})", names.join(", "), job.body);
    let mut options = EvalOptions::default();
    options.strict = false;
    options.filename = Some(job.file_name.to_string());
    let func: Function = ctx.eval_with_options(source, options).map_err(|e| {
        match failure(ctx, job.file_name, e) {
            Failure::Thrown {
                name,
                message,
                line,
            } => {
                // An error past the body's last line is the wrapper's closing brace meeting an
                // expression or block the script left open: report it at the script's end.
                let last = u32::try_from(job.body.lines().count().max(1)).unwrap_or(u32::MAX);
                match line {
                    Some(l) if l > last => Failure::Compile {
                        name,
                        message: format!(
                            "the script ends with an expression or block left open ({message})"
                        ),
                        line: Some(last),
                    },
                    _ => Failure::Compile {
                        name,
                        message,
                        line,
                    },
                }
            }
            other => other,
        }
    })?;
    let promise: Promise = func
        .call((Rest(values),))
        .map_err(|e| failure(ctx, job.file_name, e))?;
    while promise.state() == PromiseState::Pending {
        if stop.get().is_some() {
            break;
        }
        if cancel.load(Ordering::Relaxed) {
            stop.set(Some(Stop::Cancelled));
            break;
        }
        if Instant::now() >= deadline {
            stop.set(Some(Stop::Timeout));
            break;
        }
        if !ctx.execute_pending_job() {
            break;
        }
    }
    match promise.state() {
        PromiseState::Pending => Err(Failure::NeverSettled),
        PromiseState::Rejected | PromiseState::Resolved => {
            let value: rquickjs::Value = promise
                .result()
                .unwrap_or(Err(rquickjs::Error::WouldBlock))
                .map_err(|e| failure(ctx, job.file_name, e))?;
            let text: Option<String> =
                to_json
                    .call((value,))
                    .map_err(|e| match failure(ctx, job.file_name, e) {
                        Failure::Thrown { message, .. } => Failure::BadResult(message),
                        other => other,
                    })?;
            match text {
                None => Ok(Value::Null),
                Some(text) if let Some(why) = oversized_result(&text, result_bytes) => {
                    Err(Failure::BadResult(why))
                }
                Some(text) => serde_json::from_str(&well_formed(&text)).map_err(|e| {
                    Failure::BadResult(if e.to_string().starts_with("recursion limit exceeded") {
                        "the return value is nested deeper than 128 levels of objects and \
                         arrays, the most a step's result may be: return a flatter value"
                            .to_string()
                    } else {
                        format!("the return value is not JSON: {e}")
                    })
                }),
            }
        }
    }
}

/// `JSON.stringify`'s text with each lone surrogate escape (`\ud800`: half of a character, as
/// cutting a string through an emoji leaves) written as U+FFFD, the replacement character:
/// JSON text may hold such an escape, but no string of the step's output can.
pub(crate) fn well_formed(text: &str) -> std::borrow::Cow<'_, str> {
    let surrogate = |at: usize| {
        let hex = text.get(at + 2..at + 6)?;
        let unit = u16::from_str_radix(hex, 16).ok()?;
        (text.get(at..at + 2) == Some("\\u") && (0xD800..0xE000).contains(&unit)).then_some(unit)
    };
    if !text.contains("\\ud") && !text.contains("\\uD") {
        return std::borrow::Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut copied) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match surrogate(i) {
            // A high surrogate followed by a low one is a character: kept as written.
            Some(0xD800..0xDC00)
                if surrogate(i + 6).is_some_and(|low| (0xDC00..0xE000).contains(&low)) =>
            {
                i += 12;
            }
            Some(_) => {
                out.push_str(&text[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
            }
            // Any other escape: its next character is not the start of one.
            None => i += 2,
        }
    }
    out.push_str(&text[copied..]);
    std::borrow::Cow::Owned(out)
}

/// Converts the script's value to JSON text with the original `JSON.stringify`, refusing what
/// JSON cannot carry instead of dropping it silently. `undefined` gives `undefined` (→ null),
/// `NaN` and `Infinity` give `null`, `Date`s their ISO text.
const TO_JSON: &str = r#"(function () {
  const stringify = JSON.stringify;
  return function (value) {
    return stringify(value, function (key, v) {
      const t = typeof v;
      if (t === "function" || t === "symbol" || t === "bigint") {
        const at = key === "" ? "" : " at key \"" + key + "\"";
        throw new TypeError("the return value contains a " + t + at +
          "; return JSON-compatible values only (objects, arrays, strings, numbers, booleans, null)");
      }
      return v;
    });
  };
})()"#;

/// A `console` whose lines go to the log (bounded), not to the task's output.
const CONSOLE: &str = r#"(function (sink) {
  const stringify = JSON.stringify;
  // Half of a character (a lone surrogate) cannot leave the engine as text: U+FFFD instead.
  const wellFormed = String.prototype.toWellFormed;
  const fmt = function (v) {
    if (typeof v === "string") return v;
    try { const s = stringify(v); return s === undefined ? String(v) : s; }
    catch (_) { return String(v); }
  };
  const log = function (level) {
    return function (...args) { sink(level, wellFormed.call(args.map(fmt).join(" "))); };
  };
  globalThis.console = {
    log: log("info"), info: log("info"), debug: log("debug"),
    warn: log("warn"), error: log("error"),
  };
})"#;

/// Compiles one of the runtime's own helpers (never reported as the user's lines).
pub(crate) fn helper<'js>(ctx: &Ctx<'js>, source: &str) -> rquickjs::Result<Function<'js>> {
    let mut options = EvalOptions::default();
    options.filename = Some(HELPER_FILE.to_string());
    ctx.eval_with_options(source, options)
}

fn install_console<'js>(ctx: &Ctx<'js>, label: &str, tenant: &str) -> rquickjs::Result<()> {
    let label = label.to_string();
    let tenant = tenant.to_string();
    let count = Cell::new(0usize);
    let sink = Function::new(ctx.clone(), move |args: Rest<String>| {
        let n = count.get();
        count.set(n + 1);
        if n > MAX_CONSOLE_LINES {
            return;
        }
        let (level, line) = match args.0.as_slice() {
            [level, line, ..] => (level.as_str(), line.as_str()),
            _ => return,
        };
        if n == MAX_CONSOLE_LINES {
            tracing::warn!(target: "magrathea_exec::script", script = %label, "console output truncated");
            return;
        }
        let line = log_line(line);
        match super::console_budget::admit(&tenant, line.len()) {
            super::console_budget::Admit::Write => {}
            super::console_budget::Admit::Drop => return,
            super::console_budget::Admit::DropAndSay(n) => {
                tracing::warn!(
                    target: "magrathea_exec::script",
                    script = %label,
                    tenant = %tenant,
                    dropped = n,
                    "console output of the tenant's scripts over its budget of the log: lines dropped"
                );
                return;
            }
        }
        match level {
            "error" => tracing::error!(target: "magrathea_exec::script", script = %label, "{line}"),
            "warn" => tracing::warn!(target: "magrathea_exec::script", script = %label, "{line}"),
            "debug" => tracing::debug!(target: "magrathea_exec::script", script = %label, "{line}"),
            _ => tracing::info!(target: "magrathea_exec::script", script = %label, "{line}"),
        }
    })?;
    let install = helper(ctx, CONSOLE)?;
    install.call::<_, ()>((sink,))
}

/// `value` as a JavaScript value of `ctx`.
pub(crate) fn json_in<'js>(ctx: &Ctx<'js>, value: &Value) -> Result<rquickjs::Value<'js>, Failure> {
    let text = serde_json::to_string(value)
        .map_err(|e| Failure::Engine(format!("cannot pass a value to the script: {e}")))?;
    ctx.json_parse(text)
        .map_err(|e| failure(ctx, HELPER_FILE, e))
}

/// Turns an rquickjs error (usually a pending exception) into a [`Failure`].
pub(crate) fn failure<'js>(ctx: &Ctx<'js>, file: &str, error: rquickjs::Error) -> Failure {
    match CaughtError::from_error(ctx, error) {
        CaughtError::Error(rquickjs::Error::Allocation) => Failure::OutOfMemory,
        CaughtError::Error(e) => Failure::Engine(e.to_string()),
        CaughtError::Exception(ex) => {
            let message = text_property(ctx, ex.as_object(), "message").unwrap_or_default();
            let name = text_property(ctx, ex.as_object(), "name");
            if name.as_deref() == Some("InternalError") && message.starts_with("out of memory") {
                return Failure::OutOfMemory;
            }
            let line = ex.stack().and_then(|s| line_in(&s, file));
            Failure::Thrown {
                name,
                message,
                line,
            }
        }
        // QuickJS throws `null` when it cannot even allocate the error object.
        CaughtError::Value(v) if v.is_null() => Failure::OutOfMemory,
        CaughtError::Value(v) => {
            let message = v
                .get::<rquickjs::Coerced<String>>()
                .map(|c| c.0)
                .ok()
                .or_else(|| well_formed_text(ctx, v.clone()))
                .unwrap_or_else(|| format!("a thrown {}", v.type_name()));
            Failure::Thrown {
                name: None,
                message,
                line: None,
            }
        }
    }
}

/// A string property of a thrown object as text (half characters as U+FFFD); `None` when it is
/// not a string.
fn text_property<'js>(ctx: &Ctx<'js>, object: &Object<'js>, key: &str) -> Option<String> {
    let raw = object.get::<_, rquickjs::Value>(key).ok()?;
    if !raw.is_string() {
        return None;
    }
    raw.get::<String>()
        .ok()
        .or_else(|| well_formed_text(ctx, raw))
}

/// A value's text with each half of a character (a lone surrogate, as cutting a string through
/// an emoji leaves) as U+FFFD: such text cannot leave the engine as it is.
fn well_formed_text<'js>(ctx: &Ctx<'js>, value: rquickjs::Value<'js>) -> Option<String> {
    let convert = helper(
        ctx,
        "(function (v) { return String.prototype.toWellFormed.call(String(v)); })",
    )
    .ok()?;
    convert.call::<_, String>((value,)).ok()
}

/// The line of the innermost frame of `file` in a QuickJS stack trace
/// (`    at f (file:3:11)` or `    at file:3:5`).
fn line_in(stack: &str, file: &str) -> Option<u32> {
    let needle = format!("{file}:");
    stack.lines().find_map(|frame| {
        frame.match_indices(&needle).find_map(|(at, _)| {
            let rest = &frame[at + needle.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_from_the_users_frames() {
        let stack =
            "    at <magrathea>:4:2\n    at f (a/b.js:7:3)\n    at <anonymous> (a/b.js:2:1)\n";
        assert_eq!(line_in(stack, "a/b.js"), Some(7));
        assert_eq!(line_in("    at a/b.js:12:5\n", "a/b.js"), Some(12));
        assert_eq!(line_in("    at x.js:1:1\n", "a/b.js"), None);
    }

    fn job<'a>(body: &'a str, empty: &'a Value) -> Job<'a> {
        Job {
            body,
            file_name: "t.js",
            params: empty,
            state: empty,
            log_label: "test",
        }
    }

    fn limits(timeout: Duration) -> Limits {
        Limits {
            memory_bytes: 16 << 20,
            stack_bytes: 256 << 10,
            timeout,
            result_bytes: DEFAULT_RESULT_BYTES,
            log_tenant: "test".into(),
        }
    }

    #[test]
    fn the_cancel_flag_interrupts_a_running_script() {
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            flag.store(true, Ordering::Relaxed);
        });
        let empty = serde_json::json!({});
        // Only the flag can end this loop with `Cancelled` (its deadline is an hour away).
        let got = run(
            &job("while (true) {}", &empty),
            &limits(Duration::from_secs(3600)),
            cancel,
        );
        assert_eq!(got, Err(Failure::Cancelled));
        setter.join().unwrap();
    }

    /// A value nested deeper than a step's result may be is named as such, not as "not
    /// JSON" (it is JSON).
    #[test]
    fn a_return_value_nested_too_deep_is_said_to_be() {
        let empty = serde_json::json!({});
        let got = run(
            &job(
                "let v = 1; for (let i = 0; i < 200; i++) { v = {v}; } return v;",
                &empty,
            ),
            &limits(Duration::from_secs(30)),
            Arc::new(AtomicBool::new(false)),
        );
        match got {
            Err(Failure::BadResult(why)) => {
                assert!(why.contains("deeper than 128 levels"), "{why}");
                assert!(!why.contains("not JSON"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_console_line_is_escaped_and_cut_before_the_log() {
        assert_eq!(log_line("plain ünïcode"), "plain ünïcode");
        // A newline cannot start a forged log line.
        let forged = "x\n2026-12-04T04:50:00Z  INFO magrathea_server: forged\r\u{1b}[2J";
        let logged = log_line(forged);
        assert!(!logged.contains('\n') && !logged.contains('\r'), "{logged}");
        assert!(!logged.contains('\u{1b}'), "{logged}");
        assert!(logged.starts_with("x\\n2026-12-04"), "{logged}");
        let logged = log_line("a\u{2028}b\u{202e}c");
        assert_eq!(logged, "a\\u{2028}b\\u{202e}c");
        let huge = "é".repeat(10_000);
        let logged = log_line(&huge);
        assert!(
            logged.len() < MAX_CONSOLE_LINE_BYTES + 64,
            "{}",
            logged.len()
        );
        assert!(
            logged.ends_with(&format!(
                "({} more bytes cut)",
                20_000 - MAX_CONSOLE_LINE_BYTES
            )),
            "{}",
            &logged[logged.len() - 40..]
        );
    }

    #[test]
    fn console_goes_to_the_log_and_a_dead_promise_is_reported() {
        let empty = serde_json::json!({});
        let cancel = Arc::new(AtomicBool::new(false));
        let body = "console.log('x', {a: 1}, [2]); console.error(new Error('e')); return 1;";
        let got = run(
            &job(body, &empty),
            &limits(Duration::from_secs(5)),
            cancel.clone(),
        );
        assert_eq!(got, Ok(serde_json::json!(1)));
        let got = run(
            &job("await new Promise(() => {});", &empty),
            &limits(Duration::from_secs(5)),
            cancel,
        );
        assert_eq!(got, Err(Failure::NeverSettled));
    }

    /// Half of a character (a string cut through an emoji) in a log line or a thrown error
    /// is U+FFFD: the line is logged, the error keeps its text.
    #[test]
    fn half_characters_in_logs_and_errors_become_replacement_characters() {
        let empty = serde_json::json!({});
        let limits = limits(Duration::from_secs(5));
        let cancel = Arc::new(AtomicBool::new(false));
        let body = "console.log('log ' + '\u{1F680}'.slice(0, 1)); return 1;";
        let got = run(&job(body, &empty), &limits, cancel.clone());
        assert_eq!(got, Ok(serde_json::json!(1)));
        let named = "const e = new Error('ok'); e.name = 'Bad' + '\u{1F680}'.slice(0, 1); throw e;";
        match run(&job(named, &empty), &limits, cancel.clone()) {
            Err(Failure::Thrown { name, message, .. }) => {
                assert_eq!(
                    (name.as_deref(), message.as_str()),
                    (Some("Bad\u{FFFD}"), "ok")
                );
            }
            other => panic!("{other:?}"),
        }
        for body in [
            "throw new Error('x' + '\u{1F680}'.slice(0, 1));",
            "throw 'x' + '\u{1F680}'.slice(0, 1);",
        ] {
            match run(&job(body, &empty), &limits, cancel.clone()) {
                Err(Failure::Thrown { message, .. }) => assert_eq!(message, "x\u{FFFD}", "{body}"),
                other => panic!("{body}: {other:?}"),
            }
        }
    }
}
