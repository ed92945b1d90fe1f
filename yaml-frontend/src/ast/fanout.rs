//! The fan-out states' parts of the document model: `parallel_task` branches, a branch's
//! sub-run, `maxParallelism` and `toleratedFailures`.

use serde_json::Value;

use crate::diagnostic::Span;

/// One named branch of a `parallel_task`.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// The branch's name (its key under `branches:`).
    pub name: String,
    /// What the branch runs.
    pub body: BranchBody,
    /// Position of the branch's key.
    pub span: Span,
}

/// What a branch (or each item of a `foreach_task`) runs as its sub-run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BranchBody {
    /// `workflow:` (+ `params:`): a sub-run of a workflow document, as a `workflow_task`.
    Workflow {
        /// The workflow's name (may hold `${…}`).
        workflow: String,
        /// Its parameters (`null` when absent; may hold `${…}`).
        params: Value,
    },
    /// `start:` + `states:`: an inline list of states, frozen as a document of its own.
    Inline {
        /// The branch's document (JSON text, which is YAML), validated at load time.
        definition: String,
        /// `params:` of a `foreach_task` with an inline body (`null` otherwise).
        params: Value,
    },
}

/// How a fan-out runs its sub-runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FanOut {
    /// `maxParallelism`: sub-runs in flight at once (`None`: all at once).
    pub max_parallelism: Option<u32>,
    /// `toleratedFailures`.
    pub tolerated: Tolerance,
}

/// `toleratedFailures`: how many sub-runs may fail before the fan-out fails.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Tolerance {
    /// A count of failed sub-runs (the default: 0).
    Count(u64),
    /// A percentage of all the sub-runs (`"25%"`).
    Percent(f64),
}

impl Default for Tolerance {
    fn default() -> Self {
        Self::Count(0)
    }
}

impl Tolerance {
    /// Whether `failures` failed sub-runs out of `total` exceed the tolerance.
    #[must_use]
    pub fn exceeded(self, failures: usize, total: usize) -> bool {
        match self {
            Self::Count(n) => failures as u64 > n,
            Self::Percent(p) => failures as f64 * 100.0 > p * total as f64,
        }
    }
}
