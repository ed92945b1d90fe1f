//! A throwaway PostgreSQL cluster for tests (with the `test-util` feature): `initdb` into a
//! temporary directory and `postgres` on a free loopback port, from the system's PostgreSQL
//! packages, as an unprivileged user. Nothing of it is a mock.
//!
//! The server is stopped (immediate shutdown) and its directory removed when the
//! [`TestCluster`] is dropped — and also when the test process dies without dropping it, for
//! instance when a test binary's static cluster outlives `main`: the server runs under a small
//! shell that waits on a pipe from the test process, and when the pipe closes stops the server
//! and removes its directory.
//!
//! Binaries are looked up in `$MAGRATHEA_PG_BIN`, then the newest `/usr/lib/postgresql/*/bin`,
//! then `PATH`. Run as root, the cluster runs as the `postgres` user if there is one, else
//! `nobody` (PostgreSQL refuses to run as root).

mod relay;

pub use relay::Relay;

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A running PostgreSQL server of a test's own.
#[derive(Debug)]
pub struct TestCluster {
    dir: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
    /// Closing it stops the server (see the module docs).
    guard: Mutex<Option<(Child, ChildStdin)>>,
    databases: AtomicUsize,
}

/// The superuser the cluster is initialised with.
const SUPERUSER: &str = "magrathea";

impl TestCluster {
    /// Initialises and starts a cluster; panics with what is missing when PostgreSQL is not
    /// installed (`.ci/run` installs it).
    pub fn start() -> Self {
        let bin = find_bin();
        let user = unprivileged_user();
        let dir = tempfile::Builder::new()
            .prefix("magrathea-pg-")
            .tempdir()
            .expect("a temporary directory");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        if let Some(u) = &user {
            for p in [dir.path(), data.as_path()] {
                std::os::unix::fs::chown(p, Some(u.uid.as_raw()), Some(u.gid.as_raw())).unwrap();
            }
        }
        let out = as_user(Command::new(bin.join("initdb")), user.as_ref())
            .args(["--auth=trust", "--encoding=UTF8", "--no-sync"])
            .arg(format!("--username={SUPERUSER}"))
            .arg("-D")
            .arg(&data)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.join("initdb").display()));
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = free_port();
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .unwrap();
        writeln!(
            conf,
            "listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = ''\n\
             max_connections = 200\nfsync = on\nsynchronous_commit = on"
        )
        .unwrap();
        drop(conf);
        // `read` returns when the test process's end of the pipe closes, however it ends.
        let mut guard = as_user(Command::new("sh"), user.as_ref())
            .arg("-c")
            .arg(
                "\"$0\" -D \"$1\" >\"$1/server.log\" 2>&1 & pid=$!; \
                 read _; kill -QUIT $pid 2>/dev/null; wait $pid; rm -rf \"$2\"",
            )
            .arg(bin.join("postgres"))
            .arg(&data)
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh");
        let stdin = guard.stdin.take().unwrap();
        let cluster = Self {
            dir,
            port,
            bin,
            guard: Mutex::new(Some((guard, stdin))),
            databases: AtomicUsize::new(0),
        };
        cluster.wait_ready();
        cluster
    }

    /// The URL of the `postgres` database.
    pub fn url(&self) -> String {
        self.url_of("postgres")
    }

    /// The URL of `database` on this cluster.
    pub fn url_of(&self, database: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates a fresh, empty database and returns its URL: one per test, so tests sharing a
    /// cluster never see each other's runs.
    pub fn create_database(&self) -> String {
        let n = self.databases.fetch_add(1, Ordering::Relaxed);
        let name = format!("test_{}_{n}", std::process::id());
        self.psql(&format!("CREATE DATABASE {name}"));
        self.url_of(&name)
    }

    /// Runs `sql` with `psql` on the `postgres` database; panics on failure.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_on(&self.url(), sql)
    }

    /// Runs `sql` with `psql` on the database of `url` (one of [`TestCluster::url_of`]);
    /// panics on failure.
    pub fn psql_on(&self, url: &str, sql: &str) -> String {
        let psql = self.bin.join("psql");
        let psql = if psql.exists() {
            psql
        } else {
            PathBuf::from("psql")
        };
        let out = Command::new(psql)
            .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(url)
            .args(["-c", sql])
            .output()
            .expect("psql");
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// The port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("data/server.log")).unwrap_or_default()
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "PostgreSQL did not start within 60 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let taken = self.guard.lock().map(|mut g| g.take());
        if let Ok(Some((mut child, stdin))) = taken {
            drop(stdin); // the shell stops the server
            let _ = child.wait();
        }
    }
}

fn as_user(mut cmd: Command, user: Option<&nix::unistd::User>) -> Command {
    if let Some(u) = user {
        cmd.uid(u.uid.as_raw()).gid(u.gid.as_raw());
        cmd.env("HOME", "/tmp");
    }
    cmd
}

/// `None` when not root; else the user PostgreSQL runs as.
fn unprivileged_user() -> Option<nix::unistd::User> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    ["postgres", "nobody"]
        .into_iter()
        .find_map(|name| nix::unistd::User::from_name(name).ok().flatten())
        .or_else(|| panic!("running as root, and neither a postgres nor a nobody user exists"))
}

fn find_bin() -> PathBuf {
    if let Some(dir) = std::env::var_os("MAGRATHEA_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .find(|dir| dir.join("initdb").exists() && dir.join("postgres").exists());
    on_path.unwrap_or_else(|| {
        panic!(
            "PostgreSQL is not installed: no initdb under /usr/lib/postgresql/*/bin or on PATH \
             (install Debian's postgresql package, as .ci/run does, or set MAGRATHEA_PG_BIN)"
        )
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
