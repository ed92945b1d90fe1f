//! `shell_task` through the executors' own API: a workflow of the core calls the executor as a
//! journaled task. Output is read as it comes into bounded buffers; a timeout keeps what the
//! command printed until then.

#![cfg(feature = "shell")]

use std::sync::Arc;
use std::time::Duration;

use magrathea_core::{Engine, RunStatus, StartRequest, WorkflowRegistration};
use magrathea_exec::{
    DocumentSource, Executors, RunData, Scope, ShellInput, ShellOutput, ShellStatus,
};
use serde_json::{Map, Value, json};

/// A project `acme/shop` with `settings`, and an engine whose workflow `sh` runs the
/// [`ShellInput`] it is started with (with `RunData` of `{"who": "ford"}`) and answers
/// `{kind, output}`.
async fn setup(settings: &str) -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("acme/shop");
    std::fs::create_dir_all(project.join("_vance")).unwrap();
    std::fs::write(project.join("_vance/settings.yaml"), settings).unwrap();
    let executors = Executors::new(DocumentSource::new(dir.path()));
    let scope = Scope::new("acme", "shop");
    let wf = WorkflowRegistration::new("sh", "", move |ctx, input: Value| {
        let (executors, scope) = (executors.clone(), scope.clone());
        async move {
            let input: ShellInput = serde_json::from_value(input).unwrap();
            let data = RunData::new(json!({ "who": "ford" }), Map::new());
            let call = executors
                .call(input)
                .scope(&scope)
                .label("step")
                .run_data(Arc::new(data));
            Ok(match ctx.task_with(call.into_task_call()).await {
                Ok(output) => json!({ "kind": "success", "output": output }),
                Err(e) => json!({ "kind": e.kind, "output": e.output }),
            })
        }
    });
    let engine = Engine::builder()
        .in_memory()
        .workflow(wf)
        .build()
        .await
        .unwrap();
    (dir, engine)
}

async fn run(engine: &Engine, input: ShellInput) -> (String, ShellOutput) {
    let run = engine
        .start(StartRequest::code(
            "sh",
            serde_json::to_value(input).unwrap(),
        ))
        .await
        .unwrap();
    let view = tokio::time::timeout(Duration::from_secs(60), engine.wait(run))
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    let result = view.result.unwrap();
    let output = ShellOutput::of_failure(&result["output"]).expect("a shell output");
    (result["kind"].as_str().unwrap().to_string(), output)
}

#[tokio::test]
async fn a_command_killed_at_its_timeout_keeps_what_it_printed() {
    let (_dir, engine) = setup("shell:\n  maxOutputBytes: 100\n").await;
    let input = ShellInput::new(
        "printf start; head -c 5000 /dev/zero | tr '\\0' x; echo >&2 oops; exec sleep 60",
    )
    .timeout(Duration::from_secs(2));
    let (kind, out) = run(&engine, input).await;
    assert_eq!(kind, "timeout");
    assert_eq!(out.status, ShellStatus::Killed);
    assert_eq!(out.exit_code, None);
    assert!(out.stdout_truncated, "{out:?}");
    // The tail and its marker fit the 100 bytes, the marker counting what it left out.
    let (cut, kept) = cut_and_kept(&out.stdout);
    assert_eq!(cut + kept.len() as u64, 5005, "{out:?}");
    assert!(
        kept.chars().all(|c| c == 'x') && !kept.is_empty(),
        "{out:?}"
    );
    assert!(json_len(&out.stdout) <= 100, "{out:?}");
    assert_eq!(out.stderr, "oops\n");
    assert!(!out.stderr_truncated);
}

/// A command that exited before its timeout keeps its status although the deadline passed
/// while its end was being taken in: here a process it left in the background holds its
/// output open, which is read a moment longer than the step's timeout.
#[tokio::test]
async fn a_command_that_exited_before_its_timeout_is_not_timed_out() {
    let (_dir, engine) = setup("").await;
    // The shell exits at once; its output is read for 200 ms more (`PIPE_GRACE`), past the
    // deadline.
    let input = ShellInput::new("echo done; sleep 5 &").timeout(Duration::from_millis(180));
    let (kind, out) = run(&engine, input).await;
    assert_eq!(kind, "success", "{out:?}");
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    assert_eq!(out.stdout, "done\n");
}

#[tokio::test]
async fn output_far_beyond_the_limit_keeps_its_tail() {
    let (_dir, engine) = setup("shell:\n  maxOutputBytes: 1000\n").await;
    // 64 MiB through the pipe; only the last 1000 bytes are ever held.
    let input = ShellInput::new("head -c 67108864 /dev/zero | tr '\\0' y; printf END");
    let (kind, out) = run(&engine, input).await;
    assert_eq!(kind, "success");
    assert_eq!(out.status, ShellStatus::Completed);
    assert_eq!(out.exit_code, Some(0));
    let (cut, kept) = cut_and_kept(&out.stdout);
    assert_eq!(
        cut + kept.len() as u64,
        67_108_864 + 3,
        "{}",
        &out.stdout[..60]
    );
    assert!(out.stdout.ends_with("yyyEND"));
    assert!(json_len(&out.stdout) <= 1000);
}

/// The count of a tail's marker line (`[… N bytes truncated …]`) and the text after it.
fn cut_and_kept(text: &str) -> (u64, &str) {
    let rest = text.strip_prefix("[… ").expect("a marker line");
    let (n, rest) = rest
        .split_once(" bytes truncated …]\n")
        .expect("a marker line");
    (n.parse().unwrap(), rest)
}

/// The bytes of `text` written as a JSON string, without its quotes.
fn json_len(text: &str) -> usize {
    serde_json::to_string(text).unwrap().len() - 2
}

#[tokio::test]
async fn the_environment_has_the_inputs_variables_and_the_runs_data() {
    let (_dir, engine) = setup("").await;
    let input = ShellInput::new(
        r#"printf "%s %s %s" "$GREETING" "$MAGRATHEA_PARAM_WHO" "$MAGRATHEA_STATE"; exit 3"#,
    )
    .env("GREETING", "hello");
    let (kind, out) = run(&engine, input).await;
    assert_eq!(kind, "business_error");
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.stdout, "hello ford step");
}

#[tokio::test]
async fn a_command_reads_an_empty_input_and_keeps_its_own_exit_status() {
    let (_dir, engine) = setup("").await;
    // The lifeline pipe that ties the step to its worker is not the command's input: `cat`
    // meets the end of an empty input at once instead of waiting on it.
    let (kind, output) = run(&engine, ShellInput::new("cat; echo \"read $?\"; exit 3")).await;
    assert_eq!(kind, "business_error");
    assert_eq!(output.exit_code, Some(3));
    assert_eq!(output.stdout, "read 0\n");
}

#[tokio::test]
async fn a_command_killed_by_a_signal_before_its_timeout_failed_with_a_technical_error() {
    // The reference's table: KILLED is the watchdog's kill (`timeout`); a job that failed
    // otherwise is FAILED, a `technical_error`.
    let (_dir, engine) = setup("").await;
    let (kind, output) = run(&engine, ShellInput::new("kill -KILL $$")).await;
    assert_eq!(kind, "technical_error");
    assert_eq!(output.status, ShellStatus::Failed);
    assert_eq!(output.exit_code, None);
}
