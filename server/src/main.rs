//! The `magrathea` command: run, validate, resume and inspect workflows of a project.
//!
//! `magrathea --help` lists the subcommands; each documents its exit codes.

mod cli;

/// mimalloc rather than glibc's malloc: the engine allocates records on the runs' threads and
/// frees them on the journal writer's, where glibc's arenas contend on their locks (the
/// figures with both are in `benches/README.md`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let code = runtime.block_on(cli::main());
    // The command is done: a call still blocked on a store that stopped answering (a
    // database cut off by the network) must not keep the process alive, as dropping the
    // runtime would, waiting for it.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    code
}

/// How long work left on the runtime may take to end once the command is done.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
