//! The scheduler shares its passes fairly between tenants: one tenant with many schedules due
//! at once fires at most its budget of ticks a pass, and another tenant's tick fires in the
//! same pass; the ticks left over fire in the next passes, none lost.

use crate::http_common;

use std::sync::Arc;

use http_common::{ACME, GLOBEX, Server, write};
use magrathea_server::triggers::{ManualClock, TriggerConfig};
use serde_json::Value;

/// 2026-03-01T00:00:00Z.
const T0: i64 = 1_772_323_200_000;

const QUICK: &str = "start: done\nstates:\n  done: { type: terminal, result: ok }\n";

/// Once a minute, at second 0.
const MINUTELY: &str = "cron: \"0 * * * * *\"\nworkflow: quick\noverlap: allow_all\n";

/// The accepted deliveries of `tenant`'s shop, read with `token`.
async fn accepted(server: &Server, tenant: &str, token: &str) -> usize {
    let v: Value = server
        .get_json(
            &format!("/brain/{tenant}/project/shop/triggers/deliveries?limit=1000"),
            Some(token),
        )
        .await;
    v["deliveries"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .filter(|d| d["status"] == "accepted")
        .count()
}

#[tokio::test]
async fn one_tenants_many_due_schedules_do_not_hold_back_another_tenants_tick() {
    let clock = ManualClock::new(T0);
    let config = TriggerConfig {
        clock: Arc::new(clock.clone()),
        enabled: false,
        ..TriggerConfig::default()
    };
    let server = Server::start_with(|c| c.triggers(config)).await;
    let many = 60;
    for tenant in ["acme", "globex"] {
        write(
            &server
                .root
                .join(tenant)
                .join("shop/_vance/workflows/quick.yaml"),
            QUICK,
        );
    }
    for i in 0..many {
        write(
            &server
                .root
                .join(format!("acme/shop/_vance/scheduler/s{i}.yaml")),
            MINUTELY,
        );
    }
    write(
        &server.root.join("globex/shop/_vance/scheduler/g.yaml"),
        MINUTELY,
    );
    let h = server.handle.as_ref().unwrap();
    h.triggers().resync_all(h.state()).unwrap();
    h.triggers().tick(h.state()).await.unwrap(); // the cursors start at now

    // A minute on, every schedule is due once.
    clock.advance(60_000);
    h.triggers().tick(h.state()).await.unwrap();
    assert_eq!(
        accepted(&server, "globex", GLOBEX).await,
        1,
        "globex's tick fired"
    );
    let budget = magrathea_server::triggers::TICKS_PER_TENANT_PER_PASS;
    assert_eq!(
        accepted(&server, "acme", ACME).await,
        budget,
        "acme fired its budget"
    );

    // The next pass fires acme's ticks left over; none is lost or fired twice.
    h.triggers().tick(h.state()).await.unwrap();
    assert_eq!(accepted(&server, "acme", ACME).await, many);
    h.triggers().tick(h.state()).await.unwrap();
    assert_eq!(accepted(&server, "acme", ACME).await, many);
    assert_eq!(accepted(&server, "globex", GLOBEX).await, 1);
}
