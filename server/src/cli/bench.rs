//! `magrathea bench [--dir DIR] [--quick] [--json]`: measure this machine and its disk with
//! the standard workloads, durable, against raw baselines measured in the same run.
//!
//! The workloads are those of the criterion benches (`magrathea_workloads::suite`), so the
//! figures mean the same in both. Files go to a fresh `magrathea-bench-*` subdirectory of DIR
//! (default: the system temp directory), removed afterwards. Output: a table on stdout, or
//! with `--json` one JSON object (shape in `docs/bench.md`); what it measures is announced on
//! stderr as it goes. A DIR that does not exist or cannot be written is a usage error (exit
//! 2); a failure while measuring (a full disk) exits 1; Ctrl-C or SIGTERM removes the files
//! and exits 130.

use std::path::{Path, PathBuf};

use anyhow::Context;
use magrathea_workloads::suite::{self, Figure, Plan};
use serde_json::{Value, json};

use super::output::{errln, outln};
use super::{EXIT_INTERRUPTED, EXIT_OK, Invalid};

/// Version of the `--json` shape; raised when a field changes meaning or goes away.
const JSON_VERSION: u64 = 1;

/// Arguments of `magrathea bench`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Measures, durable (an fsync per commit): raw fdatasync and raw redb commits of 1 record (the
baselines); the journal writer with 1, 16, 256 and 1,024 concurrent appenders; one durable
step alone (p50/p90/p99) against one raw fdatasync and one raw redb commit; one 10-step
workflow alone (p50/p90/p99) against 11 raw fdatasyncs and 10 raw redb commits; 1,000
concurrent workflows of 10 steps against one raw commit per step; the replay of a
10,000-record run against reading and decoding it. Each ratio is value / baseline: above 1 is
faster for a rate (records/s, steps/s), slower for ms.
The workloads are those of the criterion benches (benches/). Exit codes: 0 measured; 1 a
failure while measuring; 2 DIR does not exist or cannot be written; 130 interrupted (Ctrl-C,
SIGTERM or SIGHUP), the bench files removed.")]
pub(crate) struct BenchArgs {
    /// Directory on the disk to measure; the files go to a fresh subdirectory of it, removed
    /// afterwards [default: the system temp directory].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// A short pass (under 30 s: each phase is bounded in time, taking fewer samples on a
    /// slow disk) instead of the full one, which runs a few times longer for steadier figures.
    #[arg(long)]
    quick: bool,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn bench(loc: &super::Location, args: BenchArgs) -> anyhow::Result<u8> {
    // Every subcommand takes --project and --store (scripts pass them to all); the bench
    // measures a disk with files of its own, so it says that they are not what it measures,
    // and measures.
    if loc.store.is_some() || loc.project.is_some() {
        errln!(
            "note: bench measures the disk of --dir with files of its own: --store and --project \
             are not used by it (a PostgreSQL store is not measured)"
        );
    }
    // Installed before the bench directory is made: a Ctrl-C, SIGTERM or SIGHUP (a closed
    // terminal) from then on removes the bench files, as for the other commands.
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigint = signal(SignalKind::interrupt()).context("cannot handle Ctrl-C")?;
    let mut sigterm = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut sighup = signal(SignalKind::hangup()).context("cannot handle SIGHUP")?;
    let named = if args.dir.is_some() {
        "--dir"
    } else {
        "the system temp directory (TMPDIR)"
    };
    let base = args.dir.unwrap_or_else(std::env::temp_dir);
    let base = checked_dir(&base, named)?;
    let work = magrathea_workloads::fresh_dir(&base).map_err(|e| {
        Invalid(format!(
            "{named} {}: cannot create a directory in it: {e}",
            base.display()
        ))
    })?;
    let machine = machine(&base);
    let started_at = jiff::Timestamp::now().round(jiff::Unit::Second).ok();
    let plan = if args.quick {
        Plan::quick()
    } else {
        Plan::full()
    };
    errln!(
        "bench: measuring in {} ({}), durability Immediate",
        work.path().display(),
        machine["filesystem"]
            .as_str()
            .unwrap_or("filesystem unknown")
    );
    if matches!(machine["filesystem"].as_str(), Some("tmpfs" | "ramfs")) {
        errln!(
            "note: {} is in memory ({}): its fdatasync writes nothing to a disk, so the figures \
             and their ratios say nothing of one; pass --dir on the disk to measure",
            base.display(),
            machine["filesystem"].as_str().unwrap_or_default()
        );
    }
    let path = work.path().to_path_buf();
    let measuring = tokio::task::spawn_blocking(move || {
        suite::run(&path, &plan, &mut |stage| errln!("bench: {stage}"))
    });
    let figures = tokio::select! {
        joined = measuring => joined.context("the bench thread")?,
        _ = sigint.recv() => interrupted(work.path()),
        _ = sigterm.recv() => interrupted(work.path()),
        _ = sighup.recv() => interrupted(work.path()),
    };
    let removed = work.close();
    let figures = figures?;
    removed.with_context(|| format!("removing the bench files under {}", base.display()))?;
    if args.json {
        outln!(
            "{}",
            json!({
                "version": JSON_VERSION,
                "magrathea_version": env!("CARGO_PKG_VERSION"),
                "started_at": started_at.map(|t| t.to_string()),
                "dir": base.display().to_string(),
                "quick": args.quick,
                "durability": "immediate",
                "machine": machine,
                "figures": figures.iter().map(figure_json).collect::<Vec<_>>(),
            })
        )?;
    } else {
        print_table(&base, args.quick, &machine, &figures)?;
    }
    Ok(EXIT_OK)
}

/// Ctrl-C or SIGTERM while measuring: removes the bench files and exits at once with code
/// 130 (the measuring thread cannot be stopped midway; the process ending stops it).
fn interrupted(files: &Path) -> ! {
    errln!("bench: interrupted; removing {}", files.display());
    // The measuring thread may create a file meanwhile: try a few times.
    for _ in 0..20 {
        if std::fs::remove_dir_all(files).is_ok() || !files.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::process::exit(EXIT_INTERRUPTED.into())
}

/// `dir`, absolute, if it is a directory; a usage error otherwise, naming it as `named`
/// (`--dir`, or the system temp directory the bench fell back to).
fn checked_dir(dir: &Path, named: &str) -> anyhow::Result<PathBuf> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())),
        Ok(_) => Err(Invalid(format!("{named} {}: not a directory", dir.display())).into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Invalid(format!("{named} {}: no such directory", dir.display())).into())
        }
        Err(e) => Err(Invalid(format!("{named} {}: {e}", dir.display())).into()),
    }
}

/// What is known cheaply of the machine and of the filesystem holding `dir`.
fn machine(dir: &Path) -> Value {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let cpu_model = read("/proc/cpuinfo").and_then(|info| {
        info.lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|rest| rest.split_once(':'))
            .map(|(_, model)| model.trim().to_string())
    });
    json!({
        "cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "cpu_model": cpu_model,
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "kernel": read("/proc/sys/kernel/osrelease"),
        "filesystem": read("/proc/mounts").and_then(|mounts| filesystem_of(dir, &mounts)),
    })
}

/// The type of the filesystem mounted deepest above `dir`, from the text of `/proc/mounts`.
fn filesystem_of(dir: &Path, mounts: &str) -> Option<String> {
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let (_, point, fs) = (fields.next()?, fields.next()?, fields.next()?);
            // Spaces, tabs and backslashes in mount points are octal escapes.
            let point = point
                .replace("\\040", " ")
                .replace("\\011", "\t")
                .replace("\\134", "\\");
            dir.starts_with(&point)
                .then(|| (Path::new(&point).components().count(), fs.to_string()))
        })
        .max_by_key(|(depth, _)| *depth)
        .map(|(_, fs)| fs)
}

/// A figure as the `--json` output has it.
fn figure_json(f: &Figure) -> Value {
    let main = f.comparisons.first();
    json!({
        "name": f.name,
        "description": f.label,
        "value": f.value,
        "unit": f.unit,
        "baseline": main.map(|c| c.baseline.clone()),
        "ratio": main.map(|c| c.ratio),
        "comparisons": f.comparisons.iter()
            .map(|c| json!({"baseline": c.baseline, "ratio": c.ratio}))
            .collect::<Vec<_>>(),
    })
}

/// A number with as many decimals as it deserves: three significant digits below 100, so
/// that a ratio can be checked from the printed figures (0.0912 ms, not 0.09).
fn number(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 || v == 0.0 {
        format!("{v:.2}")
    } else {
        // Below 1: as many decimals as three significant digits take.
        let decimals = (2 - v.abs().log10().floor() as i32).clamp(2, 9) as usize;
        format!("{v:.decimals$}")
    }
}

fn print_table(
    base: &Path,
    quick: bool,
    machine: &Value,
    figures: &[Figure],
) -> anyhow::Result<()> {
    let text = |key: &str| machine[key].as_str().unwrap_or("unknown").to_string();
    outln!(
        "magrathea bench{}: {} ({}), {} CPUs ({}), {} {} ({})",
        if quick { " --quick" } else { "" },
        base.display(),
        text("filesystem"),
        machine["cpus"],
        text("cpu_model"),
        text("os"),
        text("kernel"),
        text("arch"),
    )?;
    outln!(
        "magrathea {}; durability: Immediate (every commit fsynced)",
        env!("CARGO_PKG_VERSION")
    )?;
    outln!()?;
    outln!(
        "{:<36} {:>10} {:<15} {}",
        "figure",
        "value",
        "unit",
        "ratio to baseline"
    )?;
    for f in figures {
        let ratios = f
            .comparisons
            .iter()
            .map(|c| format!("{}× {}", number(c.ratio), c.baseline))
            .collect::<Vec<_>>()
            .join(", ");
        outln!(
            "{:<36} {:>10} {:<15} {}",
            f.name,
            number(f.value),
            f.unit,
            if ratios.is_empty() { "–" } else { &ratios }
        )?;
    }
    outln!()?;
    outln!(
        "ratio = value / baseline, both measured in this run: above 1 is faster for a rate \
         (records/s, steps/s), slower for ms. Names: docs/bench.md."
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_below_one_keeps_three_significant_digits() {
        assert_eq!(number(0.0912), "0.0912");
        assert_eq!(number(0.5), "0.500");
        assert_eq!(number(0.000_123_4), "0.000123");
        assert_eq!(number(1.234), "1.23");
        assert_eq!(number(12.34), "12.3");
        assert_eq!(number(1234.5), "1234");
        assert_eq!(number(0.0), "0.00");
    }
}
