//! The bounds the engine keeps on every run: the bytes of its journal, the size of each task
//! attempt's output, and (on a store several workers share) how often it may be reclaimed.
//!
//! Both are checked off the journal's hot path: a task's output is measured in the attempt's
//! own future, before its result reaches the driver, and the journal's bytes are a counter the
//! outbox adds each record's length to, compared once per flush.

use serde_json::Value;

use super::Driver;
use crate::record::{Record, RunStatus};
use crate::task::TaskError;
use crate::vocabulary::RunScope;

/// Bytes of a task output's limit per object or array it may hold: a small object costs the
/// engine far more memory than its JSON text (hundreds of bytes as a value, held by the
/// journal's record, the run's state and its variables), so an output of the most objects its
/// byte limit allows would cost hundreds of megabytes.
pub(crate) const OUTPUT_BYTES_PER_CONTAINER: usize = 64;

/// `result`, or a `technical_error` that is not retried when its output takes more than `max`
/// bytes of JSON, or holds more than `max / 64` objects and arrays: the output is dropped,
/// never journaled.
pub(super) fn check_output(
    result: Result<Value, TaskError>,
    max: usize,
) -> Result<Value, TaskError> {
    match result {
        Ok(value) => {
            let size = crate::json_len::json_len(&value);
            if size > max {
                return Err(TaskError::terminal(format!(
                    "[MAG-BD002] the task's output is {size} bytes of JSON, more than the \
                     {max} bytes a task output may hold (EngineBuilder::max_task_output_bytes); \
                     return less, or keep large data outside the journal and return a reference"
                )));
            }
            let most = max / OUTPUT_BYTES_PER_CONTAINER;
            let containers = containers(&value, most);
            if containers > most {
                return Err(TaskError::terminal(format!(
                    "[MAG-BD002] the task's output holds more than {most} objects and arrays, \
                     the most a task output may hold (one per {OUTPUT_BYTES_PER_CONTAINER} bytes \
                     of EngineBuilder::max_task_output_bytes); return fewer, larger values \
                     (e.g. rows as arrays of a table, or text), or a reference"
                )));
            }
            Ok(value)
        }
        Err(e) => Err(e),
    }
}

/// The objects and arrays in `value`, counted up to just past `most`.
fn containers(value: &Value, most: usize) -> usize {
    if !matches!(value, Value::Array(_) | Value::Object(_)) {
        return 0;
    }
    let mut count = 0;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => {
                count += 1;
                stack.extend(items.iter());
            }
            Value::Object(map) => {
                count += 1;
                stack.extend(map.values());
            }
            _ => {}
        }
        if count > most {
            break;
        }
    }
    count
}

impl Driver {
    /// The journal limit of a run of `scope`: the engine's, or the lower one of its scope.
    pub(super) fn journal_limit(&self, scope: &RunScope) -> u64 {
        let config = &self.engine.config;
        let by_scope = config
            .journal_bytes_limit
            .as_ref()
            .and_then(|limit| limit(scope));
        by_scope.map_or(config.max_journal_bytes_per_run, |l| {
            l.min(config.max_journal_bytes_per_run)
        })
    }

    /// Ends the run `FAILED` once its journal holds more bytes than its limit, in the commit
    /// that crossed it: running tasks stop, children are cancelled, the code is not polled
    /// again. A run already ended or blocked is left as it is.
    pub(super) fn check_journal_bound(&mut self) {
        if self.outbox.journal_bytes <= self.journal_cap
            || self.checking
            || self.blocked.is_some()
            || self.state.is_terminal()
        {
            return;
        }
        let reason = format!(
            "[MAG-BD001] bounds exhausted: the run's journal holds {} bytes, more than its limit \
             of {} bytes (EngineBuilder::max_journal_bytes_per_run, or the tenant's \
             bounds.maxJournalBytes)",
            self.outbox.journal_bytes, self.journal_cap
        );
        self.fail_run(reason);
    }

    /// On a store of this process's own (no leases): the reason a task attempt that is about
    /// to run for the `execution`-th time, the process running it having stopped each time
    /// before its result, ends with `technical_error` instead, once that is more executions
    /// than [`EngineBuilder::max_claim_attempts`](crate::EngineBuilder::max_claim_attempts)
    /// allows (reference §12: "after maxClaimAttempts (default 3), the Task fails terminally";
    /// the first execution counts, as the first attempt counts in `maxAttempts`). A shared
    /// store counts claims of the run instead ([`Driver::claims_exhausted_after`]).
    ///
    /// `interrupted` executions were stopped cleanly (`TaskInterruptedRecord`): they do not
    /// count, and the message says so.
    pub(super) fn executions_exhausted(&self, execution: u32, interrupted: u32) -> Option<String> {
        if self.engine.store.leases().is_some() {
            return None;
        }
        let max = self.engine.config.max_claim_attempts;
        let counted = execution.saturating_sub(interrupted);
        (counted > max).then(|| {
            let besides = if interrupted > 0 {
                format!(" (and {interrupted} more times, stopped cleanly, which do not count)")
            } else {
                String::new()
            };
            format!(
                "[MAG-EN007] the task was started {} times{besides} and each time the \
                 process running it stopped before its result: maxClaimAttempts ({max}) \
                 executions are used up; it is not run again. Find out why the process stops while \
                 it runs (memory, time, a crash), handle the step's technical_error (a YAML \
                 catch:, or the step's error in code), or raise the limit (EngineBuilder::max_claim_attempts, serve --max-claim-attempts)",
                counted - 1
            )
        })
    }

    /// With a store several workers share: once a run was claimed (its first claim and its
    /// reclaims after lost leases) more often than the store allows (`maxClaimAttempts`, the
    /// first claim counting), the reason its running task attempts
    /// end with `technical_error` instead of running again (reference §12: the task fails
    /// terminally, and `catch:` routes it). A task whose worker dies each time it runs it must
    /// not go round the fleet for ever.
    pub(super) fn claims_exhausted_after(&self, reclaims: u32) -> Option<String> {
        let max = self.engine.store.leases()?.max_claim_attempts();
        let claims = reclaims.saturating_add(1);
        (reclaims > 0 && claims > max).then(|| {
            format!(
                "[MAG-LS001] the run was reclaimed {reclaims} times after its \
                 worker stopped heartbeating, {claims} claims, more than maxClaimAttempts \
                 ({max}); the task that was running is not run again"
            )
        })
    }

    /// Ends the run `FAILED` with `reason`, in the next commit: running tasks stop, children
    /// are cancelled, the code is not polled again.
    fn fail_run(&mut self, reason: String) {
        tracing::warn!(run = %self.run_id, %reason, "run failed");
        self.future = None;
        self.attempts.abort_all();
        if let Some(cursor) = self.replay.as_mut() {
            cursor.deferred.clear();
        }
        let why = format!("parent run {} ended FAILED: {reason}", self.run_id);
        let cancels = self.state.cancel_children(|_| why.clone());
        self.perform(cancels);
        self.append_apply(Record::Status {
            status: RunStatus::Failed,
            reason: Some(reason),
        });
        self.outbox.set_status(RunStatus::Failed);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_output_is_measured_as_its_compact_json() {
        for v in [
            json!(null),
            json!("é\"x"),
            json!({"a": [1, 2.5, true], "b": {}}),
        ] {
            assert_eq!(
                crate::json_len::json_len(&v),
                serde_json::to_string(&v).unwrap().len(),
                "{v}"
            );
        }
    }

    #[test]
    fn an_output_over_the_limit_is_a_technical_error_that_is_not_retried() {
        let big = json!("x".repeat(100));
        assert_eq!(check_output(Ok(big.clone()), 102), Ok(big.clone()));
        let e = check_output(Ok(big), 101).unwrap_err();
        assert_eq!(e.kind, TaskError::TECHNICAL);
        assert!(!e.retryable);
        assert!(e.message.contains("[MAG-BD002]"), "{}", e.message);
        assert!(
            e.message.contains("102 bytes") && e.message.contains("101 bytes"),
            "{}",
            e.message
        );
        // Many small objects within the bytes: one per 64 bytes of the limit at most.
        let rows = json!((0..100).map(|i| json!({ "k": i })).collect::<Vec<_>>());
        let bytes = crate::json_len::json_len(&rows);
        assert!(bytes < 64 * 100, "{bytes}");
        assert_eq!(check_output(Ok(rows.clone()), 64 * 101), Ok(rows.clone()));
        let e = check_output(Ok(rows), 64 * 100).unwrap_err();
        assert!(!e.retryable);
        assert!(
            e.message.contains("[MAG-BD002]") && e.message.contains("more than 100 objects"),
            "{}",
            e.message
        );
        let failed = Err(TaskError::retryable("boom"));
        assert_eq!(
            check_output(failed.clone(), 0),
            failed,
            "errors pass through"
        );
    }
}
