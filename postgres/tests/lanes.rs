//! Lane slots on the PostgreSQL store, worker against worker on one database: a lane's width
//! holds across workers, a released slot is free at once, the slots of a worker that stopped
//! renewing them come free after the grace period, a renewed slot stays held, and a late
//! release of a slot taken again since frees nothing.

use std::sync::OnceLock;
use std::time::Duration;

use magrathea_core::store::Leases;
use magrathea_postgres::testing::TestCluster;
use magrathea_postgres::{PgOptions, PgStore};

fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(TestCluster::start)
}

/// A worker whose slots expire 300 ms after they were taken, never renewed: a worker that
/// died, from the database's point of view.
fn dead_worker(url: &str, name: &str) -> PgStore {
    worker(
        url,
        name,
        Duration::from_millis(300),
        Duration::from_secs(3600),
    )
}

/// A worker with a long grace period, renewed often.
fn live_worker(url: &str, name: &str) -> PgStore {
    worker(
        url,
        name,
        Duration::from_secs(60),
        Duration::from_millis(50),
    )
}

fn worker(url: &str, name: &str, grace: Duration, heartbeat: Duration) -> PgStore {
    PgStore::connect_with(
        url,
        PgOptions {
            lease_grace: grace,
            heartbeat: Some(heartbeat),
            worker: Some(name.into()),
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn a_lane_gives_out_as_many_slots_as_its_width_across_workers() {
    let url = cluster().create_database();
    let a = live_worker(&url, "a");
    let b = live_worker(&url, "b");
    let first = a
        .acquire_slot("acme/shop/shell", 2)
        .unwrap()
        .expect("a free slot");
    let second = b
        .acquire_slot("acme/shop/shell", 2)
        .unwrap()
        .expect("a free slot");
    assert_ne!(first.slot, second.slot);
    assert_eq!(a.acquire_slot("acme/shop/shell", 2).unwrap(), None);
    assert_eq!(b.acquire_slot("acme/shop/shell", 2).unwrap(), None);
    // Another lane is independent.
    assert!(b.acquire_slot("acme/other/shell", 2).unwrap().is_some());
}

#[test]
fn a_released_slot_is_free_at_once_for_another_worker() {
    let url = cluster().create_database();
    let a = live_worker(&url, "a");
    let b = live_worker(&url, "b");
    let held = a.acquire_slot("lane", 1).unwrap().expect("a free slot");
    assert_eq!(b.acquire_slot("lane", 1).unwrap(), None);
    a.release_slot(&held).unwrap();
    let taken = b
        .acquire_slot("lane", 1)
        .unwrap()
        .expect("the released slot");
    assert_eq!(taken.slot, held.slot);
}

#[test]
fn the_slots_of_a_worker_that_stopped_renewing_them_come_free_after_the_grace_period() {
    let url = cluster().create_database();
    let dead = dead_worker(&url, "dead");
    let b = live_worker(&url, "b");
    dead.acquire_slot("lane", 1).unwrap().expect("a free slot");
    assert_eq!(b.acquire_slot("lane", 1).unwrap(), None);
    std::thread::sleep(Duration::from_millis(600));
    assert!(b.acquire_slot("lane", 1).unwrap().is_some());
}

#[test]
fn a_slot_renewed_by_the_heartbeat_stays_held_past_the_grace_period() {
    let url = cluster().create_database();
    let a = worker(&url, "a", Duration::from_secs(1), Duration::from_millis(50));
    let b = live_worker(&url, "b");
    a.acquire_slot("lane", 1).unwrap().expect("a free slot");
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(b.acquire_slot("lane", 1).unwrap(), None);
}

#[test]
fn a_late_release_of_a_slot_taken_again_since_frees_nothing() {
    let url = cluster().create_database();
    let dead = dead_worker(&url, "dead");
    let b = live_worker(&url, "b");
    let stale = dead.acquire_slot("lane", 1).unwrap().expect("a free slot");
    std::thread::sleep(Duration::from_millis(600));
    let fresh = b
        .acquire_slot("lane", 1)
        .unwrap()
        .expect("the expired slot");
    dead.release_slot(&stale).unwrap();
    assert_eq!(dead.acquire_slot("lane", 1).unwrap(), None);
    b.release_slot(&fresh).unwrap();
    assert!(dead.acquire_slot("lane", 1).unwrap().is_some());
}

#[test]
fn a_worker_that_leaves_frees_its_slots() {
    let url = cluster().create_database();
    let a = live_worker(&url, "a");
    let b = live_worker(&url, "b");
    a.acquire_slot("lane", 1).unwrap().expect("a free slot");
    drop(a);
    assert!(b.acquire_slot("lane", 1).unwrap().is_some());
}

#[test]
fn a_wider_lane_than_before_gets_its_new_slots() {
    let url = cluster().create_database();
    let a = live_worker(&url, "a");
    a.acquire_slot("lane", 1).unwrap().expect("a free slot");
    assert_eq!(a.acquire_slot("lane", 1).unwrap(), None);
    let wider = a.acquire_slot("lane", 2).unwrap().expect("the new slot");
    assert_eq!(wider.slot, 1);
}

/// A step that ends while the database is down (its release refused) gives its slot back at
/// the first heartbeat that reaches the database again, which never renews it: it is not held
/// for as long as the worker lives, keeping the lane shut.
#[test]
fn a_slot_whose_release_the_database_refused_comes_free_when_it_answers_again() {
    use magrathea_postgres::testing::Relay;
    let url = cluster().create_database();
    let relay = Relay::start(cluster().port());
    let a = live_worker(&relay.url(&url), "a");
    let b = live_worker(&url, "b");
    let slot = a
        .acquire_slot("acme/shop/shell", 1)
        .unwrap()
        .expect("a free slot");
    relay.sever();
    assert!(a.release_slot(&slot).is_err(), "the database is down");
    relay.restore();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if b.acquire_slot("acme/shop/shell", 1).unwrap().is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the slot stayed held by a worker whose step had ended"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
