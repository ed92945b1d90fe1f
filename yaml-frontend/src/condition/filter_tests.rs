use serde_json::{Value, json};

use super::*;

fn failed_deploy() -> Value {
    json!({
        "event": "workflow.run.failed",
        "runId": "0f2d6c1e9a7b4c3d8e5f6a7b8c9d0e1f",
        "workflowName": "deploy",
        "tenant": "acme",
        "project": "shop",
        "status": "FAILED",
        "startedBy": "schedule:nightly",
        "error": {"kind": "technical_error", "message": "exit 2"}
    })
}

fn matches(src: &str, event: &Value) -> Result<bool, EvalError> {
    Condition::parse_filter(src)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
        .matches_event(event)
}

#[test]
fn a_filter_selects_the_events_it_names() {
    let ev = failed_deploy();
    let src = "#event['workflowName'] == 'deploy' && #event['status'] == 'FAILED'";
    assert_eq!(matches(src, &ev), Ok(true));
    let other = json!({"workflowName": "build", "status": "FAILED"});
    assert_eq!(matches(src, &other), Ok(false));
}

#[test]
fn property_access_reads_the_event_like_indexing() {
    let ev = failed_deploy();
    assert_eq!(matches("#event.workflowName == 'deploy'", &ev), Ok(true));
    assert_eq!(
        matches("#event.error.kind == 'technical_error'", &ev),
        Ok(true)
    );
    assert_eq!(
        matches("#event['error']['message'] matches 'exit [0-9]+'", &ev),
        Ok(true)
    );
    assert_eq!(
        matches(
            "#event.tenant in {'acme', 'globex'} and not (#event.project == 'x')",
            &ev
        ),
        Ok(true)
    );
}

#[test]
fn a_missing_key_reads_null_and_does_not_match() {
    let ev = failed_deploy();
    assert_eq!(matches("#event['assignee']", &ev), Ok(false));
    assert_eq!(matches("#event['assignee'] == null", &ev), Ok(true));
    assert_eq!(matches("#event.approval.step == 'x'", &ev), Ok(false));
}

#[test]
fn a_filter_that_is_not_boolean_is_an_error_at_match_time() {
    let ev = failed_deploy();
    assert!(matches!(
        matches("#event['workflowName']", &ev),
        Err(EvalError::NotBoolean { .. })
    ));
    assert!(matches!(
        matches("#event['workflowName'] < 3", &ev),
        Err(EvalError::Incomparable { .. })
    ));
}

#[test]
fn filters_refuse_the_workflow_variables() {
    for var in ["state", "params", "tasks"] {
        let src = format!("#{var}['x'] == 1");
        let err = Condition::parse_filter(&src).expect_err(&src);
        assert_eq!(err.kind, ConditionErrorKind::Sandbox, "{src}");
        assert!(
            err.message.contains("event filters see only #event"),
            "{src}: {}",
            err.message
        );
        assert_eq!(err.offset, 0);
    }
    let err = Condition::parse_filter("#who == 1").expect_err("unknown variable");
    assert!(err.message.contains("only #event"), "{}", err.message);
    let err = Condition::parse_filter("workflowName == 'deploy'").expect_err("bare name");
    assert!(err.message.contains("#event['key']"), "{}", err.message);
}

#[test]
fn workflow_conditions_refuse_the_event() {
    let err = Condition::parse("#state['ok'] && #event['status'] == 'FAILED'")
        .expect_err("#event in a workflow condition");
    assert_eq!(err.kind, ConditionErrorKind::Sandbox);
    assert_eq!(err.offset, 16);
    assert!(
        err.message
            .contains("'#event' exists only in event filters"),
        "{}",
        err.message
    );
}

#[test]
fn filters_keep_the_sandbox_of_the_language() {
    for src in [
        "T(java.lang.Runtime).getRuntime()",
        "#event.workflowName.toUpperCase() == 'X'",
        "#event['x'] = 1",
        "new Object()",
        "@bean",
    ] {
        let err = Condition::parse_filter(src).expect_err(src);
        assert_eq!(
            err.kind,
            ConditionErrorKind::Sandbox,
            "{src}: {}",
            err.message
        );
    }
}
