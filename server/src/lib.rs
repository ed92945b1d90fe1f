//! magrathea-server: the Magrathea HTTP server and the `magrathea` command-line binary.
//!
//! The server lives in [`http`]: [`serve`] a [`ServeConfig`] to get the bound address and a
//! [`ServerHandle`]; `magrathea serve` does the same from the command line. An application
//! that builds its own engine, with code workflows and tasks, serves it with [`Server`]. The routes are
//! documented at `GET /openapi.json` and in [`http::routes`]; tokens in [`http::auth`].
//!
//! The binary's commands live in `src/cli/` and are private to it; their contract (arguments,
//! output formats, exit codes) is documented in `magrathea --help` and tested in
//! `tests/cli.rs` and `tests/cli_contract.rs`. Exit codes shared by the commands that drive a
//! run (`run`, `inbox answer`, `cancel`):
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | the run is `DONE` |
//! | 1 | the run is `FAILED`, `CANCELLED` or `BLOCKED`, or the command failed (store in use, unknown run, …) |
//! | 2 | invalid document, parameters or answer: nothing was started or answered |
//! | 3 | the run waits on a gate (`WAITING`): answer it with `magrathea inbox answer` |
//! | 130 | interrupted (Ctrl-C) while driving the run; it stays as journaled, `magrathea resume` carries it on |
//!
//! `resume` exits 1 when a run it resumed is `FAILED`, `CANCELLED` or `BLOCKED`, else 0. A
//! reader that closes stdout early (`magrathea journal RUN | head -1`) ends a command quietly:
//! exit 0, or the run's code for the commands above.

mod atomic_write;
pub mod editor_graph;
pub mod http;
pub mod pending;
mod project_files;
mod store_location;
mod tenant_queues;
mod tenant_shares;
mod tree;
pub mod triggers;
pub mod versions;
pub mod webhook;

pub use http::{
    Access, ConnectionLimits, DEFAULT_ADDR, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_SEND_TIMEOUT, ServeConfig, ServeError,
    Server, ServerHandle, serve,
};
pub use store_location::StoreLocation;
