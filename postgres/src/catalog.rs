//! The PostgreSQL store's [`Catalog`]: one table `magrathea_catalog (tbl, key, value)`.
//! `insert_new` and `swap` are single statements, so workers sharing the database agree on
//! who inserted or swapped first.

use magrathea_core::StoreError;
use magrathea_core::store::catalog::{self, Catalog};

use crate::store::{PgStore, pg};

impl Catalog for PgStore {
    fn get(&self, table: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let (table, key) = (table.to_owned(), key.to_owned());
        self.with_client(move |client| async move {
            let row = client
                .query_opt(
                    "SELECT value FROM magrathea_catalog WHERE tbl = $1 AND key = $2",
                    &[&table, &key],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
    }

    fn put(&self, table: &str, key: &str, value: &[u8]) -> Result<(), StoreError> {
        catalog::check(key, Some(value))?;
        let (table, key, value) = (table.to_owned(), key.to_owned(), value.to_vec());
        self.with_client(move |client| async move {
            client
                .execute(
                    "INSERT INTO magrathea_catalog (tbl, key, value) VALUES ($1, $2, $3)
                     ON CONFLICT (tbl, key) DO UPDATE SET value = EXCLUDED.value",
                    &[&table, &key, &value],
                )
                .await
                .map_err(pg)?;
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
        let (table, key, value) = (table.to_owned(), key.to_owned(), value.to_vec());
        self.with_client(move |client| async move {
            loop {
                let inserted = client
                    .execute(
                        "INSERT INTO magrathea_catalog (tbl, key, value) VALUES ($1, $2, $3)
                         ON CONFLICT (tbl, key) DO NOTHING",
                        &[&table, &key, &value],
                    )
                    .await
                    .map_err(pg)?;
                if inserted == 1 {
                    return Ok(None);
                }
                let held = client
                    .query_opt(
                        "SELECT value FROM magrathea_catalog WHERE tbl = $1 AND key = $2",
                        &[&table, &key],
                    )
                    .await
                    .map_err(pg)?;
                // Deleted between the two statements: try the insert again.
                if let Some(row) = held {
                    return Ok(Some(row.get::<_, Vec<u8>>(0)));
                }
            }
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
        let (table, key, value) = (table.to_owned(), key.to_owned(), value.to_vec());
        let expected = expected.map(<[u8]>::to_vec);
        self.with_client(move |client| async move {
            let n = match expected {
                None => client
                    .execute(
                        "INSERT INTO magrathea_catalog (tbl, key, value) VALUES ($1, $2, $3)
                         ON CONFLICT (tbl, key) DO NOTHING",
                        &[&table, &key, &value],
                    )
                    .await
                    .map_err(pg)?,
                Some(expected) => client
                    .execute(
                        "UPDATE magrathea_catalog SET value = $3
                         WHERE tbl = $1 AND key = $2 AND value = $4",
                        &[&table, &key, &value, &expected],
                    )
                    .await
                    .map_err(pg)?,
            };
            Ok(n == 1)
        })
    }

    fn delete(&self, table: &str, keys: &[String]) -> Result<usize, StoreError> {
        if keys.is_empty() {
            return Ok(0);
        }
        let (table, keys) = (table.to_owned(), keys.to_vec());
        self.with_client(move |client| async move {
            let n = client
                .execute(
                    "DELETE FROM magrathea_catalog WHERE tbl = $1 AND key = ANY($2)",
                    &[&table, &keys],
                )
                .await
                .map_err(pg)?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
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
        let (table, prefix) = (table.to_owned(), prefix.to_owned());
        let after = after.map(str::to_owned);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_client(move |client| async move {
            let rows = client
                .query(
                    "SELECT key, value FROM magrathea_catalog
                     WHERE tbl = $1 AND key >= $2 AND starts_with(key, $2)
                       AND ($3::TEXT IS NULL OR key > $3)
                     ORDER BY key LIMIT $4",
                    &[&table, &prefix, &after, &limit],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, String>(0), r.get::<_, Vec<u8>>(1)))
                .collect())
        })
    }
}
