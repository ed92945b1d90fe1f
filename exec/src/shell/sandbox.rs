//! The shell sandbox: Landlock rules that confine a shell step's process tree to the
//! filesystem it needs.
//!
//! Allowed to read and execute: the system directories (`/usr`, `/bin`, `/sbin`, `/lib*`,
//! `/etc`, `/opt`, `/sys`), a few device files (`/dev/null`, `/dev/zero`,
//! `/dev/full`, `/dev/random`, `/dev/urandom`, `/dev/tty`, read and write), and the tenant's
//! `shell.readPaths`. Allowed to read, write and execute: the step's workspace directory, its
//! private temporary directory and the tenant's `shell.writePaths`. Everything else — the
//! document root with other projects, other tenants and `_auth/`, `/tmp`, `/root`, `/home`,
//! block devices — is denied, to root as well. `/proc` is denied too: it holds every
//! process's environment (the server's included), and not every kernel that enforces
//! Landlock's filesystem rules also enforces its ptrace rule that would hide them; a tenant
//! that needs `ps` or `/dev/fd` lists `/proc` in `shell.readPaths`. The process may also not
//! signal processes outside its sandbox nor reach abstract Unix sockets created outside it
//! (where the kernel knows these scopes, ABI 6). Network, CPU, memory and other system calls
//! are not confined.
//!
//! **How it is applied.** Landlock confines the thread that calls `landlock_restrict_self`
//! and every process that thread starts afterwards. The executor therefore starts each
//! sandboxed command from a fresh OS thread of its own: the thread builds the ruleset, confines
//! itself (which also sets its `no_new_privs`), spawns `sh`, hands the child back and ends. No
//! other thread of the server is confined, no code runs between `fork` and `exec` beyond the
//! standard library's own, and no thread that carries the sandbox is ever reused.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};
use tokio::process::{Child, Command};

use crate::settings::TenantShellSettings;

/// System directories a shell step may read and execute from.
const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys",
];

/// Device files a shell step may read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The Landlock ABI whose rights the sandbox asks for; older kernels enforce what they know.
const FS_ABI: ABI = ABI::V5;

/// Why a sandboxed command did not start.
#[derive(Debug)]
pub(super) enum SandboxError {
    /// The kernel does not enforce Landlock.
    Unavailable,
    /// The ruleset could not be built or applied.
    Setup(String),
    /// `sh` could not be started.
    Spawn(std::io::Error),
}

/// What a sandboxed shell step may read and write.
#[derive(Debug, Clone)]
pub(super) struct Sandbox {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    /// The paths of the tenant's `shell.readPaths` and `writePaths`.
    granted: Vec<PathBuf>,
}

impl Sandbox {
    /// The rules of a step running in `workspace` with the private temporary directory `tmp`.
    pub(super) fn new(workspace: &Path, tmp: &Path, tenant: &TenantShellSettings) -> Self {
        let mut write = vec![workspace.to_path_buf(), tmp.to_path_buf()];
        write.extend(tenant.write_paths.iter().cloned());
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        read.extend(tenant.read_paths.iter().cloned());
        let granted = tenant
            .read_paths
            .iter()
            .chain(&tenant.write_paths)
            .cloned()
            .collect();
        Self {
            read,
            write,
            granted,
        }
    }

    /// The path of the tenant's settings that lets the step into `protected` (the document
    /// tree, or the server's store) other than through the tenant's own directory `own`: one
    /// inside another tenant, `_auth/` or the store. Compared by real paths, so a link inside
    /// the tenant's directory that leads out of it counts where it leads.
    pub(super) fn grants_inside(&self, protected: &Path, own: Option<&Path>) -> Option<PathBuf> {
        let protected = real(protected);
        let own = own.map(real);
        self.granted
            .iter()
            .find(|granted| {
                let granted = real(granted);
                granted.starts_with(&protected)
                    && !own.as_ref().is_some_and(|own| granted.starts_with(own))
            })
            .cloned()
    }

    /// The path of the rules that lets the step read or write `protected` (the document
    /// root), if one does: Landlock only grants, so a subtree of an allowed directory cannot
    /// be carved out of it again. Compared by real paths.
    pub(super) fn exposes(&self, protected: &Path) -> Option<PathBuf> {
        let protected = real(protected);
        self.read
            .iter()
            .chain(&self.write)
            .find(|allowed| protected.starts_with(real(allowed)))
            .cloned()
    }

    /// Builds the ruleset and confines the calling thread with it.
    fn restrict_current_thread(&self) -> Result<(), SandboxError> {
        let setup = |e: landlock::RulesetError| SandboxError::Setup(e.to_string());
        let read = AccessFs::from_read(FS_ABI);
        let all = AccessFs::from_all(FS_ABI);
        let status = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)
            .map_err(setup)?
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(setup)?
            .create()
            .map_err(setup)?
            .add_rules(path_beneath_rules(&self.read, read))
            .map_err(setup)?
            .add_rules(path_beneath_rules(DEVICES, read | AccessFs::WriteFile))
            .map_err(setup)?
            .add_rules(path_beneath_rules(&self.write, all))
            .map_err(setup)?
            .restrict_self()
            .map_err(setup)?;
        match status.ruleset {
            RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
            RulesetStatus::NotEnforced => Err(SandboxError::Unavailable),
        }
    }

    /// Spawns `cmd` confined by the sandbox, from a fresh thread that ends right after.
    pub(super) async fn spawn(self, mut cmd: Command) -> Result<Child, SandboxError> {
        let runtime = tokio::runtime::Handle::current();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("magrathea-shell-sandbox".into())
            .spawn(move || {
                let result = self.restrict_current_thread().and_then(|()| {
                    // The child's pipes register with the runtime's reactor.
                    let _entered = runtime.enter();
                    cmd.spawn().map_err(SandboxError::Spawn)
                });
                let _ = tx.send(result);
            })
            .map_err(SandboxError::Spawn)?;
        let result = rx
            .await
            .unwrap_or_else(|_| Err(SandboxError::Setup("the sandbox thread panicked".into())));
        // The thread has sent its result and is ending; it holds nothing of ours.
        drop(thread);
        result
    }
}

/// The real path of `p` (links resolved), or `p` as written when it cannot be resolved.
fn real(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Whether this kernel enforces Landlock (checked by confining a throwaway thread).
pub fn available() -> bool {
    std::thread::spawn(|| {
        Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(FS_ABI))
            .and_then(|r| r.create())
            .and_then(|r| r.restrict_self())
            .map(|s| s.ruleset != RulesetStatus::NotEnforced)
            .unwrap_or(false)
    })
    .join()
    .unwrap_or(false)
}
