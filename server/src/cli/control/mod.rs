//! The control socket of a store's owner: how `magrathea` processes share one redb store.
//!
//! A redb file is opened by one process at a time (its file lock says which). That process,
//! the *owner* (`magrathea serve`, `run`, `resume`, `inbox answer`), serves a Unix domain
//! socket `<store>/control.sock` while it holds the store; a command that finds the store
//! locked becomes the owner's *client* and asks it instead of failing: `runs list|show`,
//! `journal`, `inbox list|answer` and `run` (the owner starts and drives the run, the client
//! follows its progress). Commands are written once against [`super::backend::Backend`], so a
//! client prints what the owner-less command prints, byte for byte.
//!
//! The protocol is JSON lines: the client sends one [`Request`] line; the owner answers with
//! one [`Reply`] line, or, for a start or a gate answer, a stream of replies that ends with
//! [`Reply::Settled`] (or [`Reply::Error`]). A client that closes its end stops the stream;
//! the run goes on.
//!
//! Trust: the socket is created with mode 0600 in the store directory, and each connection
//! first sends the store's control key, a random secret the owner writes to
//! `<store>/control.key` (mode 0600) before it serves the socket; a connection without it is
//! refused (`[MAG-CS004]`). So the socket admits only processes that can read the store
//! directory, who could open the redb file itself: connecting needs no read right on the
//! directory, and a sandboxed shell step, which may run as the owner's user but is denied the
//! store directory, could otherwise read and drive every tenant's runs. The owner serves
//! [`MAX_CLIENTS`] connections at once (more wait) and reads requests of at most
//! [`MAX_REQUEST_BYTES`].
//!
//! A store directory deeper than a socket's address may be is reached through a handle on it
//! ([`address`]).
//!
//! The redb lock, not the socket, says who owns the store: an owner that crashed leaves its
//! socket file behind, and the next owner (it holds the lock) replaces it.

mod address;
pub(crate) mod catalog;
pub(crate) mod client;
pub(crate) mod owner;

use std::path::{Path, PathBuf};

use magrathea_core::{Entry, GateAnswer, InboxItem, RunId, RunStatus, RunView, StartRequest};
use magrathea_core::{Frontend, RunScope};
use magrathea_server::http::runs::RunDto;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::backend::{Answered, Cancelled, ControlOp, Controlled};

/// The socket's file name in the store directory.
pub(crate) const SOCKET_NAME: &str = "control.sock";

/// Connections an owner serves at once; further clients wait until one closes.
pub(crate) const MAX_CLIENTS: usize = 32;

/// The largest request line an owner reads (a start carries the frozen document).
pub(crate) const MAX_REQUEST_BYTES: u64 = 4 << 20;

/// The largest reply line a client reads (a whole journal, or every run of a project).
pub(crate) const MAX_REPLY_BYTES: u64 = 1 << 30;

/// The control key's file name in the store directory.
pub(crate) const KEY_NAME: &str = "control.key";

/// The longest first line an owner reads: the control key (64 hex digits) with room to spare.
pub(crate) const MAX_KEY_BYTES: u64 = 256;

/// The control socket of the store in `dir`.
pub(crate) fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SOCKET_NAME)
}

/// The control key beside the control socket `socket`.
pub(crate) fn key_path(socket: &Path) -> PathBuf {
    socket.with_file_name(KEY_NAME)
}

/// The control key of the owner serving `socket`: the first line of each connection.
pub(crate) fn read_key(socket: &Path) -> std::io::Result<String> {
    let key = std::fs::read_to_string(key_path(socket))?;
    Ok(key.trim().to_string())
}

/// A fresh control key: 64 hex digits from the operating system's random source.
pub(crate) fn new_key() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Whether `offered` is the owner's `key`, compared in constant time.
pub(crate) fn key_matches(offered: &[u8], key: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    !key.is_empty() && bool::from(offered.ct_eq(key.as_bytes()))
}

/// What a client asks the owner.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub(crate) enum Request {
    /// What the owner is: [`Reply::Owner`].
    Owner,
    /// Runs of a scope: [`Reply::Runs`].
    ListRuns {
        workflow: Option<String>,
        scope: String,
        limit: usize,
        /// Only runs with one of these statuses (none: every status).
        #[serde(default)]
        statuses: Vec<RunStatus>,
    },
    /// One run: [`Reply::Run`].
    Run { run: RunId },
    /// Pending inbox items: [`Reply::Items`].
    Pending { scope: Option<String> },
    /// A run's journal: [`Reply::Journal`].
    Journal { run: RunId },
    /// One inbox item and its run's scope: [`Reply::Item`].
    InboxItem { id: String },
    /// Start a run: [`Reply::Started`], then the follow stream.
    Start { request: Box<WireStart> },
    /// Cancel a run: [`Reply::Cancelled`], then the follow stream.
    Cancel { run: RunId, reason: String },
    /// Answer a gate: [`Reply::Answered`], then the follow stream.
    Answer {
        run: RunId,
        id: String,
        answer: GateAnswer,
    },
    /// A call on the store's catalog (trigger state): [`Reply::Catalog`].
    Catalog { call: catalog::CatalogOp },
    /// Pause or resume a run: [`Reply::Controlled`].
    Control {
        run: RunId,
        control: ControlOp,
        by: String,
    },
}

/// What the owner answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "camelCase")]
pub(crate) enum Reply {
    Owner {
        /// Whether it recovered and drives every unfinished run of the store (`serve`,
        /// `resume`), or only those it and its clients touch.
        drives_all: bool,
    },
    Runs {
        runs: Vec<RunDto>,
    },
    Run {
        run: Option<Box<RunDto>>,
    },
    Items {
        items: Vec<InboxItem>,
    },
    Journal {
        entries: Vec<Entry>,
    },
    Item {
        item: Option<Box<InboxItem>>,
        scope: Option<String>,
    },
    Started {
        run: RunId,
    },
    Answered {
        answered: Answered,
    },
    Cancelled {
        cancelled: Cancelled,
    },
    Controlled {
        controlled: Controlled,
    },
    Update {
        run: RunId,
        entries: Vec<Entry>,
    },
    Skipped {
        count: u64,
    },
    Settled {
        view: Box<RunView>,
    },
    Catalog {
        result: catalog::CatalogResult,
    },
    /// The request failed; `message` is the error as the owner-less command would word it.
    Error {
        message: String,
    },
}

/// A [`StartRequest`] on the wire: what a command starts (the workflow document is resolved,
/// validated and frozen by the client, from its project).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireStart {
    workflow: String,
    frontend: Frontend,
    version: Option<String>,
    definition: Option<String>,
    input: Value,
    idempotency_key: Option<String>,
    started_by: String,
    scope: RunScope,
    requested_by: Option<String>,
    bounds: Option<Value>,
    #[serde(default)]
    entry: Option<magrathea_core::EntryPoint>,
}

impl From<StartRequest> for WireStart {
    fn from(r: StartRequest) -> Self {
        Self {
            workflow: r.workflow,
            frontend: r.frontend,
            version: r.version,
            definition: r.definition,
            input: r.input,
            idempotency_key: r.idempotency_key,
            started_by: r.started_by,
            scope: r.scope,
            requested_by: r.requested_by,
            bounds: r.bounds,
            entry: r.entry,
        }
    }
}

impl From<WireStart> for StartRequest {
    fn from(w: WireStart) -> Self {
        let mut r = StartRequest::code(w.workflow, w.input);
        r.frontend = w.frontend;
        r.version = w.version;
        r.definition = w.definition;
        r.idempotency_key = w.idempotency_key;
        r.started_by = w.started_by;
        r.scope = w.scope;
        r.requested_by = w.requested_by;
        r.bounds = w.bounds;
        r.entry = w.entry;
        r
    }
}
