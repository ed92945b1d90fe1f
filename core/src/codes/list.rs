//! The codes themselves, one file per layer of the workspace.

use super::ErrorCode;

mod engine;
mod exec;
mod server;
mod yaml;

/// Every error code of the workspace, grouped by area in the order of [`AREAS`](super::AREAS):
/// the engine's, the YAML front end's, the executors' and the server's.
pub static CODES: std::sync::LazyLock<Vec<ErrorCode>> =
    std::sync::LazyLock::new(|| [engine::CODES, yaml::CODES, exec::CODES, server::CODES].concat());
