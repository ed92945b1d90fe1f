//! A command driving a run waits for a store that fails (a full disk, a database that refuses
//! connections) for up to [`STORE_PATIENCE`], saying so on stderr, before it gives up with the
//! store's error; the run stays as journaled, for `magrathea resume`.

use magrathea_core::{Engine, JournalHealth, RunError, StoreError};

use super::output::errln;

/// How long a command driving a run waits for a store that cannot commit (a full disk) to
/// work again before it gives up; the engine retries meanwhile.
const STORE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// Completes with the store's error once it has failed to commit for [`STORE_PATIENCE`],
/// saying so on stderr when it begins; the run stays as journaled, for `magrathea resume`.
pub(crate) async fn store_failing(engine: &Engine) -> StoreError {
    let mut since: Option<std::time::Instant> = None;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        if engine.health() == JournalHealth::Healthy {
            if since.take().is_some() {
                errln!("  the store commits again; the run goes on");
            }
            continue;
        }
        let began = *since.get_or_insert_with(|| {
            errln!(
                "  the store cannot commit (a full disk, an I/O error): the run waits for it \
                 for up to {} s",
                STORE_PATIENCE.as_secs()
            );
            std::time::Instant::now()
        });
        if began.elapsed() < STORE_PATIENCE {
            continue;
        }
        let probing = engine.clone();
        match tokio::task::spawn_blocking(move || probing.probe_journal()).await {
            Ok(Err(e)) => {
                errln!(
                    "  the run stays as journaled: `magrathea resume` carries it on once the \
                     store commits again"
                );
                return e;
            }
            _ => since = None,
        }
    }
}

/// A store that cannot be read (a database that refuses connections): since when, to wait for
/// it as for one that cannot commit.
#[derive(Debug, Default)]
pub(crate) struct Unread {
    since: Option<std::time::Instant>,
}

impl Unread {
    /// `None` while `read` failed on the store for less than [`STORE_PATIENCE`] (said on
    /// stderr when it begins; the caller reads again after a pause); else `read` as it is.
    pub(crate) async fn patience<T>(
        &mut self,
        read: Result<T, RunError>,
    ) -> Option<Result<T, RunError>> {
        match read {
            Err(RunError::Store(e)) => {
                let began = *self.since.get_or_insert_with(|| {
                    errln!(
                        "  the store cannot be read ({e}): the run waits for it for up to {} s",
                        STORE_PATIENCE.as_secs()
                    );
                    std::time::Instant::now()
                });
                if began.elapsed() >= STORE_PATIENCE {
                    errln!(
                        "  the run stays as journaled: `magrathea resume` carries it on once \
                         the store answers again"
                    );
                    return Some(Err(RunError::Store(e)));
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                None
            }
            other => {
                if self.since.take().is_some() {
                    errln!("  the store answers again; the run goes on");
                }
                Some(other)
            }
        }
    }
}
