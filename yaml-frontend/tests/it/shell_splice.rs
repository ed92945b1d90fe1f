//! Values reach shell commands as data: through `MAGRATHEA_PARAM_*` / `MAGRATHEA_VAR_*`
//! (nested values included), or spliced single-quoted when a state says `splice: quoted`.

use crate::common;

use common::Project;
use magrathea_core::RunStatus;
use serde_json::json;

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
    let scripts = p.project.join("_vance/scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(
        scripts.join("plan.js"),
        "return { risk: \"high'; echo pwned\" };",
    )
    .unwrap();
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
        r#"
start: echo
parameters:
  who: { type: string, required: true }
states:
  echo:
    type: shell_task
    splice: quoted
    run: "printf '%s|' ${params.who} ${params.missing}"
    dirName: workspace
    storeAs: out
    on: { success: done }
  done:
    type: terminal
    result: "${state.out.stdout}"
"#,
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
