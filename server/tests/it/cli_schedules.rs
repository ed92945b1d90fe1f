//! `magrathea schedules list|trigger|pause|resume` and `magrathea deliveries list`, on the
//! project's own store and through a running server that owns it.

use std::time::{Duration, Instant};

use crate::cli_common;
use crate::serve_child;
use cli_common::{Project, code, json, stderr, stdout};
use serve_child::ServeChild;

const QUICK: &str = "start: done\nstates:\n  done: { type: terminal, result: { ok: true } }\n";

const NIGHTLY: &str = "\
description: Nightly audit
cron: \"0 0 6 * * *\"
timezone: Europe/Berlin
workflow: quick
params: { scope: production }
runAs: ops
";

/// The entry of `list` (a JSON array) named `name`.
fn named(list: &serde_json::Value, name: &str) -> serde_json::Value {
    list.as_array()
        .unwrap_or_else(|| panic!("no list: {list}"))
        .iter()
        .find(|t| t["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

fn project() -> Project {
    let p = Project::new();
    p.workflow("quick", QUICK);
    std::fs::create_dir_all(p.dir.join("_vance/scheduler")).unwrap();
    std::fs::write(p.dir.join("_vance/scheduler/nightly.yaml"), NIGHTLY).unwrap();
    p
}

/// A one-shot's `at …` cell is longer than a cron pattern: every column still starts where its
/// header does, and a one-shot shows no zone (its instant carries its offset).
#[test]
fn list_keeps_its_columns_in_line_with_a_one_shot() {
    let p = project();
    std::fs::write(
        p.dir.join("_vance/scheduler/once.yaml"),
        "at: \"2099-12-24T18:00:00+01:00\"\nworkflow: quick\n",
    )
    .unwrap();
    let out = p.cli(&["schedules", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let header = text.lines().next().unwrap();
    let zone = header.find("ZONE").unwrap();
    let next = header.find("NEXT FIRE TIMES").unwrap();
    for (name, zone_cell) in [("nightly", "Europe/Berlin"), ("once", "-")] {
        let row = text.lines().find(|l| l.starts_with(name)).unwrap();
        assert_eq!(
            row.get(zone..zone + zone_cell.len()),
            Some(zone_cell),
            "{text}"
        );
        assert_eq!(row.as_bytes()[next - 1], b' ', "{text}");
        assert!(row[next..].starts_with("20"), "{text}");
    }
}

/// Ticks start in order, so a jitter longer than the interval delays the ticks after a late
/// one: the next fire times listed are the times they will start, never one before another.
#[test]
fn next_fire_times_with_a_jitter_longer_than_the_interval_are_in_order() {
    let p = project();
    for name in ["a", "b", "c", "d", "e"] {
        std::fs::write(
            p.dir.join(format!("_vance/scheduler/{name}.yaml")),
            "cron: \"* * * * *\"\nworkflow: quick\njitter: 2h\n",
        )
        .unwrap();
    }
    let listed = json(&p.cli(&["schedules", "list", "--json"]));
    for name in ["a", "b", "c", "d", "e"] {
        let s = named(&listed, name);
        let next: Vec<&str> = s["nextFireTimes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(next.len(), 3, "{s}");
        assert!(next.is_sorted(), "{name}: {next:?}");
    }
}

#[test]
fn list_shows_each_schedule_with_its_zone_and_next_fire_times() {
    let p = project();
    let out = p.cli(&["schedules", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("NAME"), "{text}");
    assert!(text.contains("nightly"), "{text}");
    assert!(text.contains("0 0 6 * * *"), "{text}");
    assert!(text.contains("Europe/Berlin"), "{text}");
    // The next fire times, three of them, in the table too.
    let row = text.lines().find(|l| l.starts_with("nightly")).unwrap();
    assert_eq!(row.matches(":00:00").count(), 3, "{text}");
    let listed = json(&p.cli(&["schedules", "list", "--json"]));
    let s = &listed[0];
    assert_eq!(s["name"], "nightly");
    assert_eq!(s["workflow"], "quick");
    assert_eq!(s["active"], true);
    let next = s["nextFireTimes"].as_array().unwrap();
    assert_eq!(next.len(), 3);
    // 06:00 in Berlin is 04:00Z or 05:00Z depending on the season.
    for t in next {
        let t = t.as_str().unwrap();
        assert!(t.ends_with(":00:00Z"), "{t}");
        assert!(t.contains("T04:") || t.contains("T05:"), "{t}");
    }
    // The fields of the HTTP trigger listing: the next fire time, the last delivery (none yet).
    assert_eq!(s["nextFireAt"], next[0], "{s}");
    assert!(s["lastDelivery"].is_null(), "{s}");
    p.cli(&["schedules", "trigger", "nightly"]);
    let listed = json(&p.cli(&["schedules", "list", "--json"]));
    let last = &listed[0]["lastDelivery"];
    assert_eq!(last["status"], "accepted", "{last}");
    assert_eq!(last["reason"], "manual", "{last}");
}

/// Listing the schedules of a project that has none, before any run, answers an empty list
/// and creates no store, as the other reading commands do.
#[test]
fn listing_no_schedules_creates_no_store() {
    let p = Project::new();
    p.workflow("quick", QUICK);
    let out = p.cli(&["schedules", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out), serde_json::json!([]));
    let out = p.cli(&["schedules", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("no schedules"), "{}", stderr(&out));
    // Deliveries too: an empty page, `next` included, as on a store with none; a bad filter
    // is refused whether or not there is a store.
    let out = p.cli(&["deliveries", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        json(&out),
        serde_json::json!({"deliveries": [], "next": null})
    );
    let out = p.cli(&["deliveries", "list", "--status", "bogus"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!p.dir.join(".magrathea").exists(), "a store was created");
}

/// Listing a project's schedules reads their documents and creates no store: in a project of
/// a served tree, whose store is the tree's, a store made by the listing would hide the
/// server's runs from every later reading command.
#[test]
fn listing_schedules_creates_no_store_and_points_to_the_trees() {
    let p = project();
    let tree_store = p.root.join(".magrathea");
    let tree_store = tree_store.to_str().unwrap();
    assert_eq!(
        code(&p.cli(&["run", "quick", "--store", tree_store])),
        0,
        "the tree's store holds a run"
    );
    let out = p.cli(&["schedules", "list", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let nightly = named(&json(&out), "nightly");
    assert_eq!(nightly["nextFireTimes"].as_array().unwrap().len(), 3);
    assert!(nightly["lastDelivery"].is_null(), "{nightly}");
    assert!(
        stderr(&out).contains(&format!("pass --store {tree_store}")),
        "{}",
        stderr(&out)
    );
    assert!(!p.dir.join(".magrathea").exists(), "a store was created");
    let runs = p.cli(&["runs", "list"]);
    assert!(stderr(&runs).contains("note:"), "{}", stderr(&runs));
}

#[test]
fn trigger_fires_the_schedule_now_and_records_the_delivery() {
    let p = project();
    let out = p.cli(&["schedules", "trigger", "nightly", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let run = json(&out);
    assert_eq!(run["status"], "DONE");
    assert_eq!(run["startedBy"], "ops");
    assert_eq!(run["params"]["scope"], "production");
    let id = run["workflowRunId"].as_str().unwrap();
    let d = json(&p.cli(&["deliveries", "list", "--trigger", "nightly", "--json"]));
    let first = &d["deliveries"][0];
    assert_eq!(first["status"], "accepted");
    assert_eq!(first["reason"], "manual");
    assert_eq!(first["runId"], id);
    // The reference's scheduler event log names the run `workflowRunId` (§8.4).
    assert_eq!(first["workflowRunId"], id);
    let listed = json(&p.cli(&["schedules", "list", "--json"]));
    assert_eq!(listed[0]["lastRunId"], id);
    assert_eq!(listed[0]["lastRunStatus"], "DONE");
    // The table too.
    let table = stdout(&p.cli(&["deliveries", "list"]));
    assert!(table.contains("accepted") && table.contains(id), "{table}");
}

/// A manual fire whose start fails (its workflow is gone) is a delivery on record as failed,
/// with the reason, as the server's scheduler keeps one.
#[test]
fn a_manual_fire_that_cannot_start_is_recorded_as_failed() {
    let p = project();
    std::fs::remove_file(p.dir.join("_vance/workflows/quick.yaml")).unwrap();
    let out = p.cli(&["schedules", "trigger", "nightly"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let d = json(&p.cli(&["deliveries", "list", "--trigger", "nightly", "--json"]));
    let first = &d["deliveries"][0];
    assert_eq!(first["status"], "failed", "{d}");
    assert_eq!(first["reason"], "manual", "{d}");
    assert!(
        first["message"].as_str().unwrap().contains("quick"),
        "the reason names the missing workflow: {d}"
    );
    assert!(first["runId"].is_null(), "{d}");
}

/// A paused schedule, or one its document switches off, fires nothing by hand either.
#[test]
fn a_paused_or_switched_off_schedule_is_not_fired_by_hand() {
    let p = project();
    assert_eq!(code(&p.cli(&["schedules", "pause", "nightly"])), 0);
    let out = p.cli(&["schedules", "trigger", "nightly"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("paused by an operator"),
        "{}",
        stderr(&out)
    );
    assert_eq!(code(&p.cli(&["schedules", "resume", "nightly"])), 0);
    let doc = p.dir.join("_vance/scheduler/nightly.yaml");
    let text = std::fs::read_to_string(&doc).unwrap();
    std::fs::write(&doc, format!("{text}enabled: false\n")).unwrap();
    let out = p.cli(&["schedules", "trigger", "nightly"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("enabled: false"), "{}", stderr(&out));
    let d = json(&p.cli(&["deliveries", "list", "--trigger", "nightly", "--json"]));
    assert_eq!(d["deliveries"], serde_json::json!([]), "{d}");
}

#[test]
fn deliveries_page_with_the_cursor_of_the_previous_page() {
    let p = project();
    let mut runs = Vec::new();
    for _ in 0..2 {
        let out = p.cli(&["schedules", "trigger", "nightly", "--json"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        runs.push(json(&out)["workflowRunId"].as_str().unwrap().to_owned());
    }
    let first = json(&p.cli(&["deliveries", "list", "--limit", "1", "--json"]));
    assert_eq!(
        first["deliveries"][0]["runId"],
        runs[1].as_str(),
        "newest first"
    );
    let next = first["next"].as_str().expect("a next page").to_owned();
    let second = json(&p.cli(&[
        "deliveries",
        "list",
        "--limit",
        "1",
        "--cursor",
        &next,
        "--json",
    ]));
    assert_eq!(second["deliveries"][0]["runId"], runs[0].as_str());
    // A page that ends the list says so, even when it is full.
    assert_eq!(second["next"], serde_json::Value::Null, "{second}");
    let both = json(&p.cli(&["deliveries", "list", "--limit", "2", "--json"]));
    assert_eq!(both["deliveries"].as_array().unwrap().len(), 2);
    assert_eq!(both["next"], serde_json::Value::Null, "{both}");
    let last = json(&p.cli(&["deliveries", "list", "--json"]));
    assert_eq!(last["deliveries"].as_array().unwrap().len(), 2);
    assert_eq!(last["next"], serde_json::Value::Null, "{last}");
    // The text says there is more.
    let out = p.cli(&["deliveries", "list", "--limit", "1"]);
    assert!(stderr(&out).contains("--cursor"), "{}", stderr(&out));
    // Out of range or foreign values are refused, not clamped or ignored.
    for args in [["--limit", "0"], ["--limit", "5000"], ["--cursor", "zz"]] {
        let mut all = vec!["deliveries", "list"];
        all.extend(args);
        assert_eq!(code(&p.cli(&all)), 2, "{args:?}");
    }
}

#[test]
fn pause_and_resume_are_kept_and_shown() {
    let p = project();
    let out = p.cli(&["schedules", "pause", "nightly"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "paused schedule nightly\n");
    let listed = json(&p.cli(&["schedules", "list", "--json"]));
    assert_eq!(listed[0]["paused"], true);
    assert_eq!(listed[0]["active"], false);
    assert_eq!(listed[0]["nextFireTimes"], serde_json::json!([]));
    assert!(stdout(&p.cli(&["schedules", "list"])).contains("paused"));
    let out = p.cli(&["schedules", "resume", "nightly"]);
    assert_eq!(stdout(&out), "resumed schedule nightly\n");
    let listed = json(&p.cli(&["schedules", "list", "--json"]));
    assert_eq!(listed[0]["active"], true);
}

#[test]
fn unknown_schedules_and_triggers_fail_clearly() {
    let p = project();
    // As `run` of an unknown workflow: nothing started, exit 2.
    let out = p.cli(&["schedules", "trigger", "nope"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("nothing was started"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("no schedule `nope`"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("nightly"),
        "the known ones are listed"
    );
    let out = p.cli(&["schedules", "pause", "nope"]);
    assert_eq!(code(&out), 1);
    let out = p.cli(&["deliveries", "list", "--trigger", "nope"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("no trigger `nope`"),
        "{}",
        stderr(&out)
    );
    let out = p.cli(&["deliveries", "list", "--status", "weird"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("unknown status"), "{}", stderr(&out));
}

#[test]
fn an_invalid_schedule_is_listed_with_its_error_and_cannot_be_fired() {
    let p = project();
    std::fs::write(
        p.dir.join("_vance/scheduler/broken.yaml"),
        "cron: \"0 0 6 * * *\"\nworkflow: quick\nrecipe: audit\n",
    )
    .unwrap();
    let listed = json(&p.cli(&["schedules", "list", "--json"]));
    let broken = named(&listed, "broken");
    let error = broken["error"].as_str().unwrap();
    assert!(error.contains("broken.yaml:3:1"), "{error}");
    // The table says it is invalid; why, and where, follows on stderr.
    let out = p.cli(&["schedules", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let row = stdout(&out);
    let row = row.lines().find(|l| l.starts_with("broken")).unwrap();
    assert!(row.contains("invalid"), "{row}");
    assert!(stderr(&out).contains(error), "{}", stderr(&out));
    let out = p.cli(&["schedules", "trigger", "broken"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing was started"));
}

#[test]
fn the_commands_work_through_a_server_that_owns_the_store() {
    let p = project();
    let mut cmd = serve_child::serve_command(&p.root);
    cmd.arg("--store").arg(p.store()).arg("--insecure-no-auth");
    let server = ServeChild::spawn(cmd);
    let socket = p.store().join("control.sock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "no control socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = reqwest::Client::new();
    let triggers = || {
        rt.block_on(async {
            let url = format!("{}/brain/acme/project/shop/triggers", server.base);
            let listed: serde_json::Value =
                client.get(url).send().await.unwrap().json().await.unwrap();
            listed
        })
    };
    // A schedule written through the API keeps its writer (the requester of its runs) when a
    // command rebuilds the project's registrations.
    rt.block_on(async {
        let url = format!(
            "{}/brain/acme/project/shop/documents/scheduler/weekly.yaml",
            server.base
        );
        let r = client
            .put(url)
            .body("cron: \"0 0 6 * * 1\"\nworkflow: quick\n")
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    });
    assert_eq!(
        named(&triggers()["triggers"], "weekly")["writtenBy"],
        "anonymous"
    );
    let out = p.cli(&["schedules", "trigger", "nightly", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = json(&out)["workflowRunId"].as_str().unwrap().to_owned();
    let out = p.cli(&["schedules", "pause", "nightly"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Paused, it is not fired by hand either.
    let out = p.cli(&["schedules", "trigger", "nightly", "--json"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let d = json(&p.cli(&["deliveries", "list", "--json"]));
    assert_eq!(d["deliveries"][0]["runId"], id);
    let listed = json(&p.cli(&["schedules", "list", "--json"]));
    assert_eq!(named(&listed, "nightly")["paused"], true, "{listed}");
    // The server reads the same catalog: the pause holds there, and the writer too.
    let listed = triggers();
    let nightly = named(&listed["triggers"], "nightly");
    assert_eq!(nightly["paused"], true, "{listed}");
    assert_eq!(nightly["lastRunId"], id.as_str());
    assert_eq!(
        named(&listed["triggers"], "weekly")["writtenBy"],
        "anonymous"
    );
}
