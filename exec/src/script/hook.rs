//! JavaScript hooks (reference §8.5): a script run on an event, which may start workflows.
//!
//! ```js
//! // _vance/hooks/review.js
//! if (event.workflowName === "deploy") {
//!   const runId = workflows.start("pr-review", { failedRun: event.runId });
//!   log.info("started a review", { runId });
//! }
//! ```
//!
//! The script is the body of an async function, in the sandbox of `script_task` (the same
//! QuickJS setup, memory and stack limits, no file system, network or processes, no `require`,
//! `fetch` or `std`), interrupted at its timeout. It sees three globals:
//!
//! - `event`: the event's JSON.
//! - `workflows.start(name, params?)`: starts the workflow `name` with `params` (an object,
//!   default `{}`) through the [`HookHost`], and returns the new run's id, or `null` when no
//!   engine is active (a WARN is logged, the script decides what to do). When the host refuses
//!   (an unknown workflow, bad parameters) it throws an `Error` with the host's message, which
//!   the script may catch. One execution may call it at most [`MAX_STARTS`] times.
//! - `log.info|warn|error(message, fields?)`: a line in the host's log, with `fields` as JSON.
//!
//! `await` works at the top level, `return` gives [`HookOutcome::result`]. The host pins what
//! the script can reach: it decides the tenant and project of every start, so a hook cannot
//! start workflows elsewhere.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use rquickjs::{Ctx, Exception, Function, Object};
use serde_json::{Value, json};

use super::engine::{self, Failure, Limits, Program, Setup};
use super::{CancelOnDrop, GRACE, MEMORY_LIMIT_BYTES, STACK_LIMIT_BYTES};

/// How many times one execution of a hook may call `workflows.start`; the next call throws
/// `[MAG-HK008]`.
pub const MAX_STARTS: usize = 100;
/// The longest a hook may run; a longer [`HookScript::timeout`] is cut to this.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// At most this many `log.*` lines of one execution reach the host.
const MAX_LOG_LINES: usize = 1000;

/// The level of a hook's `log.*` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HookLogLevel {
    /// `log.info`.
    Info,
    /// `log.warn`, and the runtime's own warnings (a start that returned `null`, a log cut
    /// short).
    Warn,
    /// `log.error`.
    Error,
}

/// What a hook script may do outside itself; the host pins tenant and project.
///
/// Both methods are called synchronously on the script's thread, a blocking thread of the
/// tokio runtime that [`run_hook`] was awaited on: the host may block there, e.g. on an async
/// start with `tokio::runtime::Handle::current().block_on(…)`. Time spent in the host counts
/// against the hook's timeout but cannot be interrupted; [`run_hook`] gives up waiting a few
/// seconds after the timeout.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a hook host",
    note = "implement `start_workflow` and `log` to let hook scripts start workflows and log"
)]
pub trait HookHost: Send + Sync + 'static {
    /// `workflows.start(name, params)`: `Ok(Some(run id))`, `Ok(None)` when no engine is
    /// active (the script gets `null` and a WARN is logged), `Err(message)` to throw a JS
    /// `Error` with that message.
    fn start_workflow(&self, name: &str, params: Value) -> Result<Option<String>, String>;
    /// `log.info|warn|error(message, fields?)`; `fields` is an object (`{}` without fields).
    fn log(&self, level: HookLogLevel, message: &str, fields: Value);
}

/// A hook script to run and the event it runs on.
#[derive(Debug, Clone)]
pub struct HookScript {
    /// The hook's name: error messages and stack traces report it.
    pub name: String,
    /// The script's text (the body of an async function).
    pub source: String,
    /// The event, bound to `event`.
    pub event: Value,
    /// How long the script may run (at most [`MAX_TIMEOUT`]).
    pub timeout: Duration,
    /// The hook's tenant, whose budget of `console` output in the log its lines draw on.
    pub tenant: String,
}

/// What a hook did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HookOutcome {
    /// The run ids `workflows.start` returned, in order.
    pub started: Vec<String>,
    /// The script's return value (`null` without `return`).
    pub result: Value,
}

/// Why a hook did not finish. Runs it started before it failed keep running: the host saw
/// each start as it happened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// The script threw (or its promise rejected), including an error of `workflows.start`
    /// it did not catch; fix the script at `line`.
    #[error("[MAG-HK001] hook `{hook}` failed{}: {message}", at_line(*.line))]
    Thrown {
        /// The hook.
        hook: String,
        /// The error (`TypeError: …`), or the thrown value as text.
        message: String,
        /// The script's line the error points at, from 1.
        line: Option<u32>,
    },
    /// The script does not compile; fix the syntax at `line`.
    #[error("[MAG-HK002] hook `{hook}` does not compile{}: {message}", at_line(*.line))]
    Compile {
        /// The hook.
        hook: String,
        /// The compiler's message.
        message: String,
        /// The script's line the error points at, from 1.
        line: Option<u32>,
    },
    /// The script ran past its timeout and was interrupted; make it faster or raise
    /// `timeoutSeconds`.
    #[error(
        "[MAG-HK003] hook `{hook}` did not finish within its timeout of {seconds} s and was \
         interrupted"
    )]
    Timeout {
        /// The hook.
        hook: String,
        /// The timeout, in seconds.
        seconds: f64,
    },
    /// The script exceeded the memory limit; keep less data.
    #[error("[MAG-HK004] hook `{hook}` ran out of memory: it exceeded the limit of {mib} MiB")]
    Memory {
        /// The hook.
        hook: String,
        /// The limit, in MiB.
        mib: usize,
    },
    /// The script awaited a promise nothing can settle (the sandbox has no timers or I/O).
    #[error(
        "[MAG-HK005] hook `{hook}` awaited a promise that never settles (the sandbox has no \
         timers or I/O to settle it)"
    )]
    NeverSettled {
        /// The hook.
        hook: String,
    },
    /// The script returned a value JSON cannot carry; return plain data or nothing.
    #[error("[MAG-HK006] hook `{hook}` returned no JSON value: {reason}")]
    BadResult {
        /// The hook.
        hook: String,
        /// What JSON could not carry.
        reason: String,
    },
    /// The script engine failed or crashed; retry, and report it if it persists.
    #[error("[MAG-HK007] hook `{hook}` could not run in the script engine: {reason}")]
    Engine {
        /// The hook.
        hook: String,
        /// What failed.
        reason: String,
    },
}

fn at_line(line: Option<u32>) -> String {
    line.map(|l| format!(" at line {l}")).unwrap_or_default()
}

/// Runs `script` in the sandbox on a blocking thread; `host` carries out its
/// `workflows.start` and `log.*` calls. Dropping the future interrupts the script.
pub async fn run_hook(
    script: HookScript,
    host: Arc<dyn HookHost>,
) -> Result<HookOutcome, HookError> {
    let HookScript {
        name,
        source,
        event,
        timeout,
        tenant,
    } = script;
    let timeout = timeout.min(MAX_TIMEOUT);
    let limits = Limits {
        memory_bytes: MEMORY_LIMIT_BYTES,
        stack_bytes: STACK_LIMIT_BYTES,
        timeout,
        result_bytes: super::engine::DEFAULT_RESULT_BYTES,
        log_tenant: tenant,
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let _cancel_on_drop = CancelOnDrop(cancel.clone());
    let hook = name.clone();
    let handle = tokio::task::spawn_blocking(move || {
        let started = Rc::new(RefCell::new(Vec::new()));
        let setup = HookArguments {
            name: hook.clone(),
            event: &event,
            host,
            started: started.clone(),
        };
        let label = format!("hook {hook}");
        let program = Program {
            body: &source,
            file_name: &hook,
            log_label: &label,
        };
        let result = engine::execute(&program, &setup, &limits, cancel);
        result.map(|value| HookOutcome {
            started: started.take(),
            result: value,
        })
    });
    let seconds = timeout.as_secs_f64();
    match tokio::time::timeout(timeout.saturating_add(GRACE), handle).await {
        Ok(Ok(result)) => result.map_err(|f| hook_error(&name, seconds, f)),
        Ok(Err(join)) => Err(HookError::Engine {
            hook: name,
            reason: format!("the script engine crashed: {join}"),
        }),
        Err(_) => Err(HookError::Timeout {
            hook: name,
            seconds,
        }),
    }
}

fn hook_error(hook: &str, seconds: f64, failure: Failure) -> HookError {
    let hook = hook.to_owned();
    let text = |name: Option<String>, message: String| match name {
        Some(n) => format!("{n}: {message}"),
        None => message,
    };
    match failure {
        Failure::Thrown {
            name,
            message,
            line,
        } => HookError::Thrown {
            hook,
            message: text(name, message),
            line,
        },
        Failure::Compile {
            name,
            message,
            line,
        } => HookError::Compile {
            hook,
            message: text(name, message),
            line,
        },
        Failure::Timeout => HookError::Timeout { hook, seconds },
        Failure::OutOfMemory => HookError::Memory {
            hook,
            mib: MEMORY_LIMIT_BYTES / (1024 * 1024),
        },
        Failure::NeverSettled => HookError::NeverSettled { hook },
        Failure::BadResult(reason) => HookError::BadResult { hook, reason },
        // Only dropping `run_hook`'s future cancels, and then nobody reads the result.
        Failure::Cancelled => HookError::Engine {
            hook,
            reason: "the hook was abandoned".into(),
        },
        Failure::Engine(reason) => HookError::Engine { hook, reason },
    }
}

/// A hook's view: `event`, `workflows` and `log`, backed by the host.
struct HookArguments<'a> {
    name: String,
    event: &'a Value,
    host: Arc<dyn HookHost>,
    started: Rc<RefCell<Vec<String>>>,
}

/// Checks `workflows.start`'s arguments and hands them to the host as (name, params as JSON
/// text); routes `log.*` to the sink. The objects are frozen so a script cannot swap them.
const HOOK_API: &str = r#"(function (start, sink) {
  const stringify = JSON.stringify;
  const isArray = Array.isArray;
  const freeze = Object.freeze;
  const workflows = freeze({
    start: function (name, params) {
      if (typeof name !== "string" || name.length === 0) {
        throw new TypeError("[MAG-HK009] workflows.start(name, params): the name must be a " +
          "non-empty string, e.g. workflows.start(\"pr-review\", { url: event.url })");
      }
      if (params === undefined || params === null) params = {};
      if (typeof params !== "object" || isArray(params)) {
        throw new TypeError("[MAG-HK009] workflows.start(\"" + name + "\", params): params " +
          "must be an object, e.g. { url: event.url }");
      }
      return start(name, stringify(params));
    }
  });
  const text = function (v) {
    if (typeof v === "string") return v;
    try { const s = stringify(v); return s === undefined ? String(v) : s; }
    catch (_) { return String(v); }
  };
  const fields = function (v) {
    if (v === undefined || v === null) return "{}";
    try { const s = stringify(v); return s === undefined ? "{}" : s; }
    catch (_) { return stringify({ fields: String(v) }); }
  };
  // Half of a character (a lone surrogate) cannot leave the engine as text: U+FFFD instead.
  const wellFormed = String.prototype.toWellFormed;
  const level = function (name) {
    return function (message, f) { sink(name, wellFormed.call(text(message)), fields(f)); };
  };
  return {
    workflows: workflows,
    log: freeze({ info: level("info"), warn: level("warn"), error: level("error") }),
  };
})"#;

impl Setup for HookArguments<'_> {
    fn arguments<'js>(
        &self,
        ctx: &Ctx<'js>,
    ) -> Result<Vec<(&'static str, rquickjs::Value<'js>)>, Failure> {
        let err = |e| engine::failure(ctx, engine::HELPER_FILE, e);
        let start = self.start_function(ctx).map_err(err)?;
        let sink = self.log_function(ctx).map_err(err)?;
        let install = engine::helper(ctx, HOOK_API).map_err(err)?;
        let api: Object = install.call((start, sink)).map_err(err)?;
        Ok(vec![
            ("event", engine::json_in(ctx, self.event)?),
            ("workflows", api.get("workflows").map_err(err)?),
            ("log", api.get("log").map_err(err)?),
        ])
    }
}

impl HookArguments<'_> {
    /// The native side of `workflows.start(name, paramsJson)`.
    fn start_function<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
        let host = self.host.clone();
        let started = self.started.clone();
        let hook = self.name.clone();
        let calls = Cell::new(0usize);
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  name: String,
                  params: String|
                  -> rquickjs::Result<rquickjs::Value<'js>> {
                let n = calls.get();
                if n >= MAX_STARTS {
                    return Err(Exception::throw_message(
                        &ctx,
                        &format!(
                            "[MAG-HK008] hook `{hook}` called workflows.start more than \
                             {MAX_STARTS} times in one execution"
                        ),
                    ));
                }
                calls.set(n + 1);
                let params: Value =
                    serde_json::from_str(&engine::well_formed(&params)).map_err(|e| {
                        Exception::throw_type(
                            &ctx,
                            &format!("[MAG-HK009] workflows.start(\"{name}\"): bad params: {e}"),
                        )
                    })?;
                match host.start_workflow(&name, params) {
                    Ok(Some(run_id)) => {
                        let id = rquickjs::String::from_str(ctx.clone(), &run_id)?;
                        started.borrow_mut().push(run_id);
                        Ok(id.into_value())
                    }
                    Ok(None) => {
                        host.log(
                            HookLogLevel::Warn,
                            &format!(
                                "workflows.start(\"{name}\") returned null: no workflow engine \
                                 is active"
                            ),
                            json!({ "hook": hook, "workflow": name }),
                        );
                        // `null`, as the reference says, not `undefined`.
                        Ok(rquickjs::Value::new_null(ctx.clone()))
                    }
                    Err(message) => Err(Exception::throw_message(&ctx, &message)),
                }
            },
        )
    }

    /// The native side of `log.*(message, fieldsJson)`, bounded to [`MAX_LOG_LINES`].
    fn log_function<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
        let host = self.host.clone();
        let hook = self.name.clone();
        let count = Cell::new(0usize);
        Function::new(
            ctx.clone(),
            move |level: String, message: String, fields: String| {
                let n = count.get();
                count.set(n.saturating_add(1));
                if n > MAX_LOG_LINES {
                    return;
                }
                if n == MAX_LOG_LINES {
                    host.log(
                        HookLogLevel::Warn,
                        &format!("hook `{hook}` logged more than {MAX_LOG_LINES} lines; the rest are dropped"),
                        json!({ "hook": hook }),
                    );
                    return;
                }
                let level = match level.as_str() {
                    "error" => HookLogLevel::Error,
                    "warn" => HookLogLevel::Warn,
                    _ => HookLogLevel::Info,
                };
                let fields = match serde_json::from_str(&engine::well_formed(&fields)) {
                    Ok(Value::Object(map)) => Value::Object(map),
                    Ok(other) => json!({ "fields": other }),
                    Err(_) => json!({}),
                };
                host.log(level, &message, fields);
            },
        )
    }
}
