//! Templates resolved across a loaded state's raw spec, as the dispatcher does.

use magrathea_yaml::{LoadOptions, load_workflow, resolve_value};
use serde_json::json;

#[test]
fn resolves_reference_states() {
    let text = include_str!("../fixtures/pr-review.yaml");
    let doc = load_workflow("pr-review.yaml", text, &LoadOptions::default())
        .map(|l| l.doc)
        .unwrap_or_else(|d| panic!("{d}"));
    let params = json!({"pr_url": "https://git/pr/7", "reviewer": "@alice"});
    let state = json!({"check_output": {"stderr": "boom"}, "review_summary": "fine"});
    let merge = resolve_value(&doc.states["merge"].raw, &params, &state);
    assert_eq!(merge["params"]["url"], "https://git/pr/7");
    assert_eq!(merge["on"]["success"], "done");
    let gate = resolve_value(&doc.states["human_review"].raw, &params, &state);
    assert_eq!(gate["inbox"]["title"], "PR https://git/pr/7 approve?");
    assert_eq!(gate["inbox"]["assignedTo"], "@alice");
    let debug = resolve_value(&doc.states["debug"].raw, &params, &state);
    assert_eq!(
        debug["params"]["prompt"],
        "Diagnose the failing checks and propose a fix.\nstderr: boom\n"
    );
    let done = resolve_value(&doc.states["done"].raw, &params, &json!({}));
    assert_eq!(done["result"]["summary"], "");
}

#[test]
fn route_condition_evaluates() {
    let text = include_str!("../fixtures/pr-review.yaml");
    let doc = load_workflow("pr-review.yaml", text, &LoadOptions::default())
        .map(|l| l.doc)
        .unwrap_or_else(|d| panic!("{d}"));
    let magrathea_yaml::TaskSpec::Condition { rules, otherwise } = &doc.states["route"].task else {
        panic!("route is not a condition_task");
    };
    let low = json!({"plan_output": {"risk": "low"}});
    assert_eq!(rules[0].condition.evaluate(&low, &json!({})), Ok(true));
    assert_eq!(
        rules[0].condition.evaluate(&json!({}), &json!({})),
        Ok(false)
    );
    assert_eq!(rules[0].target, "merge");
    assert_eq!(
        otherwise.as_ref().map(|o| o.value.as_str()),
        Some("human_review")
    );
}
