//! `magrathea serve --max-runs-per-tree` bounds what one start over HTTP can grow into: a
//! workflow whose `foreach_task` starts four of itself per level (4^32 runs within the depth
//! limit) holds the root and at most N sub-runs; the refused sub-runs fail `[MAG-CH003]`.

use crate::http_common;
use crate::serve_child;

use http_common::*;
use serve_child::{ServeChild, serve_command};

const SPREAD: &str = r#"
start: spread
states:
  spread:
    type: foreach_task
    items: [1, 2, 3, 4]
    workflow: spread
    toleratedFailures: "100%"
    storeAs: out
    on: { success: done, failure: done }
  done: { type: terminal, result: spread }
"#;

#[tokio::test]
async fn a_workflow_that_spreads_itself_over_http_stops_at_the_servers_tree_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    write(&root.join("acme/shop/_vance/workflows/spread.yaml"), SPREAD);
    let mut cmd = serve_command(&root);
    cmd.args(["--max-runs-per-tree", "25"]);
    let server = ServeChild::spawn(cmd);
    let client = reqwest::Client::new();
    let run = server.start_run(&client, "spread", ACME).await;
    let view = server.wait_status(&client, &run, ACME, &["DONE"]).await;
    assert_eq!(
        view["result"], "spread",
        "refused sub-runs are tolerated failures: {view}"
    );
    let runs = server
        .get_json(
            &client,
            "/brain/acme/project/shop/workflows/runs?workflow=spread&limit=100",
            ACME,
        )
        .await;
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 26, "the root and 25 sub-runs");
    let mut refused = 0;
    for r in runs {
        assert_eq!(r["status"], "DONE", "{r}");
        let id = r["workflowRunId"].as_str().unwrap();
        refused += server
            .journal(&client, id, ACME)
            .await
            .iter()
            .filter(|rec| {
                rec.to_string()
                    .contains("[MAG-CH003] the tree of runs under root run")
            })
            .count();
    }
    assert!(refused > 0, "some sub-runs were refused for the bound");
}
