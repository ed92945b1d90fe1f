//! The workloads' error: what was being done, and the failure underneath.

use std::fmt;

/// A workload could not run: `what` it was doing and the failure (an I/O or store error).
#[derive(Debug)]
pub struct Error {
    what: String,
    source: Box<dyn std::error::Error + Send + Sync>,
}

/// The workloads' result.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `what` was being done, caused by `source`.
    pub fn new(
        what: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self {
            what: what.into(),
            source: source.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.source)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// Adds what was being done to a failure.
pub(crate) trait Context<T> {
    /// The result, its error wrapped in an [`Error`] saying `what` was being done.
    fn context(self, what: &str) -> Result<T>;
}

impl<T, E: Into<Box<dyn std::error::Error + Send + Sync>>> Context<T>
    for std::result::Result<T, E>
{
    fn context(self, what: &str) -> Result<T> {
        self.map_err(|e| Error::new(what, e))
    }
}
