//! The YAML front end's integration tests, built as one binary: linking the engine and the
//! executors into a binary per file took most of a build's disk and link time. Run one
//! module with `cargo test -p magrathea-yaml --test it <module>::`.

// Fixtures shared by the modules below.
mod common;

mod agent_task;
mod analysis;
mod conformance;
mod deadline_policy;
mod default_bounds;
mod durations;
mod fanout_input;
mod journal_growth;
mod output_caps;
mod parallel;
mod permissions;
mod run_data;
mod scheduler;
mod schema;
mod script_task;
mod shell_splice;
mod templates_over_spec;
mod templates_typed;
mod tool_task;
mod validation;
mod workflow_task_journal;
mod yaml12;
