//! Durations only known when a state runs (a `${...}` timer duration) keep the limit that
//! validation applies to written ones: longer than 100 years is a `technical_error` that names
//! the limit, routed like any other, never a panic or a timer that fires at once.

use std::time::Duration;

use serde_json::json;

use crate::common;
use common::Project;

const WAIT: &str = r#"
parameters:
  wait: { type: string, required: true }
start: wait
states:
  wait:
    type: timer_task
    duration: "${params.wait}"
    storeAs: waited
    on:
      fired: done
    catch:
      technical_error: too_long
  done:
    type: terminal
    result: fired
  too_long:
    type: terminal
    result: too long
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_templated_duration_past_a_hundred_years_is_a_technical_error_naming_the_limit() {
    let p = Project::new(|r| r).await;
    p.workflow("wait", WAIT);
    let huge = format!("1{}d", "0".repeat(400));
    for wait in ["36526d", "P1000000000000000000000W", huge.as_str()] {
        let v = tokio::time::timeout(
            Duration::from_secs(10),
            p.run("wait", json!({ "wait": wait })),
        )
        .await
        .expect("the run settles instead of sleeping for a century");
        let error = v.vars["waited"]["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let fired = p
            .records(&v)
            .iter()
            .filter(|r| r.type_name() == "TimerFiredRecord")
            .count();
        assert_eq!(v.result, Some(json!("too long")), "{wait}: {v:?}");
        assert!(
            error.contains(&format!("invalid duration '{wait}'"))
                && error.contains("100 years (3155760000 seconds)"),
            "{wait}: {error}"
        );
        assert_eq!(fired, 0, "{wait}: no timer was set, let alone fired");
    }
    let v = p.run("wait", json!({ "wait": "20ms" })).await;
    assert_eq!(v.result, Some(json!("fired")), "{v:?}");
}
