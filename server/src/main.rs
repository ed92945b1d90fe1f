//! The `magrathea` command: run, validate, resume and inspect workflows of a project.
//!
//! `magrathea --help` lists the subcommands; each documents its exit codes.

mod cli;

/// mimalloc rather than glibc's malloc: the engine allocates records on the runs' threads and
/// frees them on the journal writer's, where glibc's arenas contend on their locks (the
/// figures with both are in `benches/README.md`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    cli::main().await
}
