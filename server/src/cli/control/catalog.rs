//! The store's catalog over the control socket: how `magrathea schedules` and `deliveries`
//! read and write trigger state while another process owns the store.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use magrathea_core::{Catalog, Engine, StoreError};
use serde::{Deserialize, Serialize};

use super::{MAX_REPLY_BYTES, Reply, Request};

/// One catalog operation (see [`Catalog`]).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum CatalogOp {
    Get {
        table: String,
        key: String,
    },
    Put {
        table: String,
        key: String,
        value: Vec<u8>,
    },
    InsertNew {
        table: String,
        key: String,
        value: Vec<u8>,
    },
    Swap {
        table: String,
        key: String,
        expected: Option<Vec<u8>>,
        value: Vec<u8>,
    },
    Delete {
        table: String,
        keys: Vec<String>,
    },
    Scan {
        table: String,
        prefix: String,
        after: Option<String>,
        limit: usize,
    },
}

/// What a catalog operation returned.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "camelCase")]
pub(crate) enum CatalogResult {
    Value { value: Option<Vec<u8>> },
    Done { done: bool },
    Count { count: usize },
    Rows { rows: Vec<(String, Vec<u8>)> },
}

/// Applies `op` to the engine's catalog (the owner's side).
pub(crate) fn apply(engine: &Engine, op: CatalogOp) -> Result<CatalogResult, StoreError> {
    let catalog = engine
        .catalog()
        .ok_or_else(|| StoreError::io("the store keeps no catalog"))?;
    Ok(match op {
        CatalogOp::Get { table, key } => CatalogResult::Value {
            value: catalog.get(&table, &key)?,
        },
        CatalogOp::Put { table, key, value } => {
            catalog.put(&table, &key, &value)?;
            CatalogResult::Done { done: true }
        }
        CatalogOp::InsertNew { table, key, value } => CatalogResult::Value {
            value: catalog.insert_new(&table, &key, &value)?,
        },
        CatalogOp::Swap {
            table,
            key,
            expected,
            value,
        } => CatalogResult::Done {
            done: catalog.swap(&table, &key, expected.as_deref(), &value)?,
        },
        CatalogOp::Delete { table, keys } => CatalogResult::Count {
            count: catalog.delete(&table, &keys)?,
        },
        CatalogOp::Scan {
            table,
            prefix,
            after,
            limit,
        } => CatalogResult::Rows {
            rows: catalog.scan(&table, &prefix, after.as_deref(), limit)?,
        },
    })
}

/// The catalog of the store an owner holds, reached over its socket. Each call is one
/// blocking exchange.
#[derive(Debug, Clone)]
pub(crate) struct RemoteCatalog {
    pub(crate) socket: PathBuf,
}

impl RemoteCatalog {
    fn call(&self, op: CatalogOp) -> Result<CatalogResult, StoreError> {
        let gone = |e: &dyn std::fmt::Display| {
            StoreError::io(format!(
                "the process that owns the store did not answer: {e}"
            ))
        };
        let key = super::read_key(&self.socket)
            .map_err(|e| StoreError::io(format!("{:#}", super::client::no_key(&e))))?;
        let address = super::address::Address::of(&self.socket).map_err(|e| gone(&e))?;
        let mut stream = UnixStream::connect(&address.path).map_err(|e| gone(&e))?;
        // A stopped owner still accepts connections; it must not hold the caller for ever.
        stream
            .set_read_timeout(Some(super::client::ANSWER_WAIT))
            .map_err(|e| gone(&e))?;
        let mut line = key.into_bytes();
        line.push(b'\n');
        serde_json::to_writer(&mut line, &Request::Catalog { call: op }).map_err(|e| gone(&e))?;
        line.push(b'\n');
        stream.write_all(&line).map_err(|e| gone(&e))?;
        let mut reply = Vec::new();
        BufReader::new(stream.take(MAX_REPLY_BYTES))
            .read_until(b'\n', &mut reply)
            .map_err(|e| gone(&e))?;
        match serde_json::from_slice::<Reply>(&reply).map_err(|e| gone(&e))? {
            Reply::Catalog { result } => Ok(result),
            Reply::Error { message } => Err(StoreError::io(message)),
            other => Err(gone(&format!("unexpected reply {other:?}"))),
        }
    }
}

fn mismatch() -> StoreError {
    StoreError::io("the owner answered a catalog call with another kind of result")
}

impl Catalog for RemoteCatalog {
    fn get(&self, table: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.call(CatalogOp::Get {
            table: table.into(),
            key: key.into(),
        })? {
            CatalogResult::Value { value } => Ok(value),
            _ => Err(mismatch()),
        }
    }

    fn put(&self, table: &str, key: &str, value: &[u8]) -> Result<(), StoreError> {
        match self.call(CatalogOp::Put {
            table: table.into(),
            key: key.into(),
            value: value.to_vec(),
        })? {
            CatalogResult::Done { .. } => Ok(()),
            _ => Err(mismatch()),
        }
    }

    fn insert_new(
        &self,
        table: &str,
        key: &str,
        value: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        match self.call(CatalogOp::InsertNew {
            table: table.into(),
            key: key.into(),
            value: value.to_vec(),
        })? {
            CatalogResult::Value { value } => Ok(value),
            _ => Err(mismatch()),
        }
    }

    fn swap(
        &self,
        table: &str,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<bool, StoreError> {
        match self.call(CatalogOp::Swap {
            table: table.into(),
            key: key.into(),
            expected: expected.map(<[u8]>::to_vec),
            value: value.to_vec(),
        })? {
            CatalogResult::Done { done } => Ok(done),
            _ => Err(mismatch()),
        }
    }

    fn delete(&self, table: &str, keys: &[String]) -> Result<usize, StoreError> {
        match self.call(CatalogOp::Delete {
            table: table.into(),
            keys: keys.to_vec(),
        })? {
            CatalogResult::Count { count } => Ok(count),
            _ => Err(mismatch()),
        }
    }

    fn scan(
        &self,
        table: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        match self.call(CatalogOp::Scan {
            table: table.into(),
            prefix: prefix.into(),
            after: after.map(str::to_owned),
            limit,
        })? {
            CatalogResult::Rows { rows } => Ok(rows),
            _ => Err(mismatch()),
        }
    }
}
