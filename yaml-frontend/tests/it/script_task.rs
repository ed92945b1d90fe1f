//! `script_task` (reference §3.2): JavaScript in the embedded QuickJS sandbox, run through the
//! YAML runtime end to end.

use std::path::Path;
use std::time::{Duration, Instant};

use magrathea_core::{Record, RunStatus, RunView};
use serde_json::{Value, json};

use crate::common;
use common::Project;

async fn project() -> Project {
    let p = Project::new(|r| r).await;
    std::fs::create_dir_all(p.project.join("_vance/scripts")).unwrap();
    p
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workflow of one `script_task` state `s` (with `extra` spec lines), storing its output as
/// `out` and ending in a terminal whose result names the outcome.
fn one_script(extra: &str) -> String {
    format!(
        r#"
start: s
states:
  s:
    type: script_task
{extra}
    storeAs: out
    on:
      success: done
    catch:
      technical_error: failed
      timeout: timed_out
  done:
    type: terminal
    result: success
  failed:
    type: terminal
    result: technical_error
  timed_out:
    type: terminal
    result: timeout
"#
    )
}

/// What the state's attempt journaled.
struct Attempt {
    outcome: String,
    output: Value,
    error: Option<String>,
}

impl Project {
    /// Writes `_vance/scripts/<name>.js` and a workflow `<name>` running it.
    fn script(&self, name: &str, js: &str, extra: &str) {
        write(&self.project.join(format!("_vance/scripts/{name}.js")), js);
        let spec = format!("    path: _vance/scripts/{name}.js\n{extra}");
        self.workflow(name, &one_script(&spec));
    }

    fn attempts(&self, view: &RunView) -> Vec<Attempt> {
        self.engine
            .journal(view.workflow_run_id)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.record {
                Record::TaskResult {
                    outcome,
                    output,
                    error,
                    ..
                } => Some(Attempt {
                    outcome: outcome.into_string(),
                    output,
                    error,
                }),
                _ => None,
            })
            .collect()
    }

    /// Runs a one-script workflow and returns the run and its single attempt.
    async fn run_script(&self, name: &str, js: &str, extra: &str) -> (RunView, Attempt) {
        self.script(name, js, extra);
        let view = self.run(name, json!({})).await;
        let mut attempts = self.attempts(&view);
        assert_eq!(attempts.len(), 1, "{name}: {view:?}");
        (view, attempts.remove(0))
    }
}

#[tokio::test]
async fn return_values_of_every_json_type_become_the_output() {
    let p = project().await;
    let cases = [
        (
            "object",
            "return {a: 1, b: {c: [true, null]}, s: 'x'};",
            json!({"a": 1, "b": {"c": [true, null]}, "s": "x"}),
        ),
        (
            "array",
            "return [1, 'two', {three: 3}, [4]];",
            json!([1, "two", {"three": 3}, [4]]),
        ),
        ("string", "return 'hello ' + 'world';", json!("hello world")),
        ("integer", "return 6 * 7;", json!(42)),
        ("float", "return 1.5;", json!(1.5)),
        ("boolean_true", "return true;", json!(true)),
        ("boolean_false", "return 1 > 2;", json!(false)),
        (
            "unicode",
            "return '\\u00e9t\\u00e9 \\u{1F680}';",
            json!("été 🚀"),
        ),
        // Half of a character (a string cut through an emoji) is the replacement character,
        // in keys and values; whole pairs and an escape written as text stay as they are.
        (
            "halves",
            "return {['k\\uDC00']: 'a\\uD800', s: '\\u{1F680}'.slice(0, 1), \
             pair: '\\uD83D\\uDE80', text: '\\\\uD800'};",
            json!({"k\u{FFFD}": "a\u{FFFD}", "s": "\u{FFFD}", "pair": "🚀", "text": "\\uD800"}),
        ),
    ];
    for (name, js, expected) in cases {
        let (view, attempt) = p.run_script(name, js, "").await;
        assert_eq!(view.status, RunStatus::Done, "{name}: {view:?}");
        assert_eq!(view.result, Some(json!("success")), "{name}");
        assert_eq!(attempt.outcome, "success", "{name}");
        assert_eq!(view.vars["out"], expected, "{name}");
        assert_eq!(attempt.output, expected, "{name}");
    }
    // null (and undefined, and no return at all) give a null output; storeAs stores nothing.
    for (name, js) in [
        ("null", "return null;"),
        ("undefined", "return undefined;"),
        ("nothing", "let x = 1;"),
    ] {
        let (view, attempt) = p.run_script(name, js, "").await;
        assert_eq!(view.result, Some(json!("success")), "{name}: {view:?}");
        assert_eq!(attempt.output, Value::Null, "{name}");
        assert!(!view.vars.contains_key("out"), "{name}");
    }
    // What JSON cannot hold the way JavaScript does: NaN/Infinity are null, dates are text.
    let (view, _) = p
        .run_script(
            "edge",
            "return {nan: NaN, inf: -Infinity, d: new Date(0), u: undefined, l: [undefined]};",
            "",
        )
        .await;
    assert_eq!(
        view.vars["out"],
        json!({"nan": null, "inf": null, "d": "1970-01-01T00:00:00.000Z", "l": [null]})
    );
}

#[tokio::test]
async fn values_json_cannot_carry_are_a_technical_error() {
    let p = project().await;
    for (name, js, what) in [
        (
            "func",
            "return {f: function () {}};",
            "function at key \"f\"",
        ),
        ("sym", "return Symbol('s');", "symbol"),
        ("big", "return [10n];", "bigint"),
        ("cycle", "const a = {}; a.self = a; return a;", "circular"),
    ] {
        let (view, attempt) = p.run_script(name, js, "").await;
        assert_eq!(
            view.result,
            Some(json!("technical_error")),
            "{name}: {view:?}"
        );
        assert_eq!(attempt.outcome, "technical_error");
        let msg = attempt.output["error"].as_str().unwrap();
        assert!(msg.contains("[MAG-JS014]"), "{name}: {msg}");
        assert!(msg.contains(what), "{name}: {msg}");
    }
}

#[tokio::test]
async fn the_script_sees_params_and_state_and_can_await() {
    let p = project().await;
    write(
        &p.project.join("_vance/scripts/first.js"),
        "return { doubled: params.n * 2, who: params.who };\n",
    );
    write(
        &p.project.join("_vance/scripts/second.js"),
        "const extra = await Promise.resolve(3);\n\
         const later = await new Promise((resolve) => resolve(state.first.doubled));\n\
         async function inc(x) { await null; return x + 1; }\n\
         return { sum: later + extra, inc: await inc(extra), keys: Object.keys(state), greeting: `hi ${params.who}` };\n",
    );
    p.workflow(
        "chain",
        r#"
start: first
states:
  first:
    type: script_task
    path: _vance/scripts/first.js
    storeAs: first
    on:
      success: second
  second:
    type: script_task
    source: Document     # fixed words are read in any case, as the schema allows
    path: _vance/scripts/second.js
    timeoutSeconds: 10
    storeAs: second
    on:
      success: done
  done:
    type: terminal
    result: "${state.second.sum}"
"#,
    );
    let view = p.run("chain", json!({"n": 21, "who": "ann"})).await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert_eq!(view.vars["first"], json!({"doubled": 42, "who": "ann"}));
    assert_eq!(
        view.vars["second"],
        json!({"sum": 45, "inc": 4, "keys": ["first"], "greeting": "hi ann"})
    );
    assert_eq!(view.result, Some(json!(45)));
}

#[tokio::test]
async fn thrown_errors_are_technical_errors_with_message_and_line() {
    let p = project().await;
    let (view, attempt) = p
        .run_script(
            "boom",
            "const a = 1;\nconst b = 2;\nthrow new Error(\"boom\");\n",
            "",
        )
        .await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert_eq!(view.result, Some(json!("technical_error")));
    assert_eq!(attempt.outcome, "technical_error");
    assert_eq!(attempt.output["message"], "boom");
    assert_eq!(attempt.output["name"], "Error");
    assert_eq!(attempt.output["line"], 3, "{:?}", attempt.output);
    let msg = attempt.output["error"].as_str().unwrap();
    assert!(msg.contains("boom") && msg.contains("line 3"), "{msg}");
    assert!(attempt.error.unwrap().contains("boom"));
    // The error output is what storeAs stored.
    assert_eq!(view.vars["out"]["line"], 3);

    // Thrown from a nested function, after an await: the innermost line of the script.
    let (_, attempt) = p
        .run_script(
            "nested",
            "function check(x) {\n  if (x < 0) {\n    throw new RangeError(`negative: ${x}`);\n  }\n}\nawait null;\ncheck(-1);\n",
            "",
        )
        .await;
    assert_eq!(attempt.outcome, "technical_error");
    assert_eq!(attempt.output["name"], "RangeError");
    assert_eq!(attempt.output["message"], "negative: -1");
    assert_eq!(attempt.output["line"], 3);

    // A rejected await that is not caught.
    let (_, attempt) = p
        .run_script(
            "rejected",
            "\nawait Promise.reject(new TypeError('nope'));\n",
            "",
        )
        .await;
    assert_eq!(attempt.outcome, "technical_error");
    assert_eq!(attempt.output["message"], "nope");
    assert_eq!(attempt.output["line"], 2);

    // A thrown non-Error value keeps its text; there is no line to report.
    let (_, attempt) = p.run_script("str", "throw 'plain text';", "").await;
    assert_eq!(attempt.outcome, "technical_error");
    assert_eq!(attempt.output["message"], "plain text");
    assert_eq!(attempt.output["line"], Value::Null);

    // A syntax error reports its line too.
    let (_, attempt) = p
        .run_script("syntax", "const ok = 1;\nconst = 2;\n", "")
        .await;
    assert_eq!(attempt.outcome, "technical_error");
    assert_eq!(attempt.output["name"], "SyntaxError");
    assert_eq!(attempt.output["line"], 2, "{:?}", attempt.output);
    // One left open at the end is reported on the script's last line, not on a line of the
    // function the engine wraps it in.
    let (_, attempt) = p.run_script("open", "const a = 1;\nreturn (", "").await;
    assert_eq!(attempt.outcome, "technical_error");
    assert_eq!(attempt.output["name"], "SyntaxError");
    assert_eq!(attempt.output["line"], 2, "{:?}", attempt.output);
    let message = attempt.output["message"].as_str().unwrap();
    assert!(message.contains("left open"), "{message}");

    // A caught error is the script's business.
    let (view, _) = p
        .run_script(
            "caught",
            "try { throw new Error('x'); } catch (e) { return 'caught ' + e.message; }",
            "",
        )
        .await;
    assert_eq!(view.vars["out"], "caught x");
}

/// The attempt ended in `timeout` because the script was interrupted at its deadline (not
/// given up on while it kept running).
fn interrupted_at_its_timeout(attempt: &Attempt) {
    assert_eq!(attempt.outcome, "timeout", "{:?}", attempt.output);
    let error = attempt.output["error"].as_str().unwrap();
    assert!(
        error.contains("[MAG-JS011]") && error.contains("was interrupted"),
        "{error}"
    );
    assert_eq!(
        attempt.output.get("stillRunning"),
        None,
        "{:?}",
        attempt.output
    );
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_by_its_timeout() {
    let p = project().await;
    let t0 = Instant::now();
    let (view, attempt) = p
        .run_script("spin", "while (true) {}\n", "    timeoutSeconds: 1\n")
        .await;
    // A lower bound only: load can only make it later.
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert_eq!(view.result, Some(json!("timeout")));
    interrupted_at_its_timeout(&attempt);

    // The interrupt cannot be caught, and a loop of microtasks is stopped as well.
    let (_, attempt) = p
        .run_script(
            "stubborn",
            "for (;;) { try { while (true) {} } catch (e) {} }\n",
            "    timeoutSeconds: 0.5\n",
        )
        .await;
    interrupted_at_its_timeout(&attempt);
    let (_, attempt) = p
        .run_script(
            "ticks",
            "for (;;) { await null; }\n",
            "    timeoutSeconds: 0.5\n",
        )
        .await;
    interrupted_at_its_timeout(&attempt);
    // Catastrophic regex backtracking is interrupted too.
    let (_, attempt) = p
        .run_script(
            "redos",
            "return /(a+)+$/.test('a'.repeat(40) + 'b');\n",
            "    timeoutSeconds: 0.5\n",
        )
        .await;
    interrupted_at_its_timeout(&attempt);
    // Every interrupted script has stopped: none is left spinning on its thread.
    assert_eq!(p.runtime.executors().scripts_running(), 0);
}

/// The reference lists a script_task's outcomes as success / technical_error: a document
/// that routes and retries `technical_error` and not `timeout` (the reference's own `transform`
/// example) has its timeouts retried and routed there. A route for `timeout` wins (above).
#[tokio::test]
async fn a_timeout_nothing_routes_goes_where_technical_error_goes_and_is_retried_like_it() {
    let p = project().await;
    write(
        &p.project.join("_vance/scripts/spin.js"),
        "while (true) {}\n",
    );
    p.workflow(
        "transform",
        r#"
start: transform
states:
  transform:
    type: script_task
    path: _vance/scripts/spin.js
    timeoutSeconds: 0.3
    retry: { maxAttempts: 2, on: [technical_error] }
    on: { success: done }
    catch: { technical_error: escalate }
  done: { type: terminal, result: done }
  escalate: { type: terminal, result: escalated }
"#,
    );
    let view = p.run("transform", json!({})).await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert_eq!(view.result, Some(json!("escalated")));
    let attempts = p.attempts(&view);
    assert_eq!(attempts.len(), 2, "retried once as technical_error");
    for a in &attempts {
        interrupted_at_its_timeout(a);
    }
}

#[tokio::test]
async fn an_allocation_bomb_is_stopped_by_the_memory_limit() {
    // The timeouts are far away: only the memory limit can end these scripts with a
    // technical error.
    let p = project().await;
    let (view, attempt) = p
        .run_script(
            "bomb",
            "let a = [];\nwhile (true) a.push(new Array(1e6).fill(1));\n",
            "    timeoutSeconds: 3600\n",
        )
        .await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert_eq!(view.result, Some(json!("technical_error")));
    assert_eq!(attempt.outcome, "technical_error");
    let msg = attempt.output["error"].as_str().unwrap();
    assert!(msg.contains("memory"), "{msg}");

    // A string bomb too: a million distinct 1 MB strings.
    let (_, attempt) = p
        .run_script(
            "strings",
            "const parts = [];\nwhile (true) parts.push('x'.repeat(1e6) + parts.length);\n",
            "    timeoutSeconds: 3600\n",
        )
        .await;
    assert_eq!(attempt.outcome, "technical_error");
    let msg = attempt.output["error"].as_str().unwrap();
    assert!(msg.contains("memory"), "{msg}");

    // Runaway recursion hits the stack limit instead of the process's stack.
    let (_, attempt) = p
        .run_script(
            "deep",
            "function f(n) { return f(n + 1) + 1; }\nreturn f(0);\n",
            "",
        )
        .await;
    assert_eq!(attempt.outcome, "technical_error");
    let msg = attempt.output["error"].as_str().unwrap();
    assert!(msg.contains("stack"), "{msg}");
}

#[tokio::test]
async fn there_is_no_way_to_reach_the_file_system_network_or_processes() {
    let p = project().await;
    let (view, _) = p
        .run_script(
            "globals",
            r#"
return [
  typeof require, typeof std, typeof os, typeof process, typeof fetch,
  typeof XMLHttpRequest, typeof Deno, typeof setTimeout, typeof module, typeof scriptArgs,
];
"#,
            "",
        )
        .await;
    assert_eq!(view.vars["out"], json!(vec!["undefined"; 10]), "{view:?}");

    // Dynamic import finds no module loader: `fs`, `std`, `os` and files all fail.
    write(&p.project.join("secret.js"), "export const s = 1;\n");
    let (view, _) = p
        .run_script(
            "imports",
            r#"
const out = [];
for (const m of ["fs", "std", "os", "qjs:std", "qjs:os", "./secret.js", "../../secret.js", "/etc/passwd"]) {
  try { await import(m); out.push("loaded " + m); }
  catch (e) { out.push("blocked"); }
}
return out;
"#,
            "",
        )
        .await;
    assert_eq!(view.vars["out"], json!(vec!["blocked"; 8]), "{view:?}");

    // A static import does not even compile in the function body.
    let (_, attempt) = p
        .run_script(
            "static_import",
            "import * as std from 'std';\nreturn 1;\n",
            "",
        )
        .await;
    assert_eq!(attempt.outcome, "technical_error");
    assert_eq!(attempt.output["name"], "SyntaxError");
}

#[tokio::test]
async fn scripts_come_from_the_workspace_or_the_tenant_and_cannot_escape() {
    let p = project().await;
    // `source: workspace` with the default workspace (the project directory)…
    write(&p.project.join("tools/calc.js"), "return params.x + 1;\n");
    p.workflow(
        "ws",
        &one_script("    source: workspace\n    path: tools/calc.js\n"),
    );
    let view = p.run("ws", json!({"x": 1})).await;
    assert_eq!(view.vars["out"], 2, "{view:?}");

    // …and a named workspace from the settings.
    write(
        &p.project.join("_vance/settings.yaml"),
        "workspaces:\n  build: build-dir\n",
    );
    write(
        &p.project.join("build-dir/gen.js"),
        "return 'from build';\n",
    );
    p.workflow(
        "named",
        &one_script("    source: workspace\n    dirName: build\n    path: gen.js\n"),
    );
    assert_eq!(p.run("named", json!({})).await.vars["out"], "from build");

    // An unknown workspace is a technical error.
    p.workflow(
        "unknown_ws",
        &one_script("    source: workspace\n    dirName: nope\n    path: gen.js\n"),
    );
    let view = p.run("unknown_ws", json!({})).await;
    assert_eq!(view.result, Some(json!("technical_error")));
    assert!(
        view.vars["out"]["error"]
            .as_str()
            .unwrap()
            .contains("[MAG-JS005]")
    );

    // `source: document` falls back to the tenant directory.
    let tenant = p.project.parent().unwrap().join("_tenant");
    write(
        &tenant.join("_vance/scripts/shared.js"),
        "return 'tenant-wide';\n",
    );
    p.workflow(
        "shared",
        &one_script("    path: _vance/scripts/shared.js\n"),
    );
    assert_eq!(p.run("shared", json!({})).await.vars["out"], "tenant-wide");

    // Paths that leave their root are rejected before anything is read.
    write(
        &p.project.parent().unwrap().join("x.js"),
        "return 'escaped';\n",
    );
    for (name, spec) in [
        ("up", "    path: ../x.js\n"),
        ("up_ws", "    source: workspace\n    path: ../x.js\n"),
        ("deep", "    path: _vance/../../x.js\n"),
        ("absolute", "    path: /etc/hostname\n"),
    ] {
        p.workflow(name, &one_script(spec));
        let view = p.run(name, json!({})).await;
        assert_eq!(
            view.result,
            Some(json!("technical_error")),
            "{name}: {view:?}"
        );
        let msg = view.vars["out"]["error"].as_str().unwrap();
        assert!(msg.contains("[MAG-JS002]"), "{name}: {msg}");
    }

    // …and so is a symbolic link out of the project.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(
            p.project.parent().unwrap().join("x.js"),
            p.project.join("_vance/scripts/link.js"),
        )
        .unwrap();
        p.workflow("link", &one_script("    path: _vance/scripts/link.js\n"));
        let view = p.run("link", json!({})).await;
        assert_eq!(view.result, Some(json!("technical_error")), "{view:?}");
        assert!(
            view.vars["out"]["error"]
                .as_str()
                .unwrap()
                .contains("[MAG-JS002]")
        );
    }

    // A missing script names where it looked.
    p.workflow("missing", &one_script("    path: _vance/scripts/none.js\n"));
    let view = p.run("missing", json!({})).await;
    let msg = view.vars["out"]["error"].as_str().unwrap();
    assert!(
        msg.contains("[MAG-JS003]") && msg.contains("_tenant"),
        "{msg}"
    );
}

#[tokio::test]
async fn cancelling_the_run_interrupts_a_spinning_script() {
    let p = project().await;
    // Only the cancellation can stop this script: its timeout is an hour away.
    p.script("spin", "while (true) {}\n", "    timeoutSeconds: 3600\n");
    let run = p
        .runtime
        .start(&p.engine, &p.scope, "spin", json!({}), "tester")
        .await
        .unwrap();
    let executors = p.runtime.executors();
    while executors.scripts_running() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    p.engine.cancel(run, "test").await.unwrap();
    let view = p.engine.wait_settled(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Cancelled, "{view:?}");
    // The interrupt stopped the script's thread (a generous bound, far below its timeout).
    let deadline = Instant::now() + Duration::from_secs(60);
    while executors.scripts_running() > 0 {
        assert!(Instant::now() < deadline, "the cancelled script still runs");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The project's lane is free again: the next script runs.
    let (view, _) = p.run_script("after", "return 'next';", "").await;
    assert_eq!(view.vars["out"], "next");
}

/// What `magrathea validate` finds in a document with `spec` as its script_task's fields:
/// every diagnostic of `load_workflow_checked` against the project's documents.
fn checked(p: &Project, spec: &str) -> Vec<String> {
    let (docs, scope) = magrathea_yaml::DocumentSource::for_project_dir(&p.project);
    let lookup = magrathea_yaml::ProjectDocuments::new(&docs, &scope);
    let text = one_script(spec);
    match magrathea_yaml::load_workflow_checked("wf.yaml", &text, &Default::default(), lookup) {
        Ok(loaded) => loaded.warnings.iter().map(ToString::to_string).collect(),
        Err(diags) => diags.iter().map(ToString::to_string).collect(),
    }
}

/// A script path written without placeholders is looked up before the run, where the run
/// would look for it: a missing script, a path out of the project and an unknown workspace
/// are errors at the path, with the reason the task would fail with.
#[tokio::test]
async fn a_literal_script_path_that_a_run_would_not_find_is_an_error() {
    let p = project().await;
    write(&p.project.join("_vance/scripts/there.js"), "return 1;\n");
    write(
        &p.project.parent().unwrap().join("x.js"),
        "return 'escaped';\n",
    );
    assert_eq!(
        checked(&p, "    path: _vance/scripts/there.js\n"),
        Vec::<String>::new()
    );
    // Placeholders are resolved at run time: nothing to look up before.
    assert_eq!(
        checked(&p, "    path: \"_vance/scripts/${params.name}.js\"\n"),
        Vec::<String>::new()
    );

    for (spec, why) in [
        (
            "    path: _vance/scripts/none.js\n",
            "[MAG-JS003] script `_vance/scripts/none.js` not found: looked for ",
        ),
        (
            "    path: ../x.js\n",
            "[MAG-JS002] invalid script path `../x.js`",
        ),
        (
            "    path: /etc/hostname\n",
            "[MAG-JS002] invalid script path `/etc/hostname`",
        ),
        (
            "    source: workspace\n    dirName: nope\n    path: gen.js\n",
            "[MAG-JS005] unknown workspace `nope`",
        ),
    ] {
        let found = checked(&p, spec);
        let line = 5 + spec.lines().count();
        let prefix = format!(
            "wf.yaml:{line}:11: [MAG-Y040] the path of script_task 's' names no script it can \
             run, so the task would end with 'technical_error': {why}"
        );
        assert!(
            found.len() == 1 && found[0].starts_with(&prefix),
            "{spec}: expected {prefix:?} in {found:#?}"
        );
    }
}

/// A link that leads out of the project is refused alike whether what it points to exists:
/// the answer tells nothing of the files outside.
#[tokio::test]
async fn a_script_linked_out_is_refused_alike_whether_its_target_exists_or_not() {
    let p = project().await;
    let outside = p.project.parent().unwrap().join("elsewhere");
    write(&outside.join("there.js"), "return 1;\n");
    let scripts = p.project.join("_vance/scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::os::unix::fs::symlink(outside.join("there.js"), scripts.join("there.js")).unwrap();
    std::os::unix::fs::symlink(outside.join("nothing.js"), scripts.join("nowhere.js")).unwrap();
    let why = |name: &str| {
        let found = checked(&p, &format!("    path: _vance/scripts/{name}.js\n"));
        assert_eq!(found.len(), 1, "{found:#?}");
        found[0].replace(name, "NAME")
    };
    let there = why("there");
    assert!(there.contains("[MAG-JS002]"), "{there}");
    assert_eq!(there, why("nowhere"));
}

/// A workspace changes while runs go on (a shell step may write the script a later state
/// runs): a script missing from it now is a warning, and the document validates.
#[tokio::test]
async fn a_workspace_script_missing_before_the_run_is_a_warning() {
    let p = project().await;
    let found = checked(
        &p,
        "    source: workspace\n    path: gen/made_by_the_run.js\n",
    );
    let prefix = "wf.yaml:7:11: [MAG-Y040] the script of script_task 's' is not in its \
                  workspace now: unless a state before it writes it there, the task would end \
                  with 'technical_error': [MAG-JS003] script `gen/made_by_the_run.js` not found";
    assert!(
        found.len() == 1 && found[0].starts_with(prefix),
        "expected the warning {prefix:?} in {found:#?}"
    );
    // Written by then, it runs.
    write(&p.project.join("gen/made_by_the_run.js"), "return 7;\n");
    p.workflow(
        "ws",
        &one_script("    source: workspace\n    path: gen/made_by_the_run.js\n"),
    );
    assert_eq!(p.run("ws", json!({})).await.vars["out"], 7);
}

/// A script saved in another encoding than UTF-8 (Latin-1, a Windows editor's UTF-16) is
/// named with the place of its first byte that is not UTF-8, before the run and by the run.
#[tokio::test]
async fn a_script_that_is_not_utf8_is_named_where_its_bad_byte_is() {
    let p = project().await;
    let file = p.project.join("_vance/scripts/latin.js");
    std::fs::write(&file, b"// menu\nconst s = 'caf\xe9';\nreturn { s };\n").unwrap();
    // The command names the file by its path as it is (a served tree, relative to its root).
    let why = "/_vance/scripts/latin.js: line 2, column 15: the file is not UTF-8 text (byte \
               0xE9): expected a UTF-8 script; save the file as UTF-8";

    let found = checked(&p, "    path: _vance/scripts/latin.js\n");
    assert!(
        found.len() == 1 && found[0].contains("[MAG-Y040]") && found[0].ends_with(why),
        "{found:#?}"
    );

    p.workflow("latin", &one_script("    path: _vance/scripts/latin.js\n"));
    let view = p.run("latin", json!({})).await;
    let attempts = p.attempts(&view);
    assert_eq!(attempts.len(), 1, "{view:?}");
    assert_eq!(attempts[0].outcome, "technical_error");
    let error = attempts[0].error.clone().unwrap_or_default();
    assert!(
        error.starts_with("[MAG-JS004] ") && error.ends_with(why),
        "{error}"
    );
}
