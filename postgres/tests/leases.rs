//! The lease side of the PostgreSQL store, worker against worker on one database: fencing of a
//! worker whose lease was reclaimed, claims, mail between workers, idempotency keys raced by
//! two workers, ended runs, and adoption of runs a leaving worker released.

use std::sync::OnceLock;
use std::time::Duration;

use magrathea_core::store::contract::{records, summary_in};
use magrathea_core::store::{Claim, CommitBatch, Leases, RunSummary};
use magrathea_core::{RunId, RunStatus, Store, StoreError};
use magrathea_postgres::testing::TestCluster;
use magrathea_postgres::{PgOptions, PgStore};
use serde_json::json;

fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(TestCluster::start)
}

/// A worker whose leases expire 300 ms after a claim and are never renewed by a heartbeat: a
/// worker frozen from the database's point of view.
fn frozen_worker(url: &str, name: &str) -> PgStore {
    worker_with_grace(url, name, Duration::from_millis(300))
}

/// A worker with a lease of `grace` that its heartbeat does not renew within the test.
fn worker_with_grace(url: &str, name: &str, grace: Duration) -> PgStore {
    PgStore::connect_with(
        url,
        PgOptions {
            lease_grace: grace,
            heartbeat: Some(Duration::from_secs(3600)),
            worker: Some(name.into()),
            ..Default::default()
        },
    )
    .unwrap()
}

fn summary(run: RunId, status: RunStatus) -> RunSummary {
    summary_in(run, "", status)
}

/// The start of `run`: its record 0 and an active summary, with an optional key.
fn start(run: RunId, key: Option<&str>) -> CommitBatch {
    CommitBatch {
        summaries: vec![summary(run, RunStatus::Running)],
        idempotency_keys: key.map(|k| (k.to_owned(), run)).into_iter().collect(),
        ..records(run, 0, 1)
    }
}

#[test]
fn a_worker_whose_lease_was_reclaimed_cannot_append_and_the_new_owner_can() {
    let url = cluster().create_database();
    let a = frozen_worker(&url, "a");
    let b = frozen_worker(&url, "b");
    let run = RunId::new();
    a.commit(&[&start(run, None)]).unwrap();
    assert_eq!(a.claim(run).unwrap(), Claim::Granted { reclaims: 0 });
    assert_eq!(
        b.claim(run).unwrap(),
        Claim::Elsewhere,
        "a holds a live lease"
    );

    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(b.reclaim_expired(10).unwrap(), vec![(run, 1)]);

    // A's late append goes nowhere, whatever seqs it uses.
    let late = records(run, 1, 3);
    let refused = a.commit_checked(&[&late]).unwrap();
    assert_eq!(refused.len(), 1);
    assert!(matches!(refused[0].error, StoreError::Fenced(r) if r == run));
    assert_eq!(a.take_lost(), vec![run]);
    assert_eq!(a.read_journal_raw(run).unwrap().len(), 1);

    // The new owner appends; the old one's claim finds it elsewhere.
    b.commit(&[&records(run, 1, 3)]).unwrap();
    assert_eq!(b.read_journal_raw(run).unwrap().len(), 4);
    assert_eq!(a.claim(run).unwrap(), Claim::Elsewhere);
}

/// Worker `a` started `lost` and `kept`; after their leases expired, `a` renewed `kept` and
/// `b` reclaimed `lost`.
struct LostAndKept {
    a: PgStore,
    b: PgStore,
    lost: RunId,
    kept: RunId,
}

fn lost_and_kept() -> LostAndKept {
    let url = cluster().create_database();
    let a = frozen_worker(&url, "a");
    let b = frozen_worker(&url, "b");
    let (lost, kept) = (RunId::new(), RunId::new());
    a.commit(&[&start(lost, None), &start(kept, None)]).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    // Kept stays with a: it claims it again (a renewal of its own expired lease).
    assert_eq!(a.claim(kept).unwrap(), Claim::Granted { reclaims: 0 });
    assert_eq!(b.reclaim_expired(10).unwrap(), vec![(lost, 1)]);
    LostAndKept { a, b, lost, kept }
}

#[test]
fn in_one_group_commit_only_the_fenced_batch_is_refused() {
    // b keeps holding `lost` to the end (dropping a store releases its leases).
    let LostAndKept {
        a,
        b: _b,
        lost,
        kept,
    } = lost_and_kept();
    let refused = a
        .commit_checked(&[&records(lost, 1, 1), &records(kept, 1, 1)])
        .unwrap();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].batch, 0);
    assert_eq!(a.read_journal_raw(kept).unwrap().len(), 2);
    assert_eq!(a.read_journal_raw(lost).unwrap().len(), 1);
}

#[test]
fn a_late_append_colliding_with_the_new_owners_records_is_refused_not_an_error() {
    let LostAndKept { a, b, lost, kept } = lost_and_kept();
    // The new owner has already written the seqs the old one is about to write: the old
    // owner's insert collides with them, which must end in a refusal of its batch alone.
    b.commit(&[&records(lost, 1, 2)]).unwrap();
    let refused = a
        .commit_checked(&[&records(lost, 1, 2), &records(kept, 1, 1)])
        .unwrap();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].batch, 0);
    assert!(matches!(refused[0].error, StoreError::Fenced(r) if r == lost));
    assert_eq!(a.read_journal_raw(kept).unwrap().len(), 2);
    assert_eq!(
        b.read_journal_raw(lost).unwrap().len(),
        3,
        "the start and the new owner's two records stand"
    );
}

#[test]
fn a_run_this_worker_never_claimed_is_refused() {
    let url = cluster().create_database();
    let a = frozen_worker(&url, "a");
    let b = frozen_worker(&url, "b");
    let run = RunId::new();
    a.commit(&[&start(run, None)]).unwrap();
    let refused = b.commit_checked(&[&records(run, 1, 1)]).unwrap();
    assert!(matches!(refused[0].error, StoreError::Fenced(r) if r == run));
}

#[test]
fn two_workers_starting_with_one_key_get_one_run() {
    let url = cluster().create_database();
    let a = frozen_worker(&url, "a");
    let b = frozen_worker(&url, "b");
    let (first, second) = (RunId::new(), RunId::new());
    a.commit(&[&start(first, Some("order-1"))]).unwrap();
    let refused = b
        .commit_checked(&[&start(second, Some("order-1"))])
        .unwrap();
    assert!(matches!(refused[0].error, StoreError::KeyTaken(r) if r == first));
    assert!(
        b.read_journal_raw(second).unwrap().is_empty(),
        "nothing of it was written"
    );
    assert!(b.run_summary(second).unwrap().is_none());
    assert_eq!(b.find_idempotency_key("order-1").unwrap(), Some(first));
}

#[test]
fn mail_reaches_the_holder_and_its_reply_the_sender() {
    let url = cluster().create_database();
    let a = frozen_worker(&url, "a");
    let b = frozen_worker(&url, "b");
    let run = RunId::new();
    a.commit(&[&start(run, None)]).unwrap();
    let id = b.post(run, json!({"signal": {"name": "go"}})).unwrap();
    assert!(b.take_mail(10).unwrap().is_empty(), "b holds nothing");
    let mail = a.take_mail(10).unwrap();
    assert_eq!(mail.len(), 1);
    assert_eq!((mail[0].id, mail[0].run), (id, run));
    assert_eq!(mail[0].body["signal"]["name"], "go");
    assert!(a.take_mail(10).unwrap().is_empty(), "taken once");
    assert_eq!(b.take_reply(id).unwrap(), None, "no reply yet");
    a.reply(id, json!({"ok": null})).unwrap();
    assert_eq!(b.take_reply(id).unwrap(), Some(json!({"ok": null})));
    assert_eq!(b.take_reply(id).unwrap(), None, "a reply is taken once");
}

#[test]
fn an_ended_run_has_no_lease_and_a_released_one_is_adopted_without_a_reclaim() {
    let url = cluster().create_database();
    let a = frozen_worker(&url, "a");
    let b = frozen_worker(&url, "b");
    let (ended, left) = (RunId::new(), RunId::new());
    a.commit(&[&start(ended, None), &start(left, None)])
        .unwrap();
    a.commit(&[&CommitBatch {
        summaries: vec![summary(ended, RunStatus::Done)],
        ..records(ended, 1, 1)
    }])
    .unwrap();
    // Anyone may deliver to an ended run (to be told it ended); nobody holds it.
    assert_eq!(b.claim(ended).unwrap(), Claim::Granted { reclaims: 0 });
    assert_eq!(a.claim(ended).unwrap(), Claim::Granted { reclaims: 0 });

    a.release_all().unwrap();
    assert_eq!(
        b.reclaim_expired(10).unwrap(),
        vec![(left, 0)],
        "adopted, not reclaimed"
    );
    assert_eq!(a.claim(left).unwrap(), Claim::Elsewhere);
}

/// A worker starting inside an async runtime claims the runs a dead worker left, one blocking
/// call after another in a single poll of its start-up, as an engine's recovery does. The calls
/// must not depend on the caller's runtime: a wait counted against its cooperative budget
/// would spin forever once the budget ran out.
#[test]
fn a_worker_claims_hundreds_of_left_runs_from_inside_an_async_runtime() {
    let url = cluster().create_database();
    let dead = frozen_worker(&url, "dead");
    let runs: Vec<RunId> = (0..400).map(|_| RunId::new()).collect();
    let starts: Vec<CommitBatch> = runs.iter().map(|run| start(*run, None)).collect();
    dead.commit(&starts.iter().collect::<Vec<_>>()).unwrap();
    std::thread::sleep(Duration::from_millis(400));

    let heir = frozen_worker(&url, "heir");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let claims = rt.block_on(async {
            runs.iter()
                .map(|run| heir.claim(*run).unwrap())
                .collect::<Vec<_>>()
        });
        let _ = tx.send(claims);
    });
    // A hang fails the test instead of stalling the suite.
    let claims = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the claims returned");
    assert_eq!(claims.len(), 400);
    assert!(
        claims.iter().all(|c| *c == Claim::Granted { reclaims: 1 }),
        "every left run is reclaimed: {claims:?}"
    );
}

#[test]
fn a_starting_worker_claims_at_once_the_runs_without_a_live_lease_of_another_worker() {
    let url = cluster().create_database();
    let live = worker_with_grace(&url, "live", Duration::from_secs(60));
    let frozen = frozen_worker(&url, "frozen");
    let me = worker_with_grace(&url, "me", Duration::from_secs(60));
    let (held, ended, expired, released, mine) = (
        RunId::new(),
        RunId::new(),
        RunId::new(),
        RunId::new(),
        RunId::new(),
    );
    live.commit(&[
        &start(held, None),
        &start(ended, None),
        &start(released, None),
    ])
    .unwrap();
    live.commit(&[&CommitBatch {
        summaries: vec![summary(ended, RunStatus::Done)],
        ..records(ended, 1, 1)
    }])
    .unwrap();
    live.release(&[released]).unwrap();
    frozen.commit(&[&start(expired, None)]).unwrap();
    me.commit(&[&start(mine, None)]).unwrap();
    std::thread::sleep(Duration::from_millis(400));

    let mut claimed = me.claim_claimable().unwrap();
    claimed.sort();
    let mut expected = vec![(expired, 1), (released, 0), (mine, 0)];
    expected.sort();
    assert_eq!(
        claimed, expected,
        "not the run another worker holds, nor the ended one; only the expired one counts as a \
         reclaim"
    );
    // The claims are leases like any other: the frozen worker is fenced off the run it lost,
    // the live worker keeps its own, and nobody else can take what was claimed.
    let refused = frozen.commit_checked(&[&records(expired, 1, 1)]).unwrap();
    assert!(
        matches!(refused[..], [ref r] if matches!(r.error, StoreError::Fenced(run) if run == expired))
    );
    me.commit(&[&records(expired, 1, 1), &records(released, 1, 1)])
        .unwrap();
    assert_eq!(me.claim(held).unwrap(), Claim::Elsewhere);
    live.commit(&[&records(held, 1, 1)]).unwrap();
    let other = worker_with_grace(&url, "other", Duration::from_secs(60));
    assert_eq!(other.claim_claimable().unwrap(), vec![]);
}

/// Two workers starting at the same moment beside runs nobody holds split them: each run is
/// claimed by exactly one of them.
#[test]
fn two_workers_claiming_at_once_never_both_get_a_run() {
    let url = cluster().create_database();
    let dead = frozen_worker(&url, "dead");
    let runs: Vec<RunId> = (0..400).map(|_| RunId::new()).collect();
    let starts: Vec<CommitBatch> = runs.iter().map(|run| start(*run, None)).collect();
    dead.commit(&starts.iter().collect::<Vec<_>>()).unwrap();
    // Half the runs left with their leases released, half with their leases expired.
    dead.release(&runs[..200]).unwrap();
    std::thread::sleep(Duration::from_millis(400));

    // Both workers connect, then claim together, and stay alive until both have claimed: a
    // worker that is dropped gives its leases back, and a slow second worker would then
    // rightly claim every run again.
    let ready = std::sync::Barrier::new(2);
    let (stores, claims): (Vec<PgStore>, Vec<Vec<(RunId, u32)>>) = std::thread::scope(|scope| {
        let workers: Vec<_> = ["x", "y"]
            .into_iter()
            .map(|name| {
                let (url, ready) = (&url, &ready);
                scope.spawn(move || {
                    let store = worker_with_grace(url, name, Duration::from_secs(60));
                    ready.wait();
                    let claimed = store.claim_claimable().unwrap();
                    (store, claimed)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).unzip()
    });
    let mut all: Vec<RunId> = claims.iter().flatten().map(|(run, _)| *run).collect();
    all.sort();
    let mut expected = runs.clone();
    expected.sort();
    assert_eq!(all, expected, "every run claimed once: {claims:?}");
    for (run, reclaims) in claims.iter().flatten() {
        let was_expired = runs[200..].contains(run);
        assert_eq!(*reclaims, u32::from(was_expired), "run {run}");
    }
    drop(stores);
}

/// An engine on the database at `url` as worker `name`, running the code workflow `ask`: one
/// approval gate, its outcome the result.
async fn gate_worker(
    url: &str,
    name: &str,
) -> Result<magrathea_core::Engine, magrathea_core::OpenError> {
    use std::sync::Arc;

    use magrathea_core::{Engine, GateKind, GateSpec, WorkflowRegistration};

    let ask = WorkflowRegistration::new("ask", "", |ctx, _| async move {
        let spec = GateSpec {
            kind: GateKind::Approval,
            title: "ship?".into(),
            body: String::new(),
            options: vec![],
            assigned_to: "@ops".into(),
            criticality: "NORMAL".into(),
            tags: vec![],
            timeout_ms: None,
            meta: serde_json::Value::Null,
        };
        let outcome = ctx.gate(spec).await;
        Ok(json!(format!("{outcome:?}")))
    });
    let store = PgStore::connect_with(
        url,
        PgOptions {
            worker: Some(name.into()),
            ..Default::default()
        },
    )
    .unwrap();
    Engine::builder()
        .store(Arc::new(store))
        .workflow(ask)
        .build()
        .await
}

/// An answer to a gate of a run that has ended (answered already) is ignored, on the worker
/// that drove the run and on another: an ended run has no lease, and neither may append to it,
/// so neither fails for want of one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_to_an_ended_run_is_ignored_on_every_worker() {
    use magrathea_core::{AnswerAck, GateAnswer, InboxFilter, StartRequest};

    let url = cluster().create_database();
    let first = gate_worker(&url, "first").await.unwrap();
    let second = gate_worker(&url, "second").await.unwrap();
    let run = first
        .start(StartRequest::code("ask", serde_json::Value::Null))
        .await
        .unwrap();
    assert_eq!(
        first.wait_settled(run).await.unwrap().status,
        RunStatus::Waiting
    );
    let item = first.inbox(InboxFilter::Pending).unwrap()[0].id.clone();
    assert_eq!(
        first
            .answer_gate(&item, GateAnswer::reject())
            .await
            .unwrap(),
        AnswerAck::Applied
    );
    assert_eq!(first.wait(run).await.unwrap().status, RunStatus::Done);
    for engine in [&first, &second] {
        assert_eq!(
            engine
                .answer_gate(&item, GateAnswer::approve())
                .await
                .unwrap(),
            AnswerAck::Ignored
        );
    }
}

#[test]
fn mail_withdrawn_before_the_holder_takes_it_is_never_delivered() {
    let url = cluster().create_database();
    let a = frozen_worker(&url, "a");
    let b = frozen_worker(&url, "b");
    let run = RunId::new();
    a.commit(&[&start(run, None)]).unwrap();
    let withdrawn = b.post(run, json!({"cancel": {"reason": "stop"}})).unwrap();
    assert!(b.withdraw(withdrawn).unwrap(), "not taken yet: withdrawn");
    assert!(
        a.take_mail(10).unwrap().is_empty(),
        "a withdrawn mail is gone"
    );
    let taken = b.post(run, json!({"cancel": {"reason": "stop"}})).unwrap();
    assert_eq!(a.take_mail(10).unwrap().len(), 1);
    assert!(!b.withdraw(taken).unwrap(), "taken already: not withdrawn");
    a.reply(taken, json!({"ok": "requested"})).unwrap();
    assert_eq!(
        b.take_reply(taken).unwrap(),
        Some(json!({"ok": "requested"}))
    );
}

/// A cancel sent to a run whose holder has stopped answering (killed, its lease not yet
/// expired) fails after the wait, and is withdrawn: the run's next holder never applies a
/// request its sender was told had failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_the_holder_never_takes_fails_and_is_withdrawn() {
    use std::sync::Arc;

    use magrathea_core::{DeliverError, Engine};

    let url = cluster().create_database();
    // The holder: a worker whose lease outlasts the test and that takes no mail.
    let ghost = worker_with_grace(&url, "ghost", Duration::from_secs(600));
    let run = RunId::new();
    ghost.commit(&[&start(run, None)]).unwrap();
    assert_eq!(ghost.claim(run).unwrap(), Claim::Granted { reclaims: 0 });
    let store = PgStore::connect_with(
        &url,
        PgOptions {
            worker: Some("sender".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let engine = Engine::builder()
        .store(Arc::new(store))
        .build()
        .await
        .unwrap();
    let error = engine.cancel(run, "stop").await.unwrap_err();
    assert!(
        matches!(
            error,
            DeliverError::Store(StoreError::Unanswered { withdrawn: true })
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("[MAG-ST007]"), "{error}");
    assert!(
        ghost.take_mail(10).unwrap().is_empty(),
        "the cancel is still posted for the run's next holder"
    );
}

/// A clean stop between two lost leases does not wipe the run's count of reclaims: the
/// released lease is adopted at the count it had, so a task that kills every worker that runs
/// it is still stopped at `max_claim_attempts`, however its workers come and go.
#[test]
fn a_released_lease_keeps_the_count_of_reclaims_before_it() {
    let url = cluster().create_database();
    let (a, b, c) = (
        frozen_worker(&url, "a"),
        frozen_worker(&url, "b"),
        frozen_worker(&url, "c"),
    );
    let run = RunId::new();
    a.commit(&[&start(run, None)]).unwrap();
    assert_eq!(a.claim(run).unwrap(), Claim::Granted { reclaims: 0 });
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(b.reclaim_expired(10).unwrap(), vec![(run, 1)], "a lost it");

    b.release_all().unwrap();
    assert_eq!(
        c.reclaim_expired(10).unwrap(),
        vec![(run, 1)],
        "adopted after a clean stop: no new reclaim, and the old one still counts"
    );
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        a.claim(run).unwrap(),
        Claim::Granted { reclaims: 2 },
        "c lost it"
    );

    // Released again, by the run's own list this time; a claim adopts it at the same count.
    // (b left with its release_all: a worker that left claims nothing more.)
    a.release(&[run]).unwrap();
    assert_eq!(b.claim(run).unwrap(), Claim::Elsewhere, "b has left");
    let d = frozen_worker(&url, "d");
    assert_eq!(d.claim(run).unwrap(), Claim::Granted { reclaims: 2 });
    assert_eq!(c.claim(run).unwrap(), Claim::Elsewhere, "d holds it");
}

/// A worker that released its leases to leave claims and reclaims nothing more: a round of its
/// engine still running as it stops cannot take back the runs it just gave up (they would wait
/// out the grace period, and count a reclaim).
#[test]
fn a_worker_that_released_its_leases_to_leave_takes_none_back() {
    let url = cluster().create_database();
    let a = frozen_worker(&url, "a");
    let run = RunId::new();
    a.commit(&[&start(run, None)]).unwrap();
    assert_eq!(a.claim(run).unwrap(), Claim::Granted { reclaims: 0 });
    a.release_all().unwrap();
    assert_eq!(a.reclaim_expired(10).unwrap(), vec![]);
    assert_eq!(a.claim(run).unwrap(), Claim::Elsewhere);
    let b = frozen_worker(&url, "b");
    assert_eq!(
        b.reclaim_expired(10).unwrap(),
        vec![(run, 0)],
        "adopted at once"
    );
}

/// Answers to one gate sent at once through three workers: the holder applies one and the
/// run ends, giving up its lease. The answers another worker posted for it meanwhile are
/// taken by nobody once the lease is gone; their senders see the run end and deliver them to
/// the ended run themselves, so each is told it was ignored, instead of waiting out the
/// holder's silence and hearing that it may have died.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_raced_through_other_workers_are_ignored_once_the_run_ends() {
    use magrathea_core::{AnswerAck, GateAnswer, InboxFilter, StartRequest};

    let url = cluster().create_database();
    let engines = [
        gate_worker(&url, "holder").await.unwrap(),
        gate_worker(&url, "second").await.unwrap(),
        gate_worker(&url, "third").await.unwrap(),
    ];
    for _ in 0..3 {
        let run = engines[0]
            .start(StartRequest::code("ask", serde_json::Value::Null))
            .await
            .unwrap();
        assert_eq!(
            engines[0].wait_settled(run).await.unwrap().status,
            RunStatus::Waiting
        );
        let item = engines[0]
            .inbox(InboxFilter::Pending)
            .unwrap()
            .into_iter()
            .find(|i| i.workflow_run_id == run)
            .unwrap()
            .id;
        let answers = futures::future::join_all(
            engines
                .iter()
                .map(|e| e.answer_gate(&item, GateAnswer::approve())),
        )
        .await;
        let acks: Vec<AnswerAck> = answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|e| panic!("an answer failed: {e}")))
            .collect();
        assert_eq!(
            acks.iter().filter(|a| **a == AnswerAck::Applied).count(),
            1,
            "{acks:?}"
        );
        assert_eq!(engines[0].wait(run).await.unwrap().status, RunStatus::Done);
    }
}

/// A lease whose holder's last renewal came before the database's start (the server was
/// restarted, or stopped and started, while the run was held) is taken over without counting
/// a reclaim: no worker could renew it meanwhile, and the count is for tasks that take their
/// workers down. A lease that lapsed while the database ran still counts.
#[test]
fn a_lease_that_lapsed_across_a_restart_of_the_database_is_taken_over_without_a_reclaim() {
    let url = cluster().create_database();
    let (a, b) = (frozen_worker(&url, "a"), frozen_worker(&url, "b"));
    let (across, lapsed, claimed) = (RunId::new(), RunId::new(), RunId::new());
    for run in [across, lapsed, claimed] {
        a.commit(&[&start(run, None)]).unwrap();
        assert_eq!(a.claim(run).unwrap(), Claim::Granted { reclaims: 0 });
    }
    // The holder's last renewals as a restart leaves them: made before the server started.
    let before_start = |run: RunId| {
        format!(
            "UPDATE magrathea_leases SET renewed_at = pg_postmaster_start_time() \
             - interval '1 second' WHERE run_id = '{}'",
            uuid::Uuid::from_u128(run.as_u128())
        )
    };
    for run in [across, claimed] {
        cluster().psql_on(&url, &before_start(run));
    }
    std::thread::sleep(Duration::from_millis(400));
    let mut taken = b.reclaim_expired(10).unwrap();
    taken.sort();
    let mut expected = vec![(across, 0), (lapsed, 1), (claimed, 0)];
    expected.sort();
    assert_eq!(taken, expected);
    // A claim of one run, and a starting worker's claim of all, follow the same rule.
    std::thread::sleep(Duration::from_millis(400));
    cluster().psql_on(&url, &before_start(claimed));
    let c = frozen_worker(&url, "c");
    assert_eq!(c.claim(claimed).unwrap(), Claim::Granted { reclaims: 0 });
    let mut all = frozen_worker(&url, "d").claim_claimable().unwrap();
    all.sort();
    let mut expected = vec![(across, 1), (lapsed, 2)];
    expected.sort();
    assert_eq!(all, expected, "b's leases lapsed while the database ran");
}
