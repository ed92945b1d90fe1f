//! JavaScript hooks: what a hook script sees (`event`, `workflows.start`, `log.*`), how its
//! failures are reported, and the sandbox it runs in. The host is a recording [`HookHost`]:
//! the boundary through which a real server starts runs.

#![cfg(feature = "script")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use magrathea_exec::script::MAX_STARTS;
use magrathea_exec::{HookError, HookHost, HookLogLevel, HookOutcome, HookScript, run_hook};
use serde_json::{Value, json};

/// What the host answers to `workflows.start`.
#[derive(Clone)]
enum Answer {
    /// A new run id per start: `run-1`, `run-2`, ….
    Started,
    /// No engine is active.
    NoEngine,
    /// The host refuses with this message.
    Refused(&'static str),
}

/// A host that records every call and answers starts as told.
struct Recorder {
    answer: Answer,
    starts: Mutex<Vec<(String, Value)>>,
    logs: Mutex<Vec<(HookLogLevel, String, Value)>>,
}

impl Recorder {
    fn new(answer: Answer) -> Arc<Self> {
        Arc::new(Self {
            answer,
            starts: Mutex::new(Vec::new()),
            logs: Mutex::new(Vec::new()),
        })
    }

    fn starts(&self) -> Vec<(String, Value)> {
        self.starts.lock().unwrap().clone()
    }

    fn logs(&self) -> Vec<(HookLogLevel, String, Value)> {
        self.logs.lock().unwrap().clone()
    }
}

impl HookHost for Recorder {
    fn start_workflow(&self, name: &str, params: Value) -> Result<Option<String>, String> {
        let mut starts = self.starts.lock().unwrap();
        starts.push((name.to_owned(), params));
        match &self.answer {
            Answer::Started => Ok(Some(format!("run-{}", starts.len()))),
            Answer::NoEngine => Ok(None),
            Answer::Refused(message) => Err((*message).to_owned()),
        }
    }

    fn log(&self, level: HookLogLevel, message: &str, fields: Value) {
        self.logs
            .lock()
            .unwrap()
            .push((level, message.to_owned(), fields));
    }
}

fn pr_event() -> Value {
    json!({"event": "workflow.run.failed", "workflowName": "deploy", "pr": {"url": "https://x/pr/7"}})
}

async fn run(source: &str, host: &Arc<Recorder>) -> Result<HookOutcome, HookError> {
    run_with(source, host, Duration::from_secs(10)).await
}

async fn run_with(
    source: &str,
    host: &Arc<Recorder>,
    timeout: Duration,
) -> Result<HookOutcome, HookError> {
    let script = HookScript {
        name: "review".into(),
        source: source.into(),
        event: pr_event(),
        timeout,
        tenant: "acme".into(),
    };
    let host: Arc<dyn HookHost> = host.clone();
    run_hook(script, host).await
}

#[tokio::test]
async fn a_hook_starts_a_workflow_from_the_event_and_logs_its_run_id() {
    let host = Recorder::new(Answer::Started);
    let source = r#"
        const runId = workflows.start("pr-review", { pr_url: event.pr.url });
        log.info("started workflow", { runId });
        return runId;
    "#;
    let outcome = run(source, &host).await.unwrap();
    assert_eq!(outcome.started, vec!["run-1".to_owned()]);
    assert_eq!(outcome.result, json!("run-1"));
    assert_eq!(
        host.starts(),
        vec![("pr-review".to_owned(), json!({"pr_url": "https://x/pr/7"}))]
    );
    assert_eq!(
        host.logs(),
        vec![(
            HookLogLevel::Info,
            "started workflow".to_owned(),
            json!({"runId": "run-1"})
        )]
    );
}

#[tokio::test]
async fn top_level_await_and_every_log_level_reach_the_host() {
    let host = Recorder::new(Answer::Started);
    let source = r#"
        const id = await Promise.resolve(workflows.start("a"));
        log.warn("careful");
        log.error({ not: "text" }, 5);
        return { id };
    "#;
    let outcome = run(source, &host).await.unwrap();
    assert_eq!(outcome.result, json!({"id": "run-1"}));
    assert_eq!(host.starts(), vec![("a".to_owned(), json!({}))]);
    assert_eq!(
        host.logs(),
        vec![
            (HookLogLevel::Warn, "careful".to_owned(), json!({})),
            (
                HookLogLevel::Error,
                r#"{"not":"text"}"#.to_owned(),
                json!({"fields": 5})
            ),
        ]
    );
}

/// Half of a character (a string cut through an emoji) in a log line, its fields or a start's
/// parameters reaches the host as U+FFFD rather than failing the hook or emptying the fields.
#[tokio::test]
async fn half_characters_reach_the_host_as_replacement_characters() {
    let host = Recorder::new(Answer::Started);
    let source = r#"
        const half = "\u{1F680}".slice(0, 1);
        log.info("msg " + half, { f: "v" + half });
        return workflows.start("pr-review", { p: "q" + half });
    "#;
    let outcome = run(source, &host).await.unwrap();
    assert_eq!(outcome.result, json!("run-1"));
    assert_eq!(
        host.logs(),
        vec![(
            HookLogLevel::Info,
            "msg \u{FFFD}".to_owned(),
            json!({"f": "v\u{FFFD}"})
        )]
    );
    assert_eq!(
        host.starts(),
        vec![("pr-review".to_owned(), json!({"p": "q\u{FFFD}"}))]
    );
}

#[tokio::test]
async fn without_an_engine_start_returns_null_and_a_warning_is_logged() {
    let host = Recorder::new(Answer::NoEngine);
    let source = r#"
        const runId = workflows.start("pr-review", {});
        return { runId, isNull: runId === null };
    "#;
    let outcome = run(source, &host).await.unwrap();
    assert_eq!(outcome.result, json!({"runId": null, "isNull": true}));
    assert!(outcome.started.is_empty());
    let logs = host.logs();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0].0, HookLogLevel::Warn);
    assert!(logs[0].1.contains("returned null"), "{}", logs[0].1);
    assert_eq!(logs[0].2["workflow"], "pr-review");
}

#[tokio::test]
async fn a_refused_start_throws_an_error_the_script_can_catch() {
    let host = Recorder::new(Answer::Refused("unknown workflow `nope` in this project"));
    let source = r#"
        try {
            workflows.start("nope", {});
            return "not thrown";
        } catch (e) {
            return { isError: e instanceof Error, message: e.message };
        }
    "#;
    let outcome = run(source, &host).await.unwrap();
    assert_eq!(
        outcome.result,
        json!({"isError": true, "message": "unknown workflow `nope` in this project"})
    );
    assert!(outcome.started.is_empty());
}

#[tokio::test]
async fn an_uncaught_refusal_fails_the_hook_at_the_calling_line() {
    let host = Recorder::new(Answer::Refused("workflow `nope` not found"));
    let err = run("\n\nworkflows.start('nope');\n", &host)
        .await
        .unwrap_err();
    match &err {
        HookError::Thrown { message, line, .. } => {
            assert!(message.contains("workflow `nope` not found"), "{message}");
            assert_eq!(*line, Some(3));
        }
        other => panic!("expected Thrown, got {other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("[MAG-HK001] hook `review` failed at line 3")
    );
}

#[tokio::test]
async fn a_throwing_hook_reports_its_error_and_line() {
    let host = Recorder::new(Answer::Started);
    let err = run("const a = 1;\nthrow new TypeError('bad event');\n", &host)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        HookError::Thrown {
            hook: "review".into(),
            message: "TypeError: bad event".into(),
            line: Some(2),
        }
    );
    let err = run("await Promise.reject(new Error('async'));", &host)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, HookError::Thrown { message, .. } if message == "Error: async"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_hook_that_does_not_compile_says_so() {
    let host = Recorder::new(Answer::Started);
    let err = run("const ok = 1;\nconst = ;\n", &host).await.unwrap_err();
    match &err {
        HookError::Compile { message, .. } => {
            assert!(message.starts_with("SyntaxError"), "{message}")
        }
        other => panic!("expected Compile, got {other:?}"),
    }
    assert!(err.to_string().starts_with("[MAG-HK002]"), "{err}");
}

#[tokio::test]
async fn an_endless_hook_is_interrupted_at_its_timeout() {
    let host = Recorder::new(Answer::Started);
    let err = run_with("while (true) {}", &host, Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        HookError::Timeout {
            hook: "review".into(),
            seconds: 0.2
        }
    );
    assert!(err.to_string().starts_with("[MAG-HK003]"), "{err}");
}

#[tokio::test]
async fn a_hook_that_awaits_forever_or_eats_memory_is_stopped() {
    let host = Recorder::new(Answer::Started);
    let err = run("await new Promise(() => {});", &host)
        .await
        .unwrap_err();
    assert!(matches!(err, HookError::NeverSettled { .. }), "{err:?}");
    let source = "const keep = []; while (true) keep.push(new Array(1 << 20).fill(7));";
    let err = run(source, &host).await.unwrap_err();
    assert!(matches!(err, HookError::Memory { .. }), "{err:?}");
    assert!(err.to_string().starts_with("[MAG-HK004]"), "{err}");
}

#[tokio::test]
async fn a_hook_returning_what_json_cannot_carry_is_an_error() {
    let host = Recorder::new(Answer::Started);
    let err = run("return { f: function () {} };", &host)
        .await
        .unwrap_err();
    assert!(matches!(err, HookError::BadResult { .. }), "{err:?}");
    assert!(err.to_string().starts_with("[MAG-HK006]"), "{err}");
}

#[tokio::test]
async fn starts_are_capped_per_execution() {
    let host = Recorder::new(Answer::Started);
    let source = r#"
        let n = 0;
        try {
            for (;;) { workflows.start("fan", { i: n }); n++; }
        } catch (e) {
            return { n, message: e.message };
        }
    "#;
    let outcome = run(source, &host).await.unwrap();
    assert_eq!(outcome.result["n"], json!(MAX_STARTS));
    let message = outcome.result["message"].as_str().unwrap();
    assert!(message.starts_with("[MAG-HK008]"), "{message}");
    assert_eq!(outcome.started.len(), MAX_STARTS);
    assert_eq!(host.starts().len(), MAX_STARTS);
}

#[tokio::test]
async fn bad_start_arguments_throw_before_reaching_the_host() {
    let host = Recorder::new(Answer::Started);
    let source = r#"
        const tries = [() => workflows.start(42, {}), () => workflows.start("", {}),
                       () => workflows.start("x", [1, 2]), () => workflows.start("x", "text")];
        return tries.map((t) => { try { t(); return "no error"; } catch (e) { return e.message; } });
    "#;
    let outcome = run(source, &host).await.unwrap();
    let messages = outcome.result.as_array().unwrap();
    assert_eq!(messages.len(), 4);
    for m in messages {
        assert!(m.as_str().unwrap().starts_with("[MAG-HK009]"), "{m}");
    }
    assert!(host.starts().is_empty());
}

#[tokio::test]
async fn the_sandbox_has_no_require_fetch_std_or_process() {
    let host = Recorder::new(Answer::Started);
    let source = r#"
        let imported;
        try { await import("std"); imported = "loaded"; } catch (e) { imported = "refused"; }
        return {
            require: typeof require, fetch: typeof fetch, std: typeof std, os: typeof os,
            process: typeof process, setTimeout: typeof setTimeout, XMLHttpRequest: typeof XMLHttpRequest,
            imported,
        };
    "#;
    let outcome = run(source, &host).await.unwrap();
    assert_eq!(
        outcome.result,
        json!({
            "require": "undefined", "fetch": "undefined", "std": "undefined", "os": "undefined",
            "process": "undefined", "setTimeout": "undefined", "XMLHttpRequest": "undefined",
            "imported": "refused",
        })
    );
}

/// A host whose start is async: it blocks the script's thread on the runtime, as the trait's
/// documentation allows.
struct AsyncHost;

impl HookHost for AsyncHost {
    fn start_workflow(&self, name: &str, _params: Value) -> Result<Option<String>, String> {
        let name = name.to_owned();
        let handle = tokio::runtime::Handle::current();
        let started = handle.block_on(tokio::spawn(async move {
            tokio::task::yield_now().await;
            format!("async-{name}")
        }));
        started.map(Some).map_err(|e| e.to_string())
    }

    fn log(&self, _: HookLogLevel, _: &str, _: Value) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_may_block_on_an_async_start() {
    let script = HookScript {
        name: "async".into(),
        source: "return workflows.start('deploy');".into(),
        event: json!({}),
        timeout: Duration::from_secs(10),
        tenant: "acme".into(),
    };
    let outcome = run_hook(script, Arc::new(AsyncHost)).await.unwrap();
    assert_eq!(outcome.result, json!("async-deploy"));
    assert_eq!(outcome.started, vec!["async-deploy".to_owned()]);
}

/// A host that panics: a bug of the embedding application, not of the script.
struct PanickingHost;

impl HookHost for PanickingHost {
    fn start_workflow(&self, _: &str, _: Value) -> Result<Option<String>, String> {
        panic!("the host's own bug");
    }

    fn log(&self, _: HookLogLevel, _: &str, _: Value) {}
}

#[tokio::test]
async fn a_panicking_host_fails_the_hook_without_taking_the_caller_down() {
    let script = HookScript {
        name: "boom".into(),
        source: "workflows.start('deploy');".into(),
        event: json!({}),
        timeout: Duration::from_secs(10),
        tenant: "acme".into(),
    };
    let err = run_hook(script, Arc::new(PanickingHost)).await.unwrap_err();
    assert!(matches!(err, HookError::Engine { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with("[MAG-HK007] hook `boom`"),
        "{err}"
    );
    // The runtime still runs hooks afterwards.
    let host = Recorder::new(Answer::Started);
    let outcome = run("return workflows.start('after');", &host)
        .await
        .unwrap();
    assert_eq!(outcome.result, json!("run-1"));
}
