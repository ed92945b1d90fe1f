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

use std::os::fd::{AsFd as _, AsRawFd as _};

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
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

/// The tenant-wide directory inside a tenant's directory, with the tenant's settings.
const TENANT_DIR: &str = "_tenant";

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

/// A directory (or file) a rule grants, opened once (`O_PATH`): the rule is made from this
/// descriptor, and the checks read its real path back from it, so the place checked is the
/// place granted, whatever links are swapped in between. A place that does not exist is
/// granted nothing (as before it is made).
#[derive(Debug)]
struct Place {
    /// As the settings (or the executor) name it.
    named: PathBuf,
    /// The descriptor, `None` when there is nothing there.
    fd: Option<PathFd>,
    /// Its real path, read back from the descriptor.
    real: PathBuf,
}

impl Place {
    fn open(path: &Path) -> Self {
        match PathFd::new(path) {
            Ok(fd) => {
                let link = format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
                let real = std::fs::read_link(link).unwrap_or_else(|_| real(path));
                Self {
                    named: path.to_path_buf(),
                    fd: Some(fd),
                    real,
                }
            }
            Err(_) => Self {
                named: path.to_path_buf(),
                fd: None,
                real: real(path),
            },
        }
    }

    /// The rule granting `access` beneath this place (file rights only, for a file).
    fn rule(&self, access: BitFlags<AccessFs>) -> Option<PathBeneath<&PathFd>> {
        let fd = self.fd.as_ref()?;
        let is_file = std::fs::metadata(&self.real).is_ok_and(|m| !m.is_dir());
        let access = if is_file {
            access & AccessFs::from_file(FS_ABI)
        } else {
            access
        };
        Some(PathBeneath::new(fd, access))
    }
}

/// The rules granting `access` beneath each of `places` that exists.
fn rules(
    places: &[Place],
    access: BitFlags<AccessFs>,
) -> impl Iterator<Item = Result<PathBeneath<&PathFd>, landlock::RulesetError>> {
    places.iter().filter_map(move |p| p.rule(access)).map(Ok)
}

/// What a sandboxed shell step may read and write.
#[derive(Debug)]
pub(super) struct Sandbox {
    /// The system directories, read and execute.
    system: Vec<PathBuf>,
    /// The step's workspace and private temporary directory, read and write.
    own: [Place; 2],
    /// The tenant's `shell.readPaths`.
    read: Vec<Place>,
    /// The tenant's `shell.writePaths`.
    write: Vec<Place>,
}

impl Sandbox {
    /// The rules of a step running in `workspace` with the private temporary directory `tmp`.
    /// Every place but the system directories is opened here, once.
    pub(super) fn new(workspace: &Path, tmp: &Path, tenant: &TenantShellSettings) -> Self {
        let open = |paths: &[PathBuf]| paths.iter().map(|p| Place::open(p)).collect();
        Self {
            system: SYSTEM_READ.iter().map(PathBuf::from).collect(),
            own: [Place::open(workspace), Place::open(tmp)],
            read: open(&tenant.read_paths),
            write: open(&tenant.write_paths),
        }
    }

    /// The real path of the workspace as opened: the one checked, unless something moved it
    /// since.
    pub(super) fn workspace(&self) -> &Path {
        &self.own[0].real
    }

    /// The path of the tenant's settings that lets the step into `protected` (the document
    /// tree, or the server's store) other than through the tenant's own projects under `own`
    /// (the tenant's directory): one inside another tenant, `_auth/`, the store, or the
    /// tenant's own `_tenant/`, whose settings decide the sandbox itself. Compared by the real
    /// paths of what the rules grant, so a link that leads out counts where it led when it
    /// was opened.
    pub(super) fn grants_inside(&self, protected: &Path, own: Option<&Path>) -> Option<PathBuf> {
        let protected = real(protected);
        let own = own.map(real);
        let settings = own.as_ref().map(|own| own.join(TENANT_DIR));
        let owned = |p: &Path| {
            own.as_ref().is_some_and(|own| p.starts_with(own))
                && !settings.as_ref().is_some_and(|s| p.starts_with(s))
        };
        self.read
            .iter()
            .chain(&self.write)
            .find(|place| {
                // A place above the tenant's `_tenant/` (the tenant's directory itself) holds
                // it too.
                let holds_settings = settings
                    .as_ref()
                    .is_some_and(|s| s.starts_with(&place.real));
                place.real.starts_with(&protected) && (!owned(&place.real) || holds_settings)
            })
            .map(|place| place.named.clone())
    }

    /// The path of the rules that lets the step read or write `protected` (the document
    /// root), if one does: Landlock only grants, so a subtree of an allowed directory cannot
    /// be carved out of it again. Compared by real paths.
    pub(super) fn exposes(&self, protected: &Path) -> Option<PathBuf> {
        let protected = real(protected);
        let system = self.system.iter().find(|p| protected.starts_with(real(p)));
        system.cloned().or_else(|| {
            self.own
                .iter()
                .chain(&self.read)
                .chain(&self.write)
                .find(|place| place.fd.is_some() && protected.starts_with(&place.real))
                .map(|place| place.named.clone())
        })
    }

    /// Builds the ruleset and confines the calling thread with it.
    fn restrict_current_thread(&self) -> Result<(), SandboxError> {
        let setup = |e: landlock::RulesetError| SandboxError::Setup(e.to_string());
        let read = AccessFs::from_read(FS_ABI);
        let all = AccessFs::from_all(FS_ABI);
        // Everything in the step's own places but device nodes: one made there would open the
        // device it names (the kernel's log, a disk) with the server's rights.
        let own = all & !(AccessFs::MakeChar | AccessFs::MakeBlock);
        let status = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)
            .map_err(setup)?
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(setup)?
            .create()
            .map_err(setup)?
            .add_rules(path_beneath_rules(&self.system, read))
            .map_err(setup)?
            .add_rules(rules(&self.read, read))
            .map_err(setup)?
            .add_rules(path_beneath_rules(DEVICES, read | AccessFs::WriteFile))
            .map_err(setup)?
            .add_rules(rules(&self.own, own))
            .map_err(setup)?
            .add_rules(rules(&self.write, own))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A tenant's read path that is a link, swapped after the sandbox was made (and checked):
    /// the step reads where the link led then, not where it leads now.
    #[tokio::test]
    async fn a_link_swapped_after_the_check_grants_only_where_it_led() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (name, text) in [("mine", "mine"), ("theirs", "theirs")] {
            std::fs::create_dir(root.join(name)).unwrap();
            std::fs::write(root.join(name).join("f"), text).unwrap();
        }
        let link = root.join("link");
        std::os::unix::fs::symlink(root.join("mine"), &link).unwrap();
        let workspace = root.join("ws");
        std::fs::create_dir(&workspace).unwrap();
        let tenant = TenantShellSettings {
            read_paths: vec![link.clone()],
            ..TenantShellSettings::default()
        };
        let sandbox = Sandbox::new(&workspace, &workspace, &tenant);
        assert_eq!(sandbox.grants_inside(&root.join("theirs"), None), None);
        // Swapped now, between the check and the rules.
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(root.join("theirs"), &link).unwrap();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!(
                "cat {0}/mine/f; echo; cat {0}/theirs/f 2>/dev/null || echo denied",
                root.display()
            ))
            .current_dir(&workspace)
            .stdout(std::process::Stdio::piped());
        let out = sandbox
            .spawn(cmd)
            .await
            .unwrap()
            .wait_with_output()
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "mine\ndenied\n");
    }
}
