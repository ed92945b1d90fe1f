//! The catalog: small keyed values a store keeps beside its journals, for what is not a run —
//! trigger registrations, scheduler cursors, delivery records.
//!
//! A catalog is a set of named tables of `key → bytes`, keys ordered bytewise. It is written
//! directly (not through the journal writer: nothing in it is a journal record) and every
//! write is durable when it returns. Several processes may share one catalog (PostgreSQL):
//! [`Catalog::insert_new`] and [`Catalog::swap`] are atomic across all of them, which is
//! what lets two workers agree on who records a delivery or advances a cursor.
//!
//! Values are opaque bytes; callers store JSON. A key is at most [`MAX_KEY_BYTES`] and a value
//! at most [`MAX_VALUE_BYTES`].

use crate::error::StoreError;

/// The longest key a catalog accepts.
pub const MAX_KEY_BYTES: usize = 1024;
/// The largest value a catalog accepts.
pub const MAX_VALUE_BYTES: usize = 1 << 20;

/// Keyed values beside the journals; see the [module docs](self).
pub trait Catalog: Send + Sync {
    /// The value of `key` in `table`.
    fn get(&self, table: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Sets `key` to `value`, whatever it held.
    fn put(&self, table: &str, key: &str, value: &[u8]) -> Result<(), StoreError>;

    /// Sets `key` to `value` unless it holds a value already: `None` when this call inserted
    /// it, else the value it holds (unchanged).
    fn insert_new(
        &self,
        table: &str,
        key: &str,
        value: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError>;

    /// Sets `key` to `value` if it holds `expected` now (`None`: if it is absent). Whether it
    /// did.
    fn swap(
        &self,
        table: &str,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<bool, StoreError>;

    /// Removes the keys; how many were there.
    fn delete(&self, table: &str, keys: &[String]) -> Result<usize, StoreError>;

    /// At most `limit` entries of `table` whose key starts with `prefix` and sorts after
    /// `after` (when given), in key order.
    fn scan(
        &self,
        table: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError>;
}

/// Calls `f` with every entry of `table` under `prefix`, in key order, reading a page of
/// `page` entries at a time (so memory holds one page, whatever the table's size).
pub fn scan_all(
    catalog: &dyn Catalog,
    table: &str,
    prefix: &str,
    page: usize,
    mut f: impl FnMut(String, Vec<u8>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let page = page.max(1);
    let mut after: Option<String> = None;
    loop {
        let rows = catalog.scan(table, prefix, after.as_deref(), page)?;
        let done = rows.len() < page;
        for (key, value) in rows {
            after = Some(key.clone());
            f(key, value)?;
        }
        if done {
            return Ok(());
        }
    }
}

/// Checks a key and a value against the limits.
pub fn check(key: &str, value: Option<&[u8]>) -> Result<(), StoreError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(StoreError::io(format!(
            "a catalog key of {} bytes is longer than {MAX_KEY_BYTES}",
            key.len()
        )));
    }
    if let Some(v) = value
        && v.len() > MAX_VALUE_BYTES
    {
        return Err(StoreError::io(format!(
            "a catalog value of {} bytes is larger than {MAX_VALUE_BYTES}",
            v.len()
        )));
    }
    Ok(())
}

/// Catalog tests every implementation runs.
#[cfg(any(test, feature = "test-util"))]
pub mod contract {
    use super::Catalog;

    /// Runs the catalog contract against an empty catalog.
    pub fn run(c: &dyn Catalog) {
        assert_eq!(c.get("t", "a").unwrap(), None);
        c.put("t", "a", b"1").unwrap();
        c.put("u", "a", b"other table").unwrap();
        assert_eq!(c.get("t", "a").unwrap().as_deref(), Some(&b"1"[..]));
        c.put("t", "a", b"2").unwrap();
        assert_eq!(c.get("t", "a").unwrap().as_deref(), Some(&b"2"[..]));

        // insert_new: first wins, the second learns the first's value.
        assert_eq!(c.insert_new("t", "b", b"first").unwrap(), None);
        assert_eq!(
            c.insert_new("t", "b", b"second").unwrap().as_deref(),
            Some(&b"first"[..])
        );
        assert_eq!(c.get("t", "b").unwrap().as_deref(), Some(&b"first"[..]));

        // swap: only from the expected value.
        assert!(!c.swap("t", "b", Some(b"nope"), b"x").unwrap());
        assert!(c.swap("t", "b", Some(b"first"), b"x").unwrap());
        assert_eq!(c.get("t", "b").unwrap().as_deref(), Some(&b"x"[..]));
        assert!(!c.swap("t", "c", Some(b"x"), b"y").unwrap());
        assert!(c.swap("t", "c", None, b"y").unwrap());
        assert!(!c.swap("t", "c", None, b"z").unwrap());

        // scan: prefix, order, after, limit; other tables apart.
        for k in ["p/3", "p/1", "p/2", "q/1", "p"] {
            c.put("s", k, k.as_bytes()).unwrap();
        }
        let keys = |v: Vec<(String, Vec<u8>)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(
            keys(c.scan("s", "p/", None, 10).unwrap()),
            ["p/1", "p/2", "p/3"]
        );
        assert_eq!(
            keys(c.scan("s", "p/", Some("p/1"), 10).unwrap()),
            ["p/2", "p/3"]
        );
        assert_eq!(keys(c.scan("s", "p/", None, 2).unwrap()), ["p/1", "p/2"]);
        assert_eq!(
            keys(c.scan("s", "", None, 10).unwrap()),
            ["p", "p/1", "p/2", "p/3", "q/1"]
        );
        assert!(c.scan("s", "p/", None, 0).unwrap().is_empty());
        assert!(c.scan("none", "", None, 10).unwrap().is_empty());

        // delete counts what was there.
        let gone = c
            .delete("s", &["p/1".into(), "p/9".into(), "q/1".into()])
            .unwrap();
        assert_eq!(gone, 2);
        assert_eq!(
            keys(c.scan("s", "", None, 10).unwrap()),
            ["p", "p/2", "p/3"]
        );
        assert_eq!(
            c.get("u", "a").unwrap().as_deref(),
            Some(&b"other table"[..])
        );

        // Limits.
        assert!(
            c.put("t", &"k".repeat(super::MAX_KEY_BYTES + 1), b"v")
                .is_err()
        );
    }
}

/// A store's catalog that can be kept and cloned: what [`Engine::catalog`](crate::Engine::catalog)
/// hands out.
#[derive(Clone)]
pub struct SharedCatalog {
    store: std::sync::Arc<dyn super::Store>,
}

impl std::fmt::Debug for SharedCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCatalog").finish_non_exhaustive()
    }
}

impl SharedCatalog {
    /// The catalog of `store`, if it keeps one.
    pub fn of(store: std::sync::Arc<dyn super::Store>) -> Option<Self> {
        store.catalog().is_some().then_some(Self { store })
    }
}

impl SharedCatalog {
    fn inner(&self) -> Result<&dyn Catalog, StoreError> {
        self.store
            .catalog()
            .ok_or_else(|| StoreError::io("the store keeps no catalog"))
    }
}

impl Catalog for SharedCatalog {
    fn get(&self, table: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner()?.get(table, key)
    }

    fn put(&self, table: &str, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.inner()?.put(table, key, value)
    }

    fn insert_new(
        &self,
        table: &str,
        key: &str,
        value: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner()?.insert_new(table, key, value)
    }

    fn swap(
        &self,
        table: &str,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<bool, StoreError> {
        self.inner()?.swap(table, key, expected, value)
    }

    fn delete(&self, table: &str, keys: &[String]) -> Result<usize, StoreError> {
        self.inner()?.delete(table, keys)
    }

    fn scan(
        &self,
        table: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.inner()?.scan(table, prefix, after, limit)
    }
}
