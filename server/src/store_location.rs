//! Where a server or a command keeps its journal: a redb file in a directory (the default), or
//! a PostgreSQL database that several `magrathea` workers share (`--store postgres://…`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use magrathea_core::{EngineBuilder, StoreError};
use magrathea_postgres::PgOptions;

/// The file in a directory store that says `magrathea serve` has served it.
pub(crate) const SERVED_MARKER: &str = "served";

/// A journal store, as `--store` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// `<dir>/journal.redb`.
    Redb(PathBuf),
    /// A PostgreSQL URL (`postgres://user@host:port/database`).
    Postgres(String),
}

impl StoreLocation {
    /// A `postgres://` or `postgresql://` URL names a database; anything else a directory.
    pub fn from_arg(arg: &Path) -> Self {
        match arg.to_str() {
            Some(url) if magrathea_postgres::is_postgres_url(url) => Self::Postgres(url.into()),
            _ => Self::Redb(arg.to_path_buf()),
        }
    }

    /// The redb file, for a directory store.
    pub fn journal_path(&self) -> Option<PathBuf> {
        match self {
            Self::Redb(dir) => Some(dir.join("journal.redb")),
            Self::Postgres(_) => None,
        }
    }

    /// Whether the store may hold runs already: a redb file or its journal log that exists,
    /// or any database. An error when the store directory is a file, or when whether it
    /// exists cannot be told (a directory on the way cannot be read): a reading command must
    /// not report an unreadable store as one without runs.
    pub fn may_exist(&self) -> Result<bool, String> {
        let Self::Redb(dir) = self else {
            return Ok(true);
        };
        if dir.is_file() {
            return Err(format!(
                "[MAG-SV001] the store {} is a file: pass the store's directory (the one \
                 holding journal.redb), not a file",
                dir.display()
            ));
        }
        let journal = dir.join("journal.redb");
        let [log0, log1] = magrathea_core::RedbStore::log_paths_of(&journal);
        for path in [&journal, &log0, &log1] {
            match path.try_exists() {
                Ok(true) => return Ok(true),
                Ok(false) => {}
                Err(e) => {
                    return Err(format!(
                        "[MAG-ST001] cannot tell whether {} exists: {e}",
                        path.display()
                    ));
                }
            }
        }
        Ok(false)
    }

    /// Whether `magrathea serve` has served this store (a directory store that holds the
    /// file `served`): its runs are a served tree's, so the `magrathea` command drives
    /// them under the served tree's rules (shell and script defaults, the sandbox), as the
    /// server would. A PostgreSQL store is not marked.
    pub fn is_served(&self) -> bool {
        match self {
            Self::Redb(dir) => dir.join(SERVED_MARKER).is_file(),
            Self::Postgres(_) => false,
        }
    }

    /// Marks a directory store as served (see [`StoreLocation::is_served`]); nothing for a
    /// PostgreSQL store.
    ///
    /// # Errors
    ///
    /// The marker cannot be written.
    pub fn mark_served(&self) -> std::io::Result<()> {
        let Self::Redb(dir) = self else {
            return Ok(());
        };
        let marker = dir.join(SERVED_MARKER);
        if marker.is_file() {
            return Ok(());
        }
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        // For the store's owner alone, as the store's other files.
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(marker)?
            .write_all(
                b"This store is served by `magrathea serve`: the `magrathea` command drives its \
                  runs under the served tree's rules.\n",
            )
    }

    /// The store as messages name it: the redb file, or the URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Self::Redb(dir) => dir.join("journal.redb").display().to_string(),
            Self::Postgres(url) => magrathea_postgres::redact(url),
        }
    }

    /// `builder` with this store: the redb file (its directory is created by the engine), or a
    /// connection to the database, whose schema is created or migrated now.
    pub fn install(&self, builder: EngineBuilder) -> Result<EngineBuilder, StoreError> {
        self.install_with(builder, &PgOptions::default())
    }

    /// [`StoreLocation::install`], with `options` for a PostgreSQL store's leases.
    pub fn install_with(
        &self,
        builder: EngineBuilder,
        options: &PgOptions,
    ) -> Result<EngineBuilder, StoreError> {
        Ok(match self {
            // The directory store counts a task's re-executions itself, with the same limit.
            Self::Redb(dir) => builder
                .path(dir.join("journal.redb"))
                .max_claim_attempts(options.max_claim_attempts),
            Self::Postgres(url) => builder.store(Arc::new(
                magrathea_postgres::PgStore::connect_with(url, options.clone())?,
            )),
        })
    }
}
