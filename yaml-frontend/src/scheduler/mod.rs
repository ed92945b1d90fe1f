//! Scheduler documents, `_vance/scheduler/<name>.yaml` (reference §8.4), and the arithmetic of
//! their ticks.
//!
//! [`load_schedule`] reads a document with the span-preserving reader and validates it into a
//! [`Schedule`], or reports every problem as [`Diagnostics`](crate::Diagnostics)
//! (`path:line:column: [MAG-SCnnn] …`). A [`Schedule`] answers, on UTC milliseconds so that any clock can drive it, when it
//! fires next ([`Schedule::next_tick`]), which ticks fall in a span
//! ([`Schedule::ticks_between`]), which missed ticks to fire after a pause
//! ([`Schedule::catch_up`]) and how far to delay a tick ([`Schedule::jitter_ms`]). Keeping
//! registrations, cursors and runs is the trigger service's business, not this module's.
//!
//! ```yaml
//! description: "Start Daily Audit Workflow at 06:00"
//! cron: "0 0 6 * * *"        # 5 fields (minute first) or 6 (seconds first); or `at:`
//! workflow: daily-audit
//! params: {scope: production}
//! runAs: ops                 # the run's startedBy; default `schedule:<name>`
//! timezone: Europe/Berlin    # IANA; default UTC; for `cron:` only
//! enabled: true
//! overlap: skip              # skip | buffer_one | allow_all | cancel_other
//! catchupWindow: 60s
//! jitter: 0s
//! ```
//!
//! # Time zones
//!
//! A `cron:` pattern is matched against the local wall-clock time of its `timezone:`, and each
//! matching wall-clock time fires exactly once:
//!
//! - a time that exists once fires at that instant;
//! - a time that falls into a gap (clocks spring forward) fires once, at the instant of the
//!   shift, the first instant after the gap: `0 30 2 * * *` in `Europe/Berlin` on 2026-03-29
//!   fires at 03:00 CEST (01:00Z). Several matching times in one gap — and a match at the first
//!   wall-clock time after it — fire once together at that instant;
//! - a time that occurs twice (clocks fall back) fires at its first occurrence only: an
//!   every-15-minutes pattern fires four times in the repeated hour, not eight.
//!
//! Patterns with seconds follow the same rule. The zone database is compiled in, so every
//! machine computes the same instants whatever its own zone files say. `at:` is an instant
//! with its own offset and ignores zones.

mod cron;
mod doc;
mod ticks;

use std::time::Duration;

use serde_json::{Map, Value};

#[cfg(test)]
pub(crate) use doc::FIELDS;
pub use doc::load_schedule;
pub use ticks::{CatchUp, PASS_SLACK_MS};

use self::cron::CronTicks;

/// The default of `catchupWindow:`: missed ticks up to a minute old still fire.
pub const DEFAULT_CATCHUP_WINDOW: Duration = Duration::from_secs(60);

/// What a tick does while the schedule's previous run is still going (`overlap:`), e.g. parked
/// at an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Overlap {
    /// `skip` (the default): the tick starts nothing and is recorded as skipped.
    #[default]
    Skip,
    /// `buffer_one`: the tick starts once the previous run ends; while one tick waits, later
    /// ones are skipped.
    BufferOne,
    /// `allow_all`: every tick starts a run, however many are still going.
    AllowAll,
    /// `cancel_other`: the tick cancels the previous run, then starts its own.
    CancelOther,
}

impl Overlap {
    /// Each policy with its word in the document.
    pub const ALL: [(&'static str, Overlap); 4] = [
        ("skip", Overlap::Skip),
        ("buffer_one", Overlap::BufferOne),
        ("allow_all", Overlap::AllowAll),
        ("cancel_other", Overlap::CancelOther),
    ];

    /// The word of the document, e.g. `buffer_one`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Skip => "skip",
            Overlap::BufferOne => "buffer_one",
            Overlap::AllowAll => "allow_all",
            Overlap::CancelOther => "cancel_other",
        }
    }
}

impl std::fmt::Display for Overlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a schedule fires: a repeating pattern or a single instant.
#[derive(Debug, Clone)]
enum When {
    // Boxed: a parsed pattern is large, an instant is a number.
    Cron(Box<CronTicks>),
    At(i64),
}

/// A validated scheduler document: what to start, when, and how ticks behave.
#[derive(Debug, Clone)]
pub struct Schedule {
    name: String,
    description: Option<String>,
    when: When,
    workflow: String,
    params: Map<String, Value>,
    run_as: String,
    enabled: bool,
    overlap: Overlap,
    catchup_window: Duration,
    jitter: Duration,
}

impl Schedule {
    /// The schedule's name: its file name without `.yaml`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `description:`, an audit marker.
    #[must_use]
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// `cron:` as written, or `None` for a one-shot `at:`.
    #[must_use]
    pub fn cron(&self) -> Option<&str> {
        match &self.when {
            When::Cron(c) => Some(c.expression()),
            When::At(_) => None,
        }
    }

    /// `at:` in UTC milliseconds, or `None` for a `cron:` schedule.
    #[must_use]
    pub fn at_ms(&self) -> Option<i64> {
        match self.when {
            When::At(at) => Some(at),
            When::Cron(_) => None,
        }
    }

    /// The IANA zone the `cron:` is read in (`UTC` by default, and for `at:`).
    #[must_use]
    pub fn timezone(&self) -> &str {
        match &self.when {
            When::Cron(c) => c.zone_name(),
            When::At(_) => "UTC",
        }
    }

    /// `workflow:`, the workflow each tick starts.
    #[must_use]
    pub fn workflow(&self) -> &str {
        &self.workflow
    }

    /// `params:`, the parameters of each run.
    #[must_use]
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// The run's `startedBy`: `runAs:`, or `schedule:<name>` when absent.
    #[must_use]
    pub fn run_as(&self) -> &str {
        &self.run_as
    }

    /// `enabled:` (default true); a disabled schedule is registered but never fires.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// `overlap:` (default [`Overlap::Skip`]).
    #[must_use]
    pub fn overlap(&self) -> Overlap {
        self.overlap
    }

    /// `catchupWindow:` (default [`DEFAULT_CATCHUP_WINDOW`]): how old a missed tick may be and
    /// still fire, beyond its jitter and a second of the scheduler's own delay (see
    /// [`Schedule::catch_up`]); older ones are skipped.
    #[must_use]
    pub fn catchup_window(&self) -> Duration {
        self.catchup_window
    }

    /// `jitter:` (default zero): each tick is delayed by [`Schedule::jitter_ms`] below this.
    #[must_use]
    pub fn jitter(&self) -> Duration {
        self.jitter
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
