//! How runs are printed: one JSON object (the `RunView` serialisation) or a short summary,
//! and the exit code a run's status maps to.

use magrathea_core::{InboxItem, RunStatus, RunView};
use serde_json::Value;

use super::{EXIT_FAILED, EXIT_OK, EXIT_WAITING};

/// The exit code of a command that drove a run to `status`.
pub(crate) fn exit_code(status: RunStatus) -> u8 {
    match status {
        RunStatus::Done => EXIT_OK,
        RunStatus::Waiting => EXIT_WAITING,
        // A run still RUNNING (it sleeps on a timer) counts as not done.
        _ => EXIT_FAILED,
    }
}

/// The run as one line of JSON. `RunView` serialises every field, `null` when absent, so
/// `result` and `reason` are always present.
pub(crate) fn run_json(view: &RunView) -> String {
    serde_json::to_string(view).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// Prints the run to stdout: JSON, or a summary with what to do next for waiting runs.
pub(crate) fn print_run(view: &RunView, json: bool, pending: &[InboxItem]) {
    if json {
        println!("{}", run_json(view));
        return;
    }
    println!(
        "run {} ({}) {}",
        view.workflow_run_id, view.workflow_name, view.status
    );
    if let Some(state) = &view.current_state {
        println!("  state:  {state}");
    }
    if let Some(reason) = &view.reason {
        println!("  reason: {reason}");
    }
    if let Some(result) = view.result.as_ref().filter(|r| !r.is_null()) {
        println!("  result: {}", compact(result));
    }
    if let (Some(end), start) = (view.finished_at, view.created_at) {
        println!("  took:   {}", duration(end.saturating_sub(start)));
    }
    for item in pending
        .iter()
        .filter(|i| i.workflow_run_id == view.workflow_run_id)
    {
        println!("  waits on {} gate: {}", item.kind.as_str(), item.title);
        println!(
            "    answer: magrathea inbox answer {} {}",
            item.id,
            answer_hint(item)
        );
    }
}

/// The flags that answer an item of this kind.
pub(crate) fn answer_hint(item: &InboxItem) -> String {
    match item.kind {
        magrathea_core::GateKind::Approval => "--approve | --reject".into(),
        magrathea_core::GateKind::Decision => item
            .options
            .iter()
            .map(|o| format!("--choose {o}"))
            .collect::<Vec<_>>()
            .join(" | "),
        magrathea_core::GateKind::Feedback => "--text TEXT".into(),
    }
}

/// A JSON value on one line, shortened for summaries.
pub(crate) fn compact(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

/// `250 ms`, `1.2 s`, `3 min 4 s`.
pub(crate) fn duration(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// A wall-clock time (ms since the epoch) as `YYYY-MM-DD HH:MM:SS` UTC.
pub(crate) fn timestamp(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_durations_read_well() {
        assert_eq!(timestamp(0), "1970-01-01 00:00:00");
        assert_eq!(timestamp(1_709_251_199_000), "2024-02-29 23:59:59");
        assert_eq!(duration(250), "250 ms");
        assert_eq!(duration(1_234), "1.2 s");
        assert_eq!(duration(184_000), "3 min 4 s");
    }
}
