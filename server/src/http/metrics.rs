//! Prometheus metrics: HTTP requests, runs started and finished, and the journal writer's
//! counters. `GET /metrics` renders them in the text exposition format.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `magrathea_http_requests_total` | counter | `method` (a standard method, else `other`), `route` (the matched route pattern, else `unmatched`), `status` |
//! | `magrathea_http_request_duration_seconds` | histogram | `route` |
//! | `magrathea_runs_started_total` | counter | `trigger`: what started the run (`rest`, `ws`, `event`, `webhook`, `schedule`, `hook`, `rerun`, `retry`; `cli`: a `magrathea` command through the store's control socket; `sub_run`: a parent's `workflow_task` or child workflow) |
//! | `magrathea_runs_finished_total` | counter | `status` (`DONE`, `FAILED`, `CANCELLED`) |
//! | `magrathea_journal_commits_total` | counter | |
//! | `magrathea_journal_batches_total` | counter | |
//! | `magrathea_journal_records_total` | counter | |
//! | `magrathea_journal_commit_seconds_total` | counter | (divide by commits for the mean latency) |
//! | `magrathea_journal_commit_records` | histogram | records per commit (the group-commit batch size) |
//! | `magrathea_journal_commit_duration_seconds` | histogram | one commit, fsync included |
//! | `magrathea_step_duration_seconds` | histogram | `task` — a task attempt, from its `TaskStartedRecord` (or, when it waited for its lane, its `TaskAdmittedRecord`; when it runs again after a restart, its `TaskRestartedRecord`) to its `TaskResultRecord` |
//!
//! The run counters are exposed from the start, at 0 for each trigger and terminal status, and
//! the step histogram for each YAML task type, so that a scrape right after a start (or an
//! alert on an absent series) sees them.
//!
//! No label takes a value a request controls: a path that matches no route counts as
//! `unmatched`, whatever it is, and a method outside the standard ones as `other`, so a
//! client cannot grow the number of series (and the scrape) without bound.

use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use magrathea_core::{Engine, RunStatus};
use prometheus::{
    Counter, Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts, Registry,
    TextEncoder,
};
use tokio::sync::broadcast::error::RecvError;

use super::state::AppState;

/// Every `trigger` label of `magrathea_runs_started_total`.
const TRIGGERS: [&str; 10] = [
    "rest", "ws", "event", "webhook", "schedule", "hook", "rerun", "retry", "cli", "sub_run",
];

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    runs_started: IntCounterVec,
    runs_finished: IntCounterVec,
    journal_commits: IntCounter,
    journal_batches: IntCounter,
    journal_records: IntCounter,
    journal_commit_seconds: Counter,
    commit_records: prometheus::Histogram,
    commit_duration: prometheus::Histogram,
    step_duration: HistogramVec,
    // The writer's counters are cumulative; scrapes add the difference to the last scrape's.
    scrape: Mutex<()>,
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let http_requests = IntCounterVec::new(
            Opts::new("magrathea_http_requests_total", "HTTP requests answered"),
            &["method", "route", "status"],
        )?;
        let http_duration = HistogramVec::new(
            HistogramOpts::new(
                "magrathea_http_request_duration_seconds",
                "Time to answer an HTTP request (streams: until the headers)",
            ),
            &["route"],
        )?;
        let runs_started = IntCounterVec::new(
            Opts::new(
                "magrathea_runs_started_total",
                "Runs started by this server",
            ),
            &["trigger"],
        )?;
        let runs_finished = IntCounterVec::new(
            Opts::new(
                "magrathea_runs_finished_total",
                "Runs that reached a terminal status while this server ran",
            ),
            &["status"],
        )?;
        let journal_commits = IntCounter::new(
            "magrathea_journal_commits_total",
            "Journal commits (fsyncs)",
        )?;
        let journal_batches = IntCounter::new(
            "magrathea_journal_batches_total",
            "Appends committed (many per commit under load)",
        )?;
        let journal_records = IntCounter::new(
            "magrathea_journal_records_total",
            "Journal records committed",
        )?;
        let journal_commit_seconds = Counter::new(
            "magrathea_journal_commit_seconds_total",
            "Total time spent in journal commits",
        )?;
        let commit_records = prometheus::Histogram::with_opts(
            HistogramOpts::new(
                "magrathea_journal_commit_records",
                "Records per journal commit (the group-commit batch size)",
            )
            .buckets(prometheus::exponential_buckets(1.0, 4.0, 8)?),
        )?;
        let commit_duration = prometheus::Histogram::with_opts(
            HistogramOpts::new(
                "magrathea_journal_commit_duration_seconds",
                "Duration of one journal commit, fsync included",
            )
            .buckets(prometheus::exponential_buckets(0.000_05, 2.0, 14)?),
        )?;
        let step_duration = HistogramVec::new(
            HistogramOpts::new(
                "magrathea_step_duration_seconds",
                "A task attempt, from its TaskStartedRecord (or TaskAdmittedRecord after a wait for its lane, or TaskRestartedRecord when it runs again) to its TaskResultRecord",
            ),
            &["task"],
        )?;
        registry.register(Box::new(commit_records.clone()))?;
        registry.register(Box::new(commit_duration.clone()))?;
        registry.register(Box::new(step_duration.clone()))?;
        registry.register(Box::new(http_requests.clone()))?;
        registry.register(Box::new(http_duration.clone()))?;
        registry.register(Box::new(runs_started.clone()))?;
        registry.register(Box::new(runs_finished.clone()))?;
        registry.register(Box::new(journal_commits.clone()))?;
        registry.register(Box::new(journal_batches.clone()))?;
        registry.register(Box::new(journal_records.clone()))?;
        registry.register(Box::new(journal_commit_seconds.clone()))?;
        for trigger in TRIGGERS {
            runs_started.with_label_values(&[trigger]);
        }
        for status in [RunStatus::Done, RunStatus::Failed, RunStatus::Cancelled] {
            runs_finished.with_label_values(&[status_label(status)]);
        }
        for (task, _) in magrathea_yaml::TaskType::ALL {
            step_duration.with_label_values(&[task]);
        }
        Ok(Self {
            registry,
            http_requests,
            http_duration,
            runs_started,
            runs_finished,
            journal_commits,
            journal_batches,
            journal_records,
            journal_commit_seconds,
            commit_records,
            commit_duration,
            step_duration,
            scrape: Mutex::new(()),
        })
    }

    /// Counts a run started through `trigger`.
    pub fn run_started(&self, trigger: &str) {
        self.runs_started.with_label_values(&[trigger]).inc();
    }

    /// Observes every journal commit (batch size and duration), every task attempt's
    /// duration and every sub-run's start, read from the committed journal stream.
    pub fn watch_journal(self: &std::sync::Arc<Self>, engine: &Engine) {
        let metrics = self.clone();
        engine
            .writer_stats()
            .observe_commits(Box::new(move |records, micros| {
                metrics.commit_records.observe(records as f64);
                metrics.commit_duration.observe(micros as f64 / 1e6);
            }));
        let mut updates = engine.subscribe_journal();
        let metrics = self.clone();
        // Weak: the watcher ends with the engine's journal stream, which a handle here would
        // keep open.
        let weak = engine.downgrade();
        tokio::spawn(async move {
            let mut open: std::collections::HashMap<
                (magrathea_core::RunId, u32, u32),
                (u64, String),
            > = std::collections::HashMap::new();
            loop {
                match updates.recv().await {
                    Ok(update) => {
                        for e in update.entries.iter() {
                            match &e.record {
                                // A sub-run is started by its parent's step, not by a route.
                                magrathea_core::Record::Start(start) if start.parent.is_some() => {
                                    metrics.run_started("sub_run");
                                }
                                magrathea_core::Record::TaskStarted {
                                    step,
                                    attempt,
                                    task,
                                    ..
                                } => {
                                    open.insert(
                                        (update.run_id, *step, *attempt),
                                        (e.at_ms, task.clone()),
                                    );
                                }
                                // An attempt that runs again (after a restart of the process
                                // that ran it) is observed from its new execution; its task is
                                // read from its `TaskStartedRecord` when this process did not
                                // see that.
                                magrathea_core::Record::TaskRestarted { step, attempt, .. } => {
                                    let key = (update.run_id, *step, *attempt);
                                    if let Some((began, _)) = open.get_mut(&key) {
                                        *began = e.at_ms;
                                    } else if let Some(task) =
                                        started_task(&weak, update.run_id, *step, *attempt).await
                                    {
                                        open.insert(key, (e.at_ms, task));
                                    }
                                }
                                // An attempt that waited for its lane began when admitted.
                                magrathea_core::Record::TaskAdmitted { step, attempt } => {
                                    if let Some((began, _)) =
                                        open.get_mut(&(update.run_id, *step, *attempt))
                                    {
                                        *began = e.at_ms;
                                    }
                                }
                                magrathea_core::Record::TaskResult { step, attempt, .. } => {
                                    if let Some((started, task)) =
                                        open.remove(&(update.run_id, *step, *attempt))
                                    {
                                        let secs = e.at_ms.saturating_sub(started) as f64 / 1000.0;
                                        metrics
                                            .step_duration
                                            .with_label_values(&[&task])
                                            .observe(secs);
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    // A lagging watcher misses some steps; drop what can no longer finish.
                    Err(RecvError::Lagged(_)) => open.clear(),
                    Err(RecvError::Closed) => break,
                }
            }
        });
    }

    /// Counts terminal status changes until the engine closes.
    pub fn watch_runs(self: &std::sync::Arc<Self>, engine: &Engine) {
        let mut updates = engine.subscribe_status();
        let metrics = self.clone();
        tokio::spawn(async move {
            loop {
                match updates.recv().await {
                    Ok(u) if u.status.is_terminal() => {
                        metrics
                            .runs_finished
                            .with_label_values(&[status_label(u.status)])
                            .inc();
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => break,
                }
            }
        });
    }

    /// The text exposition of every metric.
    pub fn render(&self, engine: &Engine) -> String {
        {
            let _guard = self.scrape.lock().unwrap_or_else(|p| p.into_inner());
            let stats = engine.writer_stats();
            let catch_up = |c: &IntCounter, now: u64| c.inc_by(now.saturating_sub(c.get()));
            catch_up(&self.journal_commits, stats.commits.load(Ordering::Relaxed));
            catch_up(&self.journal_batches, stats.batches.load(Ordering::Relaxed));
            catch_up(&self.journal_records, stats.records.load(Ordering::Relaxed));
            let secs = stats.commit_micros.load(Ordering::Relaxed) as f64 / 1e6;
            let prev = self.journal_commit_seconds.get();
            if secs > prev {
                self.journal_commit_seconds.inc_by(secs - prev);
            }
        }
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "cannot encode metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// The task of the attempt `attempt` of `step` in `run`, from its `TaskStartedRecord`.
async fn started_task(
    engine: &magrathea_core::WeakEngine,
    run: magrathea_core::RunId,
    step: u32,
    attempt: u32,
) -> Option<String> {
    let engine = engine.upgrade()?;
    let journal = tokio::task::spawn_blocking(move || engine.journal(run))
        .await
        .ok()?
        .ok()?;
    journal.into_iter().find_map(|e| match e.record {
        magrathea_core::Record::TaskStarted {
            step: s,
            attempt: a,
            task,
            ..
        } if s == step && a == attempt => Some(task),
        _ => None,
    })
}

fn status_label(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Running => "RUNNING",
        RunStatus::Waiting => "WAITING",
        RunStatus::Done => "DONE",
        RunStatus::Failed => "FAILED",
        RunStatus::Cancelled => "CANCELLED",
        RunStatus::Blocked => "BLOCKED",
        RunStatus::Paused => "PAUSED",
    }
}

/// Middleware counting every request by method, route pattern and status.
pub(crate) async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".into());
    let method = method_label(req.method());
    let started = Instant::now();
    let response = next.run(req).await;
    state
        .metrics
        .http_duration
        .with_label_values(&[&route])
        .observe(started.elapsed().as_secs_f64());
    state
        .metrics
        .http_requests
        .with_label_values(&[method, &route, response.status().as_str()])
        .inc();
    response
}

/// The method's label: one of the standard methods, else `other`.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// `GET /metrics`.
pub(crate) async fn metrics(State(state): State<AppState>) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(&state.engine),
    )
        .into_response()
}
