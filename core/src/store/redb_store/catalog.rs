//! The redb store's [`Catalog`]: one table keyed `(table, key)`. Each write is its own
//! transaction with the store's durability; redb runs write transactions one at a time, so a
//! catalog write waits for a journal commit in progress (and the other way round) and the
//! read-modify-writes of `insert_new` and `swap` are atomic.

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::{RedbStore, io};
use crate::error::StoreError;
use crate::store::catalog::{self, Catalog};

const CATALOG: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("catalog");

impl RedbStore {
    /// Runs `f` in a write transaction on the catalog table and commits it.
    fn catalog_write<T>(
        &self,
        f: impl FnOnce(&mut redb::Table<'_, (&str, &str), &[u8]>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.with_db(|db| {
            let mut tx = db.begin_write().map_err(io)?;
            tx.set_durability(self.redb_durability()).map_err(io)?;
            let out = {
                let mut table = tx.open_table(CATALOG).map_err(io)?;
                f(&mut table)?
            };
            tx.commit().map_err(io)?;
            Ok(out)
        })
    }
}

impl Catalog for RedbStore {
    fn get(&self, table: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.with_db(|db| {
            let tx = db.begin_read().map_err(io)?;
            let t = match tx.open_table(CATALOG) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
                Err(e) => return Err(io(e)),
            };
            Ok(t.get((table, key)).map_err(io)?.map(|v| v.value().to_vec()))
        })
    }

    fn put(&self, table: &str, key: &str, value: &[u8]) -> Result<(), StoreError> {
        catalog::check(key, Some(value))?;
        self.catalog_write(|t| {
            t.insert((table, key), value).map_err(io)?;
            Ok(())
        })
    }

    fn insert_new(
        &self,
        table: &str,
        key: &str,
        value: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        catalog::check(key, Some(value))?;
        self.catalog_write(|t| {
            if let Some(held) = t.get((table, key)).map_err(io)? {
                return Ok(Some(held.value().to_vec()));
            }
            t.insert((table, key), value).map_err(io)?;
            Ok(None)
        })
    }

    fn swap(
        &self,
        table: &str,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<bool, StoreError> {
        catalog::check(key, Some(value))?;
        self.catalog_write(|t| {
            let held = t.get((table, key)).map_err(io)?.map(|v| v.value().to_vec());
            if held.as_deref() != expected {
                return Ok(false);
            }
            t.insert((table, key), value).map_err(io)?;
            Ok(true)
        })
    }

    fn delete(&self, table: &str, keys: &[String]) -> Result<usize, StoreError> {
        if keys.is_empty() {
            return Ok(0);
        }
        self.catalog_write(|t| {
            let mut gone = 0;
            for key in keys {
                if t.remove((table, key.as_str())).map_err(io)?.is_some() {
                    gone += 1;
                }
            }
            Ok(gone)
        })
    }

    fn scan(
        &self,
        table: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.with_db(|db| {
            let tx = db.begin_read().map_err(io)?;
            let t = match tx.open_table(CATALOG) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                Err(e) => return Err(io(e)),
            };
            let from = match after {
                Some(a) if a >= prefix => a,
                _ => prefix,
            };
            let mut out = Vec::new();
            for row in t.range((table, from)..).map_err(io)? {
                let (k, v) = row.map_err(io)?;
                let (t_name, key) = k.value();
                if t_name != table || !key.starts_with(prefix) {
                    break;
                }
                if after.is_some_and(|a| key <= a) {
                    continue;
                }
                out.push((key.to_owned(), v.value().to_vec()));
                if out.len() == limit {
                    break;
                }
            }
            Ok(out)
        })
    }
}
