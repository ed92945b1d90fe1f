//! A worker cut off from its database by the network (connections open, nothing answering):
//! it gives up the leases no heartbeat could renew, so that it stops driving runs another
//! worker may already have taken over, and releases them once the database answers again.

use std::time::{Duration, Instant};

use magrathea_core::store::contract::{records, summary_in};
use magrathea_core::store::{Claim, CommitBatch, Leases};
use magrathea_core::{RunId, RunStatus, Store};
use magrathea_postgres::testing::{Relay, TestCluster};
use magrathea_postgres::{PgOptions, PgStore};

fn start(run: RunId) -> CommitBatch {
    CommitBatch {
        summaries: vec![summary_in(run, "", RunStatus::Running)],
        ..records(run, 0, 1)
    }
}

fn worker(url: &str, name: &str, grace: Duration) -> PgStore {
    PgStore::connect_with(
        url,
        PgOptions {
            lease_grace: grace,
            worker: Some(name.into()),
            ..Default::default()
        },
    )
    .unwrap()
}

/// Calls `f` until it gives something, for at most 20 s; before failing, lets the relay's
/// connections through (dropping a store waits on its database).
fn eventually<T>(what: &str, relay: &Relay, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            relay.thaw();
            panic!("never: {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Worker `a`, on a database of a cluster of its own through a relay, holding the lease of
/// `run` (a grace of 600 ms); `url` reaches the database directly.
struct Holding {
    _cluster: TestCluster,
    url: String,
    relay: Relay,
    a: PgStore,
    run: RunId,
}

fn holding() -> Holding {
    let cluster = TestCluster::start();
    let url = cluster.create_database();
    let relay = Relay::start(cluster.port());
    let a = worker(&relay.url(&url), "a", Duration::from_millis(600));
    let run = RunId::new();
    a.commit(&[&start(run)]).unwrap();
    Holding {
        _cluster: cluster,
        url,
        relay,
        a,
        run,
    }
}

#[test]
fn a_cut_off_worker_gives_up_its_leases_and_releases_them_when_the_database_answers() {
    let Holding {
        _cluster,
        url,
        relay,
        a,
        run,
    } = holding();

    relay.freeze();
    // Without an answer from the database, the heartbeat cannot renew the lease; before it may
    // have expired (and been reclaimed elsewhere), the worker reports the run lost.
    let lost = eventually("the run reported lost", &relay, || {
        Some(a.take_lost()).filter(|l| !l.is_empty())
    });
    assert_eq!(lost, vec![run]);
    assert_eq!(
        a.claim(run).unwrap(),
        Claim::Elsewhere,
        "a lease given up is not claimed again before it is released"
    );

    relay.thaw();
    // The heartbeat that reaches the database releases the lease rather than renewing it for
    // as long as the worker lives with nobody driving the run: three graces after the cut
    // ends, another worker takes the run over.
    std::thread::sleep(Duration::from_millis(1800));
    let b = worker(&url, "b", Duration::from_secs(60));
    let taken = eventually("the run released to other workers", &relay, || {
        Some(b.reclaim_expired(10).unwrap()).filter(|r| !r.is_empty())
    });
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].0, run);
    b.commit(&[&records(run, 1, 1)]).unwrap();
    let refused = a.commit_checked(&[&records(run, 1, 1)]).unwrap();
    assert_eq!(
        refused.len(),
        1,
        "the worker that gave the run up is fenced off it"
    );
    assert_eq!(a.claim(run).unwrap(), Claim::Elsewhere);
}

#[test]
fn a_worker_whose_database_answers_keeps_its_leases() {
    let Holding {
        _cluster,
        url,
        relay: _relay,
        a,
        run,
    } = holding();
    // Three graces with the heartbeat renewing: nothing is lost, and the run stays this
    // worker's (another worker finds it held).
    std::thread::sleep(Duration::from_millis(1800));
    assert_eq!(a.take_lost(), Vec::<RunId>::new());
    let b = worker(&url, "b", Duration::from_secs(60));
    assert_eq!(b.reclaim_expired(10).unwrap(), vec![]);
    a.commit(&[&records(run, 1, 1)]).unwrap();
}
