//! The journal export format: what `magrathea journal RUN --export FILE` writes and replay
//! tests read (`magrathea::testing`).
//!
//! One JSON object per line, each an [`Entry`] as `magrathea journal --json` prints it
//! (`seq`, `createdAt`, `type` and the record's fields). The first line, the `StartRecord`,
//! also carries `runId`, the run's id (32 hex digits): a replay of the file runs the code
//! under that id, so that code which uses [`WorkflowContext::run_id`](crate::WorkflowContext::run_id)
//! (in a task's input, say) asks for what it asked for when the journal was written. Files
//! written without it replay under a fresh id. Blank lines are skipped.

use serde_json::Value;

use crate::id::RunId;
use crate::record::Entry;

/// The field of the first line that holds the run's id.
pub const RUN_ID_FIELD: &str = "runId";

/// A journal read from an export.
#[derive(Debug, Clone)]
pub struct JournalExport {
    /// The run's id, when the file holds it.
    pub run_id: Option<RunId>,
    /// The entries, in journal order.
    pub entries: Vec<Entry>,
}

/// Why a line of an export is not an entry.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {source}")]
pub struct ExportLineError {
    /// The line, from 1.
    pub line: usize,
    /// Why.
    #[source]
    pub source: serde_json::Error,
}

/// Writes `entries` of run `run_id` in the export format.
pub fn write_export(run_id: RunId, entries: &[Entry]) -> Result<String, serde_json::Error> {
    let mut text = String::new();
    for (i, entry) in entries.iter().enumerate() {
        // Written as the entry serializes (its fields in their order), the first with the
        // run's id in front: an entry is an object with at least `seq`, so `{` opens it and
        // a field follows.
        let line = serde_json::to_string(entry)?;
        match line.strip_prefix('{') {
            Some(fields) if i == 0 => {
                let id = serde_json::to_string(&run_id.to_string())?;
                text.push_str(&format!("{{\"{RUN_ID_FIELD}\":{id},{fields}"));
            }
            _ => text.push_str(&line),
        }
        text.push('\n');
    }
    Ok(text)
}

/// Reads an export: its entries, and the run's id when the first line holds it.
pub fn read_export(text: &str) -> Result<JournalExport, ExportLineError> {
    let mut run_id = None;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let error = |source| ExportLineError {
            line: i + 1,
            source,
        };
        let mut value: Value = serde_json::from_str(line).map_err(error)?;
        if let Value::Object(fields) = &mut value
            && let Some(id) = fields.remove(RUN_ID_FIELD)
            && entries.is_empty()
        {
            run_id = Some(serde_json::from_value(id).map_err(error)?);
        }
        entries.push(serde_json::from_value(value).map_err(error)?);
    }
    Ok(JournalExport { run_id, entries })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::JournalBuilder;

    #[test]
    fn an_export_reads_back_with_its_run_id() {
        let entries = JournalBuilder::start("w", json!({"n": 1}))
            .task("charge", json!(1))
            .task_ok(0, 1, json!("paid"))
            .build();
        let run = RunId::new();
        let text = write_export(run, &entries).expect("writes");
        assert_eq!(text.lines().count(), entries.len());
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with(&format!("{{\"runId\":\"{run}\",\"seq\":0,")),
            "the run's id, then the entry's fields in their order: {first}"
        );
        assert!(!text.lines().nth(1).unwrap().contains(RUN_ID_FIELD));
        let read = read_export(&text).expect("reads");
        assert_eq!(read.run_id, Some(run));
        assert_eq!(read.entries, entries);
    }

    #[test]
    fn an_export_without_a_run_id_reads_too() {
        let entries = JournalBuilder::start("w", json!({})).build();
        let text = format!("{}\n\n", serde_json::to_string(&entries[0]).unwrap());
        let read = read_export(&text).expect("reads");
        assert_eq!(read.run_id, None);
        assert_eq!(read.entries, entries);
    }

    #[test]
    fn a_bad_line_is_named() {
        let entries = JournalBuilder::start("w", json!({})).build();
        let good = serde_json::to_string(&entries[0]).unwrap();
        let err = read_export(&format!("{good}\n{{\"seq\": 1}}\n")).expect_err("not an entry");
        assert_eq!(err.line, 2);
        let first = good.replacen('{', "{\"runId\":\"not hex\",", 1);
        let err = read_export(&first).expect_err("not a run id");
        assert_eq!(err.line, 1);
    }
}
