//! Values reach shell commands as data: through `MAGRATHEA_PARAM_*` / `MAGRATHEA_VAR_*`
//! (nested values included), through a variable of their own wherever they stand when a state
//! says `splice: variables`, or spliced single-quoted when it says `splice: quoted`.

use crate::common;

use common::Project;
use magrathea_core::RunStatus;
use serde_json::json;

/// A workflow of one shell state `echo` with `fields` (indented by four), declaring the
/// `parameters` lines (indented by two), whose result is the step's stdout.
fn echo_workflow(parameters: &str, fields: &str) -> String {
    format!(
        "start: echo\nparameters:\n{parameters}\nstates:\n  echo:\n    type: shell_task\n{fields}\n    dirName: workspace\n    storeAs: out\n    on: {{ success: done }}\n  done:\n    type: terminal\n    result: \"${{state.out.stdout}}\"\n"
    )
}

/// Writes the script `_vance/scripts/<name>` of the project.
fn script(p: &Project, name: &str, body: &str) {
    let scripts = p.project.join("_vance/scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(scripts.join(name), body).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nested_parameter_reaches_the_shell_unchanged_through_its_variable() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "sh",
        r#"
start: plan
parameters:
  payload: { type: object, required: true }
states:
  plan:
    type: script_task
    path: _vance/scripts/plan.js
    storeAs: plan
    on: { success: echo }
  echo:
    type: shell_task
    run: 'printf "%s|%s" "$MAGRATHEA_PARAM_PAYLOAD_TITLE" "$MAGRATHEA_VAR_PLAN_RISK"'
    dirName: workspace
    storeAs: out
    on: { success: done }
  done:
    type: terminal
    result: "${state.out.stdout}"
"#,
    );
    script(&p, "plan.js", "return { risk: \"high'; echo pwned\" };");
    let view = p
        .run("sh", json!({ "payload": { "title": "x; echo pwned" } }))
        .await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert_eq!(view.result, Some(json!("x; echo pwned|high'; echo pwned")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quoted_splice_passes_a_hostile_value_as_data() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "sh",
        &echo_workflow(
            "  who: { type: string, required: true }",
            "    splice: quoted\n    run: \"printf '%s|' ${params.who} ${params.missing}\"",
        ),
    );
    for hostile in ["'; echo pwned", "$(echo pwned)", "a'\\''b `id` \"q\" ;|&"] {
        let view = p.run("sh", json!({ "who": hostile })).await;
        assert_eq!(view.status, RunStatus::Done, "{view:?}");
        assert_eq!(
            view.result,
            Some(json!(format!("{hostile}||"))),
            "{hostile}"
        );
    }
}

/// §2.4 in a shell command under `splice: variables`: each placeholder gives the value's text,
/// outside quotes, inside double and single quotes and in a here-document, and a hostile
/// value stays data there.
#[tokio::test(flavor = "multi_thread")]
async fn a_placeholder_gives_its_value_as_data_wherever_it_stands_in_the_command() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "sh",
        &echo_workflow(
            "  who: { type: string, required: true }",
            r#"    splice: variables
    run: |
      printf '%s|' ${params.who} "<${params.who}>" '[${params.who}]' x${params.missing}y
      cat <<EOF
      ${params.who}
      EOF"#,
        ),
    );
    let hostile = [
        "plain",
        "two  words *",
        "'; touch pwned; '",
        "\"; touch pwned; \"",
        "$(touch pwned)`touch pwned`",
        "a'\\''b \\\" ;|& $HOME",
        "x\nEOF\ntouch pwned",
    ];
    for who in hostile {
        let view = p.run("sh", json!({ "who": who })).await;
        assert_eq!(view.status, RunStatus::Done, "{view:?}");
        assert_eq!(
            view.result,
            Some(json!(format!("{who}|<{who}>|[{who}]|xy|{who}\n"))),
            "{who}"
        );
        assert!(!p.project.join("pwned").exists(), "{who} ran as code");
    }
}

/// Writes the workflow `name` of one shell state with `splice` and `run`, and runs it with each
/// of `values` as `who`: it ends DONE with `expect` (`{who}` standing for the value) as its
/// output, and no value ran as code.
async fn each_splice_echoes(
    p: &Project,
    name: &str,
    splice: &str,
    run: &str,
    expect: &str,
    values: &[&str],
) {
    p.workflow(
        name,
        &echo_workflow(
            "  who: { type: string, required: true }",
            &format!("    splice: {splice}\n{run}"),
        ),
    );
    for who in values {
        let view = p.run(name, json!({ "who": who })).await;
        assert_eq!(view.status, RunStatus::Done, "{name} {who}: {view:?}");
        assert_eq!(
            view.result,
            Some(json!(expect.replace("{who}", who))),
            "{name} {who}"
        );
        assert!(!p.project.join("pwned").exists(), "{who} ran as code");
    }
}

/// A backslash before a placeholder (`\${params.x}`, the shell's way to keep a `$`) escaped
/// the first character of the reference spliced in its place, a quote, and the command
/// ended in a syntax error. The value arrives as data there too, under either splice, outside
/// quotes, inside double quotes and in a here-document; inside single quotes the backslash
/// stays text, as the shell has it.
#[tokio::test(flavor = "multi_thread")]
async fn a_backslash_before_a_placeholder_leaves_the_command_whole() {
    let p = Project::new(|rt| rt).await;
    for (name, splice, run, expect) in [
        (
            "vars",
            "variables",
            r#"    run: |
      printf '%s|' \${params.who} "<\${params.who}>" '[\${params.who}]' 'a\'
      cat <<EOF
      \${params.who}
      EOF"#,
            "{who}|<{who}>|[\\{who}]|a\\|{who}\n",
        ),
        (
            "quoted",
            "quoted",
            r#"    run: "printf '%s|' \\${params.who} x""#,
            "{who}|x|",
        ),
    ] {
        each_splice_echoes(
            &p,
            name,
            splice,
            run,
            expect,
            &["plain", "two words; touch pwned", "'\"$(touch pwned)"],
        )
        .await;
    }
}

/// A `$` before a placeholder (`"$${params.amount}"`, a price) is a `$` before the value
/// under either splice: it did not join the reference, into `$$` (the shell's process id)
/// inside double quotes and here-documents, or `$"…"` / `$'…'` outside quotes (bash's
/// translated and escaped strings, which drop the `$`).
#[tokio::test(flavor = "multi_thread")]
async fn a_dollar_before_a_placeholder_stays_a_dollar_before_the_value() {
    let p = Project::new(|rt| rt).await;
    for (name, splice, run, expect) in [
        (
            "vars",
            "variables",
            r#"    run: |
      printf '%s|' "dq=$${params.who}" uq=$${params.who} 'sq=$${params.who}' \$${params.who}
      cat <<EOF
      hd=$${params.who}
      EOF"#,
            "dq=${who}|uq=${who}|sq=${who}|${who}|hd=${who}\n",
        ),
        (
            "quoted",
            "quoted",
            r#"    run: "printf '%s|' uq=$${params.who} x""#,
            "uq=${who}|x|",
        ),
    ] {
        each_splice_echoes(
            &p,
            name,
            splice,
            run,
            expect,
            &["42", "two words; touch pwned", "'\"$(touch pwned)\\n"],
        )
        .await;
    }
}

/// Values that are not strings are spliced as the reference's text: numbers plain, objects
/// as compact JSON; one placeholder used twice is one variable, journaled with the command.
#[tokio::test(flavor = "multi_thread")]
async fn typed_values_splice_as_text_and_the_journal_shows_command_and_values() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "sh",
        &echo_workflow(
            "  n: { type: integer, required: true }\n  payload: { type: object, required: true }",
            "    splice: variables\n    run: \"echo ${params.n} ${params.payload} ${params.payload.title} ${params.n}\"",
        ),
    );
    let view = p
        .run("sh", json!({ "n": 3, "payload": { "title": "t; x" } }))
        .await;
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    assert_eq!(view.result, Some(json!("3 {\"title\":\"t; x\"} t; x 3\n")));
    let journal = p.engine.journal(view.workflow_run_id).unwrap();
    let input = journal
        .iter()
        .find_map(|e| match &e.record {
            magrathea_core::Record::TaskStarted { input, .. } => Some(input.clone()),
            _ => None,
        })
        .expect("the shell step's start");
    assert_eq!(
        input["run"],
        "echo \"${MAGRATHEA_SPLICE_1}\" \"${MAGRATHEA_SPLICE_2}\" \"${MAGRATHEA_SPLICE_3}\" \
         \"${MAGRATHEA_SPLICE_1}\""
    );
    assert_eq!(
        input["env"],
        json!({
            "MAGRATHEA_SPLICE_1": "3",
            "MAGRATHEA_SPLICE_2": "{\"title\":\"t; x\"}",
            "MAGRATHEA_SPLICE_3": "t; x",
        })
    );
}

/// A value spliced into `run:` larger than a process's environment takes (the kernel holds
/// 128 KiB a variable) still reaches the command whole, trailing newlines and quotes included:
/// it goes to a file the shell reads it from, rather than stopping the step from starting.
#[tokio::test(flavor = "multi_thread")]
async fn a_spliced_value_too_large_for_the_environment_reaches_the_command_whole() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "big",
        r#"
start: make
states:
  make:
    type: script_task
    path: _vance/scripts/big.js
    storeAs: big
    on: { success: count }
  count:
    type: shell_task
    run: 'printf %s "${state.big}" | wc -c; printf %s "${state.big}" | tail -c 4 | od -An -c | tr -d " "'
    dirName: workspace
    storeAs: out
    on: { success: done }
  done:
    type: terminal
    result: "${state.out.stdout}"
"#,
    );
    script(&p, "big.js", "return \"y\".repeat(200000) + \"'\\n\\n\";");
    let check = |view: magrathea_core::RunView| {
        assert_eq!(view.status, RunStatus::Done, "{view:?}");
        let out = view.result.unwrap();
        let out = out.as_str().unwrap().to_owned();
        let mut lines = out.lines();
        assert_eq!(lines.next().map(str::trim), Some("200003"), "{out}");
        assert_eq!(lines.next().map(str::trim), Some("y'\\n\\n"), "{out}");
    };
    check(p.run("big", json!({})).await);
    // Whatever `PATH` the tenant gives its steps (here one without `cat`), the value is read.
    let tools = p.project.parent().unwrap().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for tool in ["printf", "wc", "tail", "od", "tr", "sh"] {
        let found = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| std::path::Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap();
        std::os::unix::fs::symlink(found, tools.join(tool)).unwrap();
    }
    let tenant = p.project.parent().unwrap().join("_tenant/_vance");
    std::fs::create_dir_all(&tenant).unwrap();
    std::fs::write(
        tenant.join("settings.yaml"),
        format!("shell:\n  env:\n    PATH: {}\n", tools.display()),
    )
    .unwrap();
    check(p.run("big", json!({})).await);
}
