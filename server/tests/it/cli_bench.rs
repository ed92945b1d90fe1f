//! `magrathea bench`: the real binary measures a directory the test chooses, reports every
//! figure with its ratios to the baselines, and leaves nothing behind; a directory it cannot
//! use is a usage error.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_magrathea");

/// The figures every run reports, by name, with their units.
const FIGURES: &[(&str, &str)] = &[
    ("raw_fdatasync", "records/s"),
    ("raw_redb_commit_1", "records/s"),
    ("appenders_1", "records/s"),
    ("appenders_1_records_per_commit", "records/commit"),
    ("appenders_16", "records/s"),
    ("appenders_16_records_per_commit", "records/commit"),
    ("appenders_256", "records/s"),
    ("appenders_256_records_per_commit", "records/commit"),
    ("appenders_1024", "records/s"),
    ("appenders_1024_records_per_commit", "records/commit"),
    ("raw_fdatasync_p50", "ms"),
    ("raw_redb_commit_1_p50", "ms"),
    ("lone_step_p50", "ms"),
    ("raw_fdatasync_p90", "ms"),
    ("raw_redb_commit_1_p90", "ms"),
    ("lone_step_p90", "ms"),
    ("raw_fdatasync_p99", "ms"),
    ("raw_redb_commit_1_p99", "ms"),
    ("lone_step_p99", "ms"),
    ("raw_fdatasync_x11_p50", "ms"),
    ("raw_redb_commit_x10_p50", "ms"),
    ("ten_steps_p50", "ms"),
    ("raw_fdatasync_x11_p90", "ms"),
    ("raw_redb_commit_x10_p90", "ms"),
    ("ten_steps_p90", "ms"),
    ("raw_fdatasync_x11_p99", "ms"),
    ("raw_redb_commit_x10_p99", "ms"),
    ("ten_steps_p99", "ms"),
    ("throughput_1000x10", "steps/s"),
    ("read_decode_10000", "ms"),
    ("replay_10000", "ms"),
];

/// The main baseline of each compared figure.
const BASELINES: &[(&str, &str)] = &[
    ("appenders_1", "raw_fdatasync"),
    ("appenders_16", "raw_redb_commit_1"),
    ("appenders_256", "raw_redb_commit_1"),
    ("appenders_1024", "raw_redb_commit_1"),
    ("lone_step_p50", "raw_fdatasync_p50"),
    ("lone_step_p90", "raw_fdatasync_p90"),
    ("lone_step_p99", "raw_fdatasync_p99"),
    ("ten_steps_p50", "raw_redb_commit_x10_p50"),
    ("ten_steps_p90", "raw_redb_commit_x10_p90"),
    ("ten_steps_p99", "raw_redb_commit_x10_p99"),
    ("throughput_1000x10", "raw_redb_commit_1"),
    ("replay_10000", "read_decode_10000"),
];

fn bench(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("bench")
        .args(args)
        .output()
        .expect("running magrathea bench")
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("reading the bench directory")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= expected.abs() * 1e-9,
        "{what}: {actual} != {expected}"
    );
}

#[test]
fn quick_json_reports_every_figure_with_its_ratios_and_removes_its_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = bench(&["--quick", "--json", "--dir", dir.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");

    assert_eq!(report["version"], 1);
    // What a dashboard needs to tell one build's points from another's, and when.
    assert_eq!(report["magrathea_version"], env!("CARGO_PKG_VERSION"));
    let started = report["started_at"].as_str().expect("started_at");
    let started: jiff::Timestamp = started.parse().expect("RFC 3339");
    let age = jiff::Timestamp::now().duration_since(started);
    assert!(age.as_secs() >= 0 && age.as_secs() < 600, "{started}");
    assert_eq!(report["quick"], true);
    assert_eq!(report["durability"], "immediate");
    let canonical = dir.path().canonicalize().unwrap();
    assert_eq!(report["dir"], canonical.to_str().unwrap());
    assert!(report["machine"]["cpus"].as_u64().unwrap() >= 1);
    for key in ["cpu_model", "kernel", "filesystem"] {
        let v = &report["machine"][key];
        assert!(v.is_string() || v.is_null(), "machine.{key} is {v}");
    }
    assert!(report["machine"]["os"].is_string());

    let figures = report["figures"].as_array().expect("figures is an array");
    let by_name: HashMap<&str, &Value> = figures
        .iter()
        .map(|f| (f["name"].as_str().expect("a figure's name"), f))
        .collect();
    assert_eq!(by_name.len(), figures.len(), "figure names are unique");
    let names: Vec<&str> = figures
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = FIGURES.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, expected, "the figures, in order");

    for (name, unit) in FIGURES {
        let f = by_name[name];
        assert_eq!(f["unit"], *unit, "{name}'s unit");
        assert!(f["description"].as_str().is_some_and(|d| !d.is_empty()));
        let value = f["value"].as_f64().expect("a numeric value");
        assert!(value.is_finite() && value > 0.0, "{name} = {value}");
        let comparisons = f["comparisons"].as_array().expect("comparisons");
        for c in comparisons {
            let base = by_name[c["baseline"].as_str().expect("a baseline name")];
            // A rate of steps is compared with one raw commit per step.
            let steps_to_records = f["unit"] == "steps/s" && base["unit"] == "records/s";
            assert!(
                base["unit"] == f["unit"] || steps_to_records,
                "{name} is compared in its own unit"
            );
            let ratio = c["ratio"].as_f64().expect("a numeric ratio");
            assert!(ratio.is_finite() && ratio > 0.0);
            assert_close(ratio, value / base["value"].as_f64().unwrap(), name);
        }
        match BASELINES.iter().find(|(n, _)| n == name) {
            Some((_, baseline)) => {
                assert_eq!(f["baseline"], *baseline, "{name}'s baseline");
                assert_eq!(f["baseline"], comparisons[0]["baseline"]);
                assert_eq!(f["ratio"], comparisons[0]["ratio"]);
            }
            None => {
                assert!(f["baseline"].is_null(), "{name} has no baseline");
                assert!(f["ratio"].is_null());
                assert!(comparisons.is_empty());
            }
        }
    }
    // The lone workflow is compared to 11 raw fdatasyncs too.
    assert_eq!(
        by_name["ten_steps_p50"]["comparisons"][1]["baseline"],
        "raw_fdatasync_x11_p50"
    );

    assert_eq!(
        entries(dir.path()),
        Vec::<String>::new(),
        "the bench files are gone"
    );
}

#[test]
fn quick_table_names_every_figure_and_the_machine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = bench(&["--quick", "--dir", dir.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed: {stderr}");
    let table = String::from_utf8(out.stdout).expect("utf-8");
    assert!(table.contains("durability: Immediate"), "{table}");
    assert!(table.contains("CPUs"), "{table}");
    for (name, unit) in FIGURES {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name} in:\n{table}"));
        assert!(row.contains(unit), "{row}");
    }
    for (name, baseline) in BASELINES {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap();
        assert!(row.contains(&format!("× {baseline}")), "{row}");
    }
    assert_eq!(
        entries(dir.path()),
        Vec::<String>::new(),
        "the bench files are gone"
    );
}

#[test]
fn a_missing_dir_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nonexistent");
    let out = bench(&["--quick", "--dir", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("--dir {}: no such directory", missing.display())),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    assert!(!missing.exists());
}

#[test]
fn a_file_as_dir_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let out = bench(&["--quick", "--json", "--dir", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("--dir {}: not a directory", file.display())),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_dir_it_cannot_write_to_is_a_usage_error() {
    // sysfs refuses new directories even to root, unlike a directory without write permission.
    let out = bench(&["--quick", "--dir", "/sys"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--dir /sys: cannot create a directory in it"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn ctrl_c_while_measuring_removes_the_bench_files_and_exits_130() {
    interrupted_by(nix::sys::signal::Signal::SIGINT);
}

/// SIGTERM (a service manager stopping it, `timeout`) ends it as Ctrl-C does.
#[test]
fn sigterm_while_measuring_removes_the_bench_files_and_exits_130() {
    interrupted_by(nix::sys::signal::Signal::SIGTERM);
}

/// A closed terminal (SIGHUP) ends it as Ctrl-C does: the bench files do not stay behind.
#[test]
fn sighup_while_measuring_removes_the_bench_files_and_exits_130() {
    interrupted_by(nix::sys::signal::Signal::SIGHUP);
}

/// Without `--dir`, a system temp directory that is not there is named as what it is.
#[test]
fn a_missing_temp_directory_is_named_as_the_default_it_is() {
    let out = Command::new(BIN)
        .args(["bench", "--quick"])
        .env("TMPDIR", "/nonexistent-magrathea-tmp")
        .output()
        .expect("running magrathea bench");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "the system temp directory (TMPDIR) /nonexistent-magrathea-tmp: no such directory"
        ),
        "{stderr}"
    );
}

/// Every subcommand takes `--project` and `--store`; a store or project is not what the bench
/// measures, so given, they are taken with a note that they are not used (here the bench then
/// stops at its `--dir`, which does not exist, and not at them).
#[test]
fn a_store_or_project_given_to_bench_is_taken_with_a_note() {
    for args in [
        ["--store", "postgres://nobody@127.0.0.1:1/x"],
        ["--project", "/nonexistent"],
    ] {
        let out = Command::new(BIN)
            .args(["bench", "--quick", "--dir", "/nonexistent-magrathea-bench"])
            .args(args)
            .output()
            .expect("running magrathea bench");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--store and --project are not used")
                && stderr.contains("/nonexistent-magrathea-bench"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}

/// `magrathea bench --quick --dir DIR` started with stdout and stderr piped, and its stderr.
fn spawned_quick(
    dir: &Path,
) -> (
    std::process::Child,
    std::io::BufReader<std::process::ChildStderr>,
) {
    use std::process::Stdio;

    let mut child = Command::new(BIN)
        .args(["bench", "--quick", "--dir", dir.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning magrathea bench");
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    (child, stderr)
}

/// The lines of `stderr` up to and with the first holding `needle`.
fn said_until(stderr: &mut impl std::io::BufRead, needle: &str) -> String {
    let (mut said, mut line) = (String::new(), String::new());
    while !line.contains(needle) {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "bench ended early: {said}"
        );
        said.push_str(&line);
    }
    said
}

/// Sends `signal` while the journal writer is measured; the files go, the exit is 130.
fn interrupted_by(signal: nix::sys::signal::Signal) {
    use std::io::Read;

    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, mut stderr) = spawned_quick(dir.path());
    // Interrupted while the journal writer is being measured: files are open in the
    // subdirectory.
    said_until(&mut stderr, "journal writer");
    assert_eq!(entries(dir.path()).len(), 1, "one bench subdirectory");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.contains("bench: interrupted; removing"), "{rest}");
    assert_eq!(
        entries(dir.path()),
        Vec::<String>::new(),
        "the bench files are gone"
    );
}

/// A directory in memory (`/dev/shm` is tmpfs on Linux) is measured, with a note that its
/// figures say nothing of a disk (stopped with Ctrl-C once the note is out).
#[test]
fn a_dir_in_memory_is_measured_with_a_note_that_it_is_no_disk() {
    let shm = Path::new("/dev/shm");
    let on_tmpfs = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some("/dev/shm") && l.split(' ').nth(2) == Some("tmpfs"));
    assert!(
        on_tmpfs,
        "this test needs /dev/shm mounted as tmpfs (it is on Linux)"
    );
    let dir = tempfile::tempdir_in(shm).expect("tempdir in /dev/shm");
    let (mut child, mut stderr) = spawned_quick(dir.path());
    let said = said_until(&mut stderr, "raw baselines");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(
        said.contains("is in memory (tmpfs)") && said.contains("pass --dir on the disk"),
        "{said}"
    );
}
