//! Opening, writing and removing a file of a served project so that no path leaves the
//! project, however its directories change meanwhile.
//!
//! A shell step may change its project while the server works on it: between a check that a
//! path stays inside the project ([`crate::confine`]) and the server's use of that path, a step
//! can swap a directory of the path for a symbolic link to another tenant's files, and the
//! server, which has more rights than the step, would follow it. Here every path is resolved
//! by the kernel in one call relative to the project directory's descriptor, with
//! `RESOLVE_BENEATH` (`openat2(2)`): a link is followed only while it stays below that
//! directory, at the instant of the open. A write creates its directories one at a time
//! relative to their parent's descriptor, writes a temporary file there and renames it in the
//! same directory; a removal unlinks the name in its directory's descriptor. A kernel without
//! `openat2` (before Linux 5.6) gets the stricter walk of one component at a time that
//! follows no link at all.
//!
//! A path that would leave the directory is [`std::io::ErrorKind::PermissionDenied`] (see
//! [`is_outside`]).

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

/// What [`is_outside`] tells: the path leaves the directory it was resolved beneath.
#[derive(Debug)]
struct Outside(PathBuf);

impl std::fmt::Display for Outside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} leads out of its project (a symbolic link or `..`)",
            self.0.display()
        )
    }
}

impl std::error::Error for Outside {}

fn outside(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        Outside(path.to_path_buf()),
    )
}

/// Whether `e` says the path leads out of the directory it was resolved beneath.
pub fn is_outside(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Outside>())
}

/// `path` relative to `base`: `path` itself when relative; a path with `..` or one that is
/// not below `base` leads out.
fn relative<'a>(base: &Path, path: &'a Path) -> std::io::Result<&'a Path> {
    let rel = if path.is_absolute() {
        path.strip_prefix(base).map_err(|_| outside(path))?
    } else {
        path
    };
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(outside(path));
    }
    Ok(rel)
}

fn dir_fd(base: &Path) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        base,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens `rel` beneath `dir` with `flags` (and `mode` when it creates): by `openat2` with
/// `RESOLVE_BENEATH`, or, without it, one component at a time following no link.
fn open_at(dir: &OwnedFd, rel: &Path, flags: OFlags, mode: Mode) -> std::io::Result<OwnedFd> {
    open_at_with(dir, rel, flags, mode, Links::Inside)
}

/// Which symbolic links a resolution beneath a directory follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Links {
    /// Those that stay beneath it.
    Inside,
    /// None: a link anywhere on the path refuses it ([`is_through_link`]).
    None,
}

/// How often a resolution the kernel found racing a rename (`EAGAIN`) is tried again.
const RACE_RETRIES: usize = 16;

/// [`open_at`], following the `links` it says.
fn open_at_with(
    dir: &OwnedFd,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
    links: Links,
) -> std::io::Result<OwnedFd> {
    let mut resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    if links == Links::None {
        resolve |= ResolveFlags::NO_SYMLINKS;
    }
    for _ in 0..RACE_RETRIES {
        match rustix::fs::openat2(dir, rel, flags | OFlags::CLOEXEC, mode, resolve) {
            Ok(fd) => return Ok(fd),
            // A rename somewhere on the path meanwhile: the kernel cannot vouch for the
            // resolution, so it is made again.
            Err(rustix::io::Errno::AGAIN) => continue,
            // Leaving the directory: `EXDEV` from the resolution; an absolute link is one too.
            Err(rustix::io::Errno::XDEV) => return Err(outside(rel)),
            Err(rustix::io::Errno::LOOP) if links == Links::None => return Err(through_link(rel)),
            Err(rustix::io::Errno::NOSYS) => return walk(dir, rel, flags, mode),
            Err(e) => return Err(e.into()),
        }
    }
    // Renamed under every try: refused as a path that does not hold still.
    Err(outside(rel))
}

/// What [`is_through_link`] tells: a path that may follow no link goes through one.
#[derive(Debug)]
struct ThroughLink(PathBuf);

impl std::fmt::Display for ThroughLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} goes through a symbolic link", self.0.display())
    }
}

impl std::error::Error for ThroughLink {}

fn through_link(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        ThroughLink(path.to_path_buf()),
    )
}

/// Whether `e` says a path that may follow no link ([`write_atomically_no_links`],
/// [`remove_file_no_links`]) goes through one.
pub fn is_through_link(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<ThroughLink>())
}

/// [`open_at`] of `rel` beneath the directory `dir` of `base` (canonical). A link written with
/// an absolute path that stays inside `base` (the kernel's `RESOLVE_BENEATH` refuses every
/// absolute link) is resolved by its text inside `base` ([`crate::confine::resolve_inside`]),
/// and the path it resolves to opened with no link followed at all: a link swapped in after
/// that resolution is refused, not followed.
fn open_in_base(
    base: &Path,
    dir: &OwnedFd,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> std::io::Result<OwnedFd> {
    match open_at(dir, rel, flags, mode) {
        Err(e) if is_outside(&e) => {
            let Ok(real) = crate::confine::resolve_inside(base, base, &base.join(rel)) else {
                return Err(e);
            };
            let Ok(real_rel) = real.strip_prefix(base) else {
                return Err(e);
            };
            let at = if real_rel.as_os_str().is_empty() {
                Path::new(".")
            } else {
                real_rel
            };
            let resolve =
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            match rustix::fs::openat2(dir, at, flags | OFlags::CLOEXEC, mode, resolve) {
                Ok(fd) => Ok(fd),
                Err(rustix::io::Errno::XDEV | rustix::io::Errno::LOOP) => Err(outside(rel)),
                Err(rustix::io::Errno::NOSYS) => walk(dir, at, flags, mode),
                Err(e) => Err(e.into()),
            }
        }
        other => other,
    }
}

/// [`open_at`] on a kernel without `openat2`: each directory opened with `O_NOFOLLOW`, so
/// that a link anywhere on the path (even one that stays inside) is refused.
fn walk(dir: &OwnedFd, rel: &Path, flags: OFlags, mode: Mode) -> std::io::Result<OwnedFd> {
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    let Some((last, dirs)) = parts.split_last() else {
        return Ok(rustix::fs::openat(dir, ".", flags | OFlags::CLOEXEC, mode)?);
    };
    let mut at = rustix::io::fcntl_dupfd_cloexec(dir, 0)?;
    for part in dirs {
        at = rustix::fs::openat(
            &at,
            *part,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| link_refused(e, rel))?;
    }
    rustix::fs::openat(&at, *last, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, mode)
        .map_err(|e| link_refused(e, rel))
}

/// `ELOOP` of an `O_NOFOLLOW` open is a link on the path: refused as leading out.
fn link_refused(e: rustix::io::Errno, rel: &Path) -> std::io::Error {
    if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
        outside(rel)
    } else {
        e.into()
    }
}

/// Opens `path` (below `base`, or relative to it) for reading, without blocking on a named
/// pipe. The caller looks at what it opened (a regular file, its length).
///
/// # Errors
/// A path that leads out of `base` ([`is_outside`]), or the open's error.
pub fn open_read(base: &Path, path: &Path) -> std::io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
    Ok(File::from(open_beneath(base, path, flags)?))
}

/// `path` (below `base`, or relative to it; `base` itself when empty) opened with `flags`
/// beneath `base` ([`open_in_base`]).
fn open_beneath(base: &Path, path: &Path, flags: OFlags) -> std::io::Result<OwnedFd> {
    let rel = relative(base, path)?;
    let dir = dir_fd(base)?;
    let at = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    open_in_base(base, &dir, at, flags, Mode::empty())
}

/// The directory `rel` beneath `dir`, each missing directory created (mode 0755): every
/// component is opened beneath the one before, so no link leads the walk out.
fn make_dirs(dir: &OwnedFd, rel: &Path, links: Links) -> std::io::Result<OwnedFd> {
    let mut at = rustix::io::fcntl_dupfd_cloexec(dir, 0)?;
    for part in rel.components() {
        let Component::Normal(part) = part else {
            continue;
        };
        match rustix::fs::mkdirat(&at, part, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        at = open_at_with(
            &at,
            Path::new(part),
            OFlags::DIRECTORY | OFlags::RDONLY,
            Mode::empty(),
            links,
        )?;
    }
    Ok(at)
}

/// Writes `bytes` to `path` (below `base`) whole or not at all: the missing directories are
/// made beneath `base`, a temporary file is written in the file's directory, synced, and
/// renamed over the file in that same directory. The temporary file has a short name of its
/// own, and nothing of it is left behind when the write fails. A link at the file's own name
/// is replaced, never followed.
///
/// # Errors
/// A path that leads out of `base` ([`is_outside`]); a directory where the file should be
/// (`IsADirectory`); a document where a directory should be (`NotADirectory`); the
/// write's error.
pub fn write_atomically(base: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(base, path, bytes, Links::Inside)
}

/// [`write_atomically`] through no symbolic link at all, not even one that stays beneath
/// `base`: for a writer whose rights depend on where the file lies (a link inside the project
/// would put a file where the path as written does not say).
///
/// # Errors
/// As [`write_atomically`]; a link on the path is [`is_through_link`].
pub fn write_atomically_no_links(base: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(base, path, bytes, Links::None)
}

fn write_with(base: &Path, path: &Path, bytes: &[u8], links: Links) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let rel = relative(base, path)?;
    let Some(name) = rel.file_name() else {
        return Err(std::io::Error::from(std::io::ErrorKind::IsADirectory));
    };
    let dir = dir_fd(base)?;
    let parent_rel = rel.parent().unwrap_or(Path::new(""));
    let parent = if parent_rel.as_os_str().is_empty() {
        rustix::io::fcntl_dupfd_cloexec(&dir, 0)?
    } else {
        let flags = OFlags::DIRECTORY | OFlags::RDONLY;
        let opened = match links {
            Links::Inside => open_in_base(base, &dir, parent_rel, flags, Mode::empty()),
            Links::None => open_at_with(&dir, parent_rel, flags, Mode::empty(), Links::None),
        };
        match opened {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                make_dirs(&dir, parent_rel, links)?
            }
            opened => opened?,
        }
    };
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = format!(".write.{}.{n}.tmp", std::process::id());
    let fd = rustix::fs::openat(
        &parent,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )?;
    let mut file = File::from(fd);
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            // A directory at the name would take the file inside it: refused instead.
            match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir() => {
                    Err(std::io::Error::from(std::io::ErrorKind::IsADirectory))
                }
                _ => Ok(()),
            }
        })
        .and_then(|()| Ok(rustix::fs::renameat(&parent, tmp.as_str(), &parent, name)?));
    if written.is_err() {
        let _ = rustix::fs::unlinkat(&parent, tmp.as_str(), AtFlags::empty());
        return written;
    }
    // The rename is durable with its directory.
    let _ = rustix::fs::fsync(parent.as_fd());
    Ok(())
}

/// Removes the file `path` (below `base`): its name is unlinked in its directory, opened
/// beneath `base`; a link at the name is removed itself, never followed.
///
/// # Errors
/// A path that leads out of `base` ([`is_outside`]), or the removal's error (`NotFound`).
pub fn remove_file(base: &Path, path: &Path) -> std::io::Result<()> {
    unlink(base, path, AtFlags::empty(), Links::Inside)
}

/// [`remove_file`] through no symbolic link on the way to the file (see
/// [`write_atomically_no_links`]); a link at the name itself is removed as ever.
///
/// # Errors
/// As [`remove_file`]; a link on the way is [`is_through_link`].
pub fn remove_file_no_links(base: &Path, path: &Path) -> std::io::Result<()> {
    unlink(base, path, AtFlags::empty(), Links::None)
}

/// Removes the empty directory `path` (below `base`) as [`remove_file`] removes a file.
///
/// # Errors
/// As [`remove_file`]; a directory that is not empty is `DirectoryNotEmpty`.
pub fn remove_empty_dir(base: &Path, path: &Path) -> std::io::Result<()> {
    unlink(base, path, AtFlags::REMOVEDIR, Links::Inside)
}

fn unlink(base: &Path, path: &Path, flags: AtFlags, links: Links) -> std::io::Result<()> {
    let (parent, name) = parent_of(base, path, links)?;
    Ok(rustix::fs::unlinkat(&parent, name.as_os_str(), flags)?)
}

/// The directory holding `path` (below `base`), opened beneath `base`, and `path`'s name in it.
fn parent_of(
    base: &Path,
    path: &Path,
    links: Links,
) -> std::io::Result<(OwnedFd, std::ffi::OsString)> {
    let rel = relative(base, path)?;
    let Some(name) = rel.file_name() else {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    };
    let dir = dir_fd(base)?;
    let flags = OFlags::DIRECTORY | OFlags::RDONLY;
    let parent = match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) if links == Links::None => open_at_with(&dir, p, flags, Mode::empty(), links)?,
        Some(p) => open_in_base(base, &dir, p, flags, Mode::empty())?,
        None => dir,
    };
    Ok((parent, name.to_os_string()))
}

/// `path` (below `base`) resolved beneath `base` at this instant, links followed while they
/// stay beneath it: its metadata (a directory, a file and its length).
///
/// # Errors
/// A path that leads out of `base` ([`is_outside`]), or the resolution's error (`NotFound`).
pub fn metadata(base: &Path, path: &Path) -> std::io::Result<std::fs::Metadata> {
    File::from(open_beneath(base, path, OFlags::PATH)?).metadata()
}

/// What an entry of a [`DirList`] is, its own link not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryMeta {
    /// A directory.
    pub is_dir: bool,
    /// A symbolic link (see [`metadata`] for what it leads to, beneath the base).
    pub is_symlink: bool,
    /// Its length in bytes.
    pub len: u64,
    /// When it was last modified, if known.
    pub modified: Option<std::time::SystemTime>,
}

/// A directory opened beneath its base ([`list_dir`]), read one entry at a time: a listing
/// of any size costs one entry of memory at a time.
pub struct DirList {
    fd: OwnedFd,
    dir: rustix::fs::Dir,
}

impl std::fmt::Debug for DirList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirList").finish_non_exhaustive()
    }
}

impl DirList {
    /// The next entry's name (`.` and `..` left out); `None` at the end.
    pub fn next_name(&mut self) -> Option<std::io::Result<std::ffi::OsString>> {
        use std::os::unix::ffi::OsStrExt;
        loop {
            let entry = match self.dir.read()? {
                Ok(entry) => entry,
                Err(e) => return Some(Err(e.into())),
            };
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            return Some(Ok(std::ffi::OsStr::from_bytes(name).to_os_string()));
        }
    }

    /// What the entry `name` of this directory is, a link not followed.
    ///
    /// # Errors
    /// The entry is gone, or cannot be looked at.
    pub fn entry(&self, name: &std::ffi::OsStr) -> std::io::Result<EntryMeta> {
        let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)?;
        let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
        let modified = u64::try_from(st.st_mtime).ok().map(|secs| {
            std::time::UNIX_EPOCH
                + std::time::Duration::new(secs, u32::try_from(st.st_mtime_nsec).unwrap_or(0))
        });
        Ok(EntryMeta {
            is_dir: kind.is_dir(),
            is_symlink: kind.is_symlink(),
            len: u64::try_from(st.st_size).unwrap_or(0),
            modified,
        })
    }
}

/// Opens the directory `path` (below `base`) beneath `base`, for reading its entries.
///
/// # Errors
/// A path that leads out of `base` ([`is_outside`]); not a directory; the open's error.
pub fn list_dir(base: &Path, path: &Path) -> std::io::Result<DirList> {
    let fd = open_beneath(base, path, OFlags::DIRECTORY | OFlags::RDONLY)?;
    let list = rustix::fs::Dir::read_from(&fd)?;
    Ok(DirList { fd, dir: list })
}

/// Opens the directory `path` as it is named, links followed wherever they lead: the owner's
/// own tree, where [`list_dir`]'s confinement does not apply.
///
/// # Errors
/// Not a directory; the open's error.
pub fn list_dir_following(path: &Path) -> std::io::Result<DirList> {
    let fd = rustix::fs::open(
        path,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let list = rustix::fs::Dir::read_from(&fd)?;
    Ok(DirList { fd, dir: list })
}

/// Removes the directory `path` (below `base`) and everything in it: the directory is opened
/// beneath `base`, and each entry inside is removed by its name in its directory's
/// descriptor, no link followed (a link inside is removed itself).
///
/// # Errors
/// A path that leads out of `base` ([`is_outside`]); the removal's error (`NotFound`).
pub fn remove_dir_all(base: &Path, path: &Path) -> std::io::Result<()> {
    let (parent, name) = parent_of(base, path, Links::Inside)?;
    empty_and_remove(&parent, &name, 0)
}

/// The deepest [`remove_dir_all`] goes.
const MAX_DEPTH: usize = 64;

fn empty_and_remove(parent: &OwnedFd, name: &std::ffi::OsStr, depth: usize) -> std::io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(std::io::Error::other("nested too deep to remove"));
    }
    let fd = rustix::fs::openat(
        parent,
        name,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| link_refused(e, Path::new(name)))?;
    let mut list = DirList {
        dir: rustix::fs::Dir::read_from(&fd)?,
        fd,
    };
    let mut names = Vec::new();
    while let Some(entry) = list.next_name() {
        names.push(entry?);
    }
    for entry in names {
        if list.entry(&entry)?.is_dir {
            empty_and_remove(&list.fd, &entry, depth + 1)?;
        } else {
            rustix::fs::unlinkat(&list.fd, entry.as_os_str(), AtFlags::empty())?;
        }
    }
    Ok(rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let project = root.join("acme/shop");
        std::fs::create_dir_all(project.join("_vance/docs")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("other/secret.txt"), "secret").unwrap();
        (tmp, root, project)
    }

    fn read(base: &Path, path: &Path) -> std::io::Result<String> {
        let mut s = String::new();
        open_read(base, path)?.read_to_string(&mut s)?;
        Ok(s)
    }

    #[test]
    fn a_file_inside_is_read_written_and_removed() {
        let (_tmp, _root, project) = setup();
        let file = project.join("_vance/docs/new/a.md");
        write_atomically(&project, &file, b"one").unwrap();
        write_atomically(&project, &file, b"two").unwrap();
        assert_eq!(read(&project, &file).unwrap(), "two");
        let names: Vec<_> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.md"], "no temporary file is left");
        // A link that stays inside is followed, written relative or absolute.
        std::os::unix::fs::symlink(&file, project.join("_vance/docs/absolute.md")).unwrap();
        assert_eq!(
            read(&project, &project.join("_vance/docs/absolute.md")).unwrap(),
            "two"
        );
        std::os::unix::fs::symlink(project.join("_vance/docs/new"), project.join("_vance/abs"))
            .unwrap();
        assert!(
            metadata(&project, &project.join("_vance/abs"))
                .unwrap()
                .is_dir()
        );
        write_atomically(&project, &project.join("_vance/abs/b.md"), b"b").unwrap();
        assert_eq!(
            std::fs::read_to_string(project.join("_vance/docs/new/b.md")).unwrap(),
            "b"
        );
        std::fs::remove_file(project.join("_vance/docs/new/b.md")).unwrap();
        std::fs::remove_file(project.join("_vance/abs")).unwrap();
        std::fs::remove_file(project.join("_vance/docs/absolute.md")).unwrap();
        std::os::unix::fs::symlink("new/a.md", project.join("_vance/docs/link.md")).unwrap();
        assert_eq!(
            read(&project, &project.join("_vance/docs/link.md")).unwrap(),
            "two"
        );
        remove_file(&project, &file).unwrap();
        assert!(!file.exists());
        let e = remove_file(&project, &file).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn no_link_or_dotdot_leads_a_read_a_write_or_a_removal_out() {
        let (_tmp, root, project) = setup();
        // A directory of the path that is a link out (as a step would swap one in).
        std::os::unix::fs::symlink(root.join("other"), project.join("_vance/swapped")).unwrap();
        std::os::unix::fs::symlink("../../../other", project.join("_vance/relative")).unwrap();
        for dir in ["swapped", "relative"] {
            let through = project.join(format!("_vance/{dir}/secret.txt"));
            let e = read(&project, &through).unwrap_err();
            assert!(is_outside(&e), "{dir}: {e}");
            let e = write_atomically(&project, &through, b"owned").unwrap_err();
            assert!(is_outside(&e), "{dir}: {e}");
            let e = remove_file(&project, &through).unwrap_err();
            assert!(is_outside(&e), "{dir}: {e}");
            let e = write_atomically(
                &project,
                &project.join(format!("_vance/{dir}/new/x.md")),
                b"x",
            )
            .unwrap_err();
            assert!(is_outside(&e), "{dir}: {e}");
        }
        assert_eq!(
            std::fs::read_to_string(root.join("other/secret.txt")).unwrap(),
            "secret"
        );
        assert!(!root.join("other/new").exists());
        let e = read(&project, Path::new("../../other/secret.txt")).unwrap_err();
        assert!(is_outside(&e), "{e}");
        let e = read(&project, &root.join("other/secret.txt")).unwrap_err();
        assert!(is_outside(&e), "{e}");
        // A link at the file's own name is replaced by a write, not followed.
        let named = project.join("_vance/docs/named.md");
        std::os::unix::fs::symlink(root.join("other/secret.txt"), &named).unwrap();
        write_atomically(&project, &named, b"mine").unwrap();
        assert_eq!(std::fs::read_to_string(&named).unwrap(), "mine");
        assert_eq!(
            std::fs::read_to_string(root.join("other/secret.txt")).unwrap(),
            "secret"
        );
    }

    #[test]
    fn a_directory_at_the_name_or_a_file_on_the_way_is_refused() {
        let (_tmp, _root, project) = setup();
        let e = write_atomically(&project, &project.join("_vance/docs"), b"x").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::IsADirectory, "{e}");
        std::fs::write(project.join("_vance/file"), "x").unwrap();
        let e =
            write_atomically(&project, &project.join("_vance/file/inner.md"), b"x").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotADirectory, "{e}");
        assert_eq!(
            std::fs::read_dir(project.join("_vance/docs"))
                .unwrap()
                .count(),
            0,
            "no temporary file is left"
        );
    }

    #[test]
    fn a_listing_a_metadata_and_a_removal_stay_beneath() {
        let (_tmp, root, project) = setup();
        let docs = project.join("_vance/docs");
        std::fs::create_dir_all(docs.join("sub/deeper")).unwrap();
        std::fs::write(docs.join("sub/deeper/a.md"), "aa").unwrap();
        std::fs::write(docs.join("b.md"), "bbb").unwrap();
        std::os::unix::fs::symlink(root.join("other"), docs.join("out")).unwrap();
        std::os::unix::fs::symlink("sub", docs.join("in")).unwrap();
        let mut list = list_dir(&project, &docs).unwrap();
        let mut seen = Vec::new();
        while let Some(name) = list.next_name() {
            let name = name.unwrap();
            let meta = list.entry(&name).unwrap();
            seen.push((
                name.to_string_lossy().into_owned(),
                meta.is_dir,
                meta.is_symlink,
            ));
        }
        seen.sort();
        assert_eq!(
            seen,
            [
                ("b.md".to_owned(), false, false),
                ("in".to_owned(), false, true),
                ("out".to_owned(), false, true),
                ("sub".to_owned(), true, false),
            ]
        );
        assert!(metadata(&project, &docs.join("in")).unwrap().is_dir());
        assert!(is_outside(
            &metadata(&project, &docs.join("out")).unwrap_err()
        ));
        assert!(is_outside(
            &list_dir(&project, &docs.join("out")).unwrap_err()
        ));
        // Through a link out: refused; the tree with a link inside: removed, the link's
        // target kept.
        assert!(is_outside(
            &remove_dir_all(&project, &docs.join("out/x")).unwrap_err()
        ));
        std::os::unix::fs::symlink(root.join("other"), docs.join("sub/back")).unwrap();
        remove_dir_all(&project, &docs.join("sub")).unwrap();
        assert!(!docs.join("sub").exists());
        assert!(root.join("other/secret.txt").exists());
        // A link at the name itself is not a directory to empty.
        assert!(remove_dir_all(&project, &docs.join("out")).is_err());
        assert!(root.join("other/secret.txt").exists());
    }

    #[test]
    fn a_write_or_removal_that_may_follow_no_link_refuses_one_inside_too() {
        let (_tmp, _root, project) = setup();
        std::fs::create_dir_all(project.join("_vance/events")).unwrap();
        std::os::unix::fs::symlink("events", project.join("_vance/notes")).unwrap();
        let through = project.join("_vance/notes/e.yaml");
        let e = write_atomically_no_links(&project, &through, b"x").unwrap_err();
        assert!(is_through_link(&e), "{e}");
        assert!(!project.join("_vance/events/e.yaml").exists());
        std::fs::write(project.join("_vance/events/e.yaml"), "x").unwrap();
        let e = remove_file_no_links(&project, &through).unwrap_err();
        assert!(is_through_link(&e), "{e}");
        assert!(project.join("_vance/events/e.yaml").exists());
        // The path as written, with no link: as ever.
        write_atomically_no_links(&project, &project.join("_vance/new/a.md"), b"a").unwrap();
        remove_file_no_links(&project, &project.join("_vance/new/a.md")).unwrap();
    }
}
