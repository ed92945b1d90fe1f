//! The `magrathea` command: run, validate, resume and inspect workflows of a project.
//!
//! `magrathea --help` lists the subcommands; each documents its exit codes.

mod cli;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    cli::main().await
}
