//! §3.2 `shell_task`: outcomes by exit code, the workspace, timeouts, the project's lane
//! (§11) and what a command sees of the run's data (§2.4).

use super::*;

#[tokio::test]
async fn s3_2_shell_success_and_business_error_route_by_outcome() {
    let p = project(&[(
        "build",
        r#"
start: check
states:
  check:
    type: shell_task
    run: 'echo out; echo err >&2; exit "$MAGRATHEA_PARAM_CODE"'
    dirName: workspace
    storeAs: check_output
    on:
      success: done
    catch:
      business_error: failed
  done:
    type: terminal
    result:
      stdout: "${state.check_output.stdout}"
  failed:
    type: terminal
    outcome: failure
    result:
      code: "${state.check_output.exitCode}"
"#,
    )])
    .await;
    let ok = p.run("build", json!({"code": 0})).await;
    assert_eq!(ok.status, RunStatus::Done, "{ok:?}");
    assert_eq!(ok.result, Some(json!({"stdout": "out\n"})));
    let out = &ok.vars["check_output"];
    assert_eq!(out["status"], "COMPLETED");
    assert_eq!(out["exitCode"], 0);
    assert_eq!(out["stderr"], "err\n");
    assert!(out["durationMs"].is_u64());

    let bad = p.run("build", json!({"code": 3})).await;
    assert_eq!(bad.status, RunStatus::Failed);
    // A whole `${…}` keeps the value's JSON type: the exit code stays a number.
    assert_eq!(bad.result, Some(json!({"code": 3})));
    let outcomes: Vec<String> = p
        .records(&bad)
        .into_iter()
        .filter_map(|r| match r {
            Record::TaskResult { outcome, .. } => Some(outcome.into_string()),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, vec!["business_error"]);
}

/// §3.2 maps a command that exited 0 to `success`: a child it left in the background holding
/// the output pipes does not hold the step until its timeout (which ended it `timeout`,
/// KILLED); the child goes with the step's process group.
#[tokio::test]
async fn s3_2_a_background_child_holding_the_pipes_does_not_hold_the_step() {
    let p = project(&[(
        "bg",
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: 'sleep 60 & echo main-done; exit 0'\n    dirName: workspace\n    timeoutSeconds: 30\n    storeAs: out\n    on: { success: done }\n    catch: { timeout: late }\n  done: { type: terminal }\n  late: { type: terminal, outcome: failure }\n",
    )])
    .await;
    let v = p.run("bg", json!({})).await;
    assert_eq!(v.current_state.as_deref(), Some("done"), "{v:?}");
    assert_eq!(v.vars["out"]["status"], "COMPLETED");
    assert_eq!(v.vars["out"]["exitCode"], 0);
    assert_eq!(v.vars["out"]["stdout"], "main-done\n");
}

/// Each stream keeps its tail within its limit once written as JSON too: output of control
/// characters (sixfold as `\u0001`) no longer grows past the engine's limit for a task's
/// output and fails a command that exited 0.
#[tokio::test]
async fn s3_2_output_that_grows_as_json_is_cut_to_fit_and_the_step_succeeds() {
    let p = project(&[(
        "noisy",
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: \"head -c 2000000 /dev/zero | tr '\\\\0' '\\\\001'; head -c 2000000 /dev/zero | tr '\\\\0' '\\\\001' >&2\"\n    dirName: workspace\n    storeAs: out\n    on: { success: done }\n  done: { type: terminal }\n",
    )])
    .await;
    let v = p.run("noisy", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{:?}", v.reason);
    let out = &v.vars["out"];
    assert_eq!(out["exitCode"], 0);
    for stream in ["stdout", "stderr"] {
        let text = out[stream].as_str().unwrap();
        assert!(text.starts_with("[… "), "{stream} marks its cut");
        assert!(text.ends_with('\u{1}'), "{stream} keeps its tail");
        assert!(serde_json::to_string(text).unwrap().len() <= 1024 * 1024 + 64);
    }
}

#[tokio::test]
async fn s3_2_shell_runs_in_the_workspace_and_without_dir_name_is_a_technical_error() {
    let p = project(&[
        (
            "pwd",
            "start: a\nstates:\n  a:\n    type: shell_task\n    run: pwd\n    dirName: workspace\n    storeAs: o\n    on:\n      success: done\n  done:\n    type: terminal\n",
        ),
        (
            "nodir",
            "start: a\nstates:\n  a:\n    type: shell_task\n    run: pwd\n    catch:\n      technical_error: done\n  done:\n    type: terminal\n    result: routed\n",
        ),
    ])
    .await;
    let v = p.run("pwd", json!({})).await;
    let pwd = v.vars["o"]["stdout"].as_str().unwrap().trim().to_string();
    assert_eq!(
        Path::new(&pwd).canonicalize().unwrap(),
        p.project.canonicalize().unwrap()
    );
    let v = p.run("nodir", json!({})).await;
    assert_eq!(v.status, RunStatus::Done);
    assert_eq!(v.result, Some(json!("routed")));
}

#[tokio::test]
async fn s3_2_a_shell_timeout_kills_the_process_group_and_routes_timeout() {
    // The background `sleep` was in the killed group.
    assert!(
        times_out_and_its_child_is_gone("sleep 30 & echo $! > child.pid; wait").await,
        "the sleep started by the command survived its timeout"
    );
}

/// A process the command moved into a session of its own (`setsid`) is out of the step's
/// process group; its parent living, it is the step's still, and dies with the step.
#[tokio::test]
async fn a_shell_timeout_kills_what_the_command_started_outside_its_group() {
    assert!(
        times_out_and_its_child_is_gone(
            "setsid sleep 30 >/dev/null 2>&1 </dev/null & echo $! > child.pid; sleep 30"
        )
        .await,
        "the process in a session of its own survived the step's timeout"
    );
}

/// Runs a shell step of `run` (which writes a child's process id to `child.pid`) with a
/// timeout of half a second routed to a terminal: it times out, and whether the child is gone.
async fn times_out_and_its_child_is_gone(run: &str) -> bool {
    let doc = format!(
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: {run:?}\n    \
         dirName: workspace\n    timeoutSeconds: 0.5\n    catch:\n      timeout: done\n  \
         done:\n    type: terminal\n    result: timed out\n"
    );
    let p = project(&[("slow", doc.as_str())]).await;
    let v = p.run("slow", json!({})).await;
    assert_eq!(v.result, Some(json!("timed out")), "{v:?}");
    gone(&p.project.join("child.pid")).await
}

/// Whether the process whose id `file` holds is gone (or a zombie being reaped) within a
/// second.
async fn gone(file: &Path) -> bool {
    let pid: i32 = std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for _ in 0..50 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.contains(") Z ") {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Reads `start <ns>` / `end <ns>` pairs written by concurrent shell steps and says whether
/// any two intervals overlapped.
fn intervals_overlap(log: &str) -> bool {
    let mut spans: Vec<(u128, u128)> = Vec::new();
    let mut open: Vec<u128> = Vec::new();
    for line in log.lines() {
        let (what, ns) = line.split_once(' ').unwrap();
        let ns: u128 = ns.trim().parse().unwrap();
        match what {
            "start" => open.push(ns),
            _ => spans.push((open.remove(0), ns)),
        }
    }
    spans.sort();
    spans.windows(2).any(|w| w[1].0 < w[0].1)
}

const LANE_DOC: &str = r#"
start: work
states:
  work:
    type: shell_task
    run: "echo start $(date +%s%N) >> LOG; sleep 0.3; echo end $(date +%s%N) >> LOG"
    dirName: shared
    on:
      success: done
  done: { type: terminal }
"#;

/// Two runs of one project at once; whether their shell steps overlapped.
async fn two_runs_overlap(p: &Project, log: &std::path::Path) -> bool {
    let _ = std::fs::remove_file(log);
    let a = p
        .runtime
        .start(&p.engine, &p.scope, "lane", json!({}), "t")
        .await
        .unwrap();
    let b = p
        .runtime
        .start(&p.engine, &p.scope, "lane", json!({}), "t")
        .await
        .unwrap();
    assert_eq!(p.engine.wait(a).await.unwrap().status, RunStatus::Done);
    assert_eq!(p.engine.wait(b).await.unwrap().status, RunStatus::Done);
    intervals_overlap(&std::fs::read_to_string(log).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s11_a_projects_synchronous_tasks_run_one_at_a_time_other_projects_do_not_wait() {
    let shared = tempfile::tempdir().unwrap();
    let log = shared.path().join("lane.log");
    let doc = LANE_DOC.replace("LOG", &log.display().to_string());
    let settings = format!("workspaces:\n  shared: {}\n", shared.path().display());

    // One project, two runs at once: the lane serialises them.
    let p = project(&[("lane", &doc)]).await;
    std::fs::write(p.project.join("_vance/settings.yaml"), &settings).unwrap();
    assert!(!two_runs_overlap(&p, &log).await, "same lane overlapped");

    // A project that raises its limit runs them side by side.
    let q = project(&[("lane", &doc)]).await;
    let raised = format!("{settings}lanes:\n  maxConcurrentTasks: 2\n");
    std::fs::write(q.project.join("_vance/settings.yaml"), raised).unwrap();
    assert!(
        two_runs_overlap(&q, &log).await,
        "raised limit still serialised"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_lane_width_takes_effect_without_a_restart() {
    let shared = tempfile::tempdir().unwrap();
    let log = shared.path().join("lane.log");
    let doc = LANE_DOC.replace("LOG", &log.display().to_string());
    let settings = format!("workspaces:\n  shared: {}\n", shared.path().display());
    let p = project(&[("lane", &doc)]).await;
    let path = p.project.join("_vance/settings.yaml");
    std::fs::write(&path, &settings).unwrap();
    assert!(
        !two_runs_overlap(&p, &log).await,
        "the default lane overlapped"
    );

    std::fs::write(
        &path,
        format!("{settings}lanes:\n  maxConcurrentTasks: 2\n"),
    )
    .unwrap();
    assert!(
        two_runs_overlap(&p, &log).await,
        "a raised width still serialised"
    );

    std::fs::write(&path, &settings).unwrap();
    assert!(
        !two_runs_overlap(&p, &log).await,
        "a lowered width still overlapped"
    );
}

#[tokio::test]
async fn shell_steps_see_params_and_vars_as_environment_and_long_output_keeps_its_tail() {
    let doc = r#"
parameters:
  pr-url: { type: string, required: true }
start: first
states:
  first:
    type: shell_task
    run: 'printf "%s|%s" "$MAGRATHEA_PARAM_PR_URL" "$MAGRATHEA_STATE"'
    dirName: workspace
    storeAs: first
    on:
      success: second
  second:
    type: shell_task
    run: 'echo "$MAGRATHEA_VAR_FIRST"; head -c 5000 /dev/zero | tr "\0" x; echo END'
    dirName: workspace
    storeAs: second
    on:
      success: done
  done: { type: terminal }
"#;
    let p = project(&[("env", doc)]).await;
    std::fs::write(
        p.project.join("_vance/settings.yaml"),
        "shell:\n  maxOutputBytes: 100\n",
    )
    .unwrap();
    let v = p
        .run("env", json!({"pr-url": "https://x/1; rm -rf /"}))
        .await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["first"]["stdout"], "https://x/1; rm -rf /|first");
    let second = &v.vars["second"];
    assert_eq!(second["stdoutTruncated"], true);
    let out = second["stdout"].as_str().unwrap();
    assert!(out.starts_with("[… "), "{out}");
    assert!(out.ends_with("xxxxEND\n"), "{out}");
}

/// A stored output too large for a process's environment (Linux: 128 KiB a variable) does not
/// stop the later shell steps from starting: it is given as a file, `…_FILE` naming it, and the
/// small values beside it stay variables.
#[tokio::test]
async fn a_variable_too_large_for_the_environment_is_given_as_a_file() {
    let doc = r#"
start: big
states:
  big:
    type: shell_task
    run: 'head -c 300000 /dev/zero | tr "\0" x'
    dirName: workspace
    storeAs: big
    on:
      success: read
  read:
    type: shell_task
    run: 'test -z "$MAGRATHEA_VAR_BIG_STDOUT" && wc -c < "$MAGRATHEA_VAR_BIG_STDOUT_FILE" && echo "$MAGRATHEA_VAR_BIG_EXITCODE"'
    dirName: workspace
    storeAs: read
    on:
      success: done
  done: { type: terminal }
"#;
    let p = project(&[("big", doc)]).await;
    let v = p.run("big", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let lines: Vec<&str> = v.vars["read"]["stdout"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(lines, ["300000", "0"]);
}

/// A stored output with NUL bytes (`find -print0`), which no environment can hold, does not
/// stop the later shell steps either: it is given as a file; spliced into `run:`, the step is
/// refused saying why.
#[tokio::test]
async fn a_value_with_a_nul_byte_is_given_as_a_file_and_a_splice_of_it_says_why() {
    let doc = r#"
start: nul
states:
  nul:
    type: shell_task
    run: 'printf "a\0b\0"'
    dirName: workspace
    storeAs: files
    on:
      success: read
  read:
    type: shell_task
    run: 'test -z "$MAGRATHEA_VAR_FILES_STDOUT" && od -An -c "$MAGRATHEA_VAR_FILES_STDOUT_FILE" | tr -d " \n"'
    dirName: workspace
    storeAs: read
    on:
      success: spliced
  spliced:
    type: shell_task
    run: 'echo ${state.files.stdout}'
    dirName: workspace
    storeAs: spliced
    on:
      success: done
    catch:
      technical_error: refused
  refused: { type: terminal, result: "${state.spliced.error}" }
  done: { type: terminal }
"#;
    let p = project(&[("nul", doc)]).await;
    let v = p.run("nul", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["read"]["stdout"], "a\\0b\\0", "{v:?}");
    let said = v
        .result
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        said.contains("[MAG-SH016]") && said.contains("NUL byte"),
        "{v:?}"
    );
}

/// §2.4 in a shell command: a placeholder gives the value's text (as data, through a variable
/// of its own, by default); `splice: none` refuses it, naming the variable to use.
#[tokio::test(flavor = "multi_thread")]
async fn a_placeholder_in_a_shell_command_gives_the_value_as_data_unless_splice_none() {
    let doc = "start: a\nparameters:\n  branch: { type: string, required: true }\nstates:\n  a:\n    type: shell_task\n    run: \"printf '%s|' ${params.branch} ${params.missing}\"\n    dirName: workspace\n    storeAs: out\n    on:\n      success: done\n  done: { type: terminal, result: \"${state.out.stdout}\" }\n";
    let p = project(&[("w", doc)]).await;
    let v = p.run("w", json!({"branch": "main; echo pwned"})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.result, Some(json!("main; echo pwned||")));

    let none = doc.replace("    dirName:", "    splice: none\n    dirName:");
    let errors: Vec<String> =
        match magrathea_yaml::load_workflow("w.yaml", &none, &Default::default()) {
            Ok(_) => panic!("a placeholder under `splice: none` must not load"),
            Err(d) => d.errors().map(|d| d.to_string()).collect(),
        };
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("w.yaml:7:24: [MAG-Y028]")
                && e.contains("\"$MAGRATHEA_PARAM_BRANCH\"")
                && e.contains("splice: none")),
        "{errors:?}"
    );
    // A placeholder where no splice is safe is refused whatever the state says.
    let arithmetic = doc.replace(
        "printf '%s|' ${params.branch} ${params.missing}",
        "echo $(( ${params.n} + 1 )) ${params.branch}",
    );
    let errors: Vec<String> =
        match magrathea_yaml::load_workflow("w.yaml", &arithmetic, &Default::default()) {
            Ok(_) => panic!("a splice inside $((…)) must not load"),
            Err(d) => d.errors().map(|d| d.to_string()).collect(),
        };
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("w.yaml:7:20: [MAG-Y028]")
            && errors[0].contains("'${params.n}' inside `$((…))`")
            && errors[0].contains("\"$MAGRATHEA_PARAM_N\""),
        "{errors:?}"
    );
}
