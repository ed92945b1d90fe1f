//! The store contract against a real PostgreSQL server, and how the store opens a database:
//! migrations once however many workers connect, a newer schema refused, bad URLs and
//! unreachable servers named.

use std::sync::OnceLock;

use magrathea_core::Store;
use magrathea_core::store::contract;
use magrathea_postgres::PgStore;
use magrathea_postgres::testing::TestCluster;

fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(TestCluster::start)
}

fn fresh_store() -> PgStore {
    PgStore::connect(&cluster().create_database()).unwrap()
}

#[test]
fn postgres_keeps_the_store_contract() {
    contract::check_all(&fresh_store());
}

#[test]
fn postgres_reads_journal_ranges_as_the_contract_says() {
    contract::check_ranges(&fresh_store());
}

#[tokio::test]
async fn the_store_can_be_used_from_inside_an_async_runtime() {
    let store = fresh_store();
    let run = magrathea_core::RunId::new();
    store.commit(&[&contract::records(run, 0, 3)]).unwrap();
    assert_eq!(store.read_journal_raw(run).unwrap().len(), 3);
    // And dropped there, without blocking the runtime.
    drop(store);
}

#[test]
fn workers_connecting_together_apply_each_migration_once() {
    let url = cluster().create_database();
    let stores: Vec<PgStore> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| PgStore::connect(&url).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let versions = cluster().psql_on(
        &url,
        "SELECT string_agg(version::text, ',' ORDER BY version) FROM magrathea_schema_migrations",
    );
    assert_eq!(versions, "1,2,3,4,5,6");
    // Every worker sees the same store.
    let run = magrathea_core::RunId::new();
    stores[0].commit(&[&contract::records(run, 0, 2)]).unwrap();
    assert_eq!(stores[3].read_journal_raw(run).unwrap().len(), 2);
}

#[test]
fn a_database_migrated_by_a_newer_version_is_refused() {
    let url = cluster().create_database();
    drop(PgStore::connect(&url).unwrap());
    cluster().psql_on(
        &url,
        "INSERT INTO magrathea_schema_migrations (version) VALUES (999)",
    );
    let err = PgStore::connect(&url).unwrap_err().to_string();
    assert!(err.contains("version 999"), "{err}");
    assert!(err.contains("newer"), "{err}");
}

#[test]
fn a_bad_url_and_an_unreachable_server_are_named_without_the_password() {
    let err = PgStore::connect("postgres://a:b@host:notaport/db")
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected postgres://"), "{err}");

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = PgStore::connect(&format!("postgres://me:secret@127.0.0.1:{port}/db"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("[MAG-ST001]"), "{err}");
    assert!(
        err.contains(&format!("postgres://me:***@127.0.0.1:{port}/db")),
        "{err}"
    );
    assert!(!err.contains("secret"), "{err}");
}
