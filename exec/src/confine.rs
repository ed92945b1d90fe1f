//! Resolving a path inside a directory without looking outside it.
//!
//! `canonicalize` follows a symbolic link to wherever it points and reports what it finds
//! there: a link a shell step made in its project to another tenant's file resolves when the
//! file exists and fails with "not found" when it does not, so whoever can make links and
//! watch the answers learns which paths of another tenant exist. [`resolve_inside`] resolves
//! one component at a time and reads only what lies inside the directory: a link is judged
//! by its text, so a link that leads out is refused the same way whatever is at its end.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Most symbolic links followed in one resolution (the kernel's own limit), so a loop of
/// links ends.
const MAX_LINKS: usize = 40;

/// Why [`resolve_inside`] did not find a path inside its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// A symbolic link (or a `..`) leads out of the directory.
    LeadsOut,
    /// A component inside the directory does not exist (or is no directory where one is
    /// needed).
    Missing,
    /// More than 40 links (the kernel's own limit), or a link that cannot be read.
    Unreadable,
}

/// `path` resolved as the file system would resolve it, every symbolic link followed, when it
/// lies inside `base` (a canonical directory, `path` below it): the resolved path, or why not.
/// Nothing outside `base` is looked at: a link whose target (read as text, relative to the
/// link's directory) leaves `base` is [`Unresolved::LeadsOut`], whether or not its target
/// exists. `alias` is `base` as the caller names it (a path with links of its own, such as a
/// tree served from a linked directory): an absolute link below it stays inside too.
///
/// # Errors
/// [`Unresolved`] says why the path does not resolve inside `base`.
pub fn resolve_inside(base: &Path, alias: &Path, path: &Path) -> Result<PathBuf, Unresolved> {
    let rel = path.strip_prefix(base).map_err(|_| Unresolved::LeadsOut)?;
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_front(&mut pending, rel)?;
    let mut at = base.to_path_buf();
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            // Above `base` is allowed while only `base`'s own (canonical) ancestors are named:
            // `../../shop/x` from inside `…/acme/shop` comes back in without a look outside.
            at.pop();
            continue;
        }
        let next = at.join(&name);
        if !at.starts_with(base) {
            // Above `base`: only the way back down to it, known without looking.
            if base.starts_with(&next) {
                at = next;
                continue;
            }
            return Err(Unresolved::LeadsOut);
        }
        let meta = std::fs::symlink_metadata(&next).map_err(|_| Unresolved::Missing)?;
        if !meta.file_type().is_symlink() {
            if !pending.is_empty() && !meta.is_dir() {
                return Err(Unresolved::Missing);
            }
            at = next;
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(Unresolved::Unreadable);
        }
        let target = std::fs::read_link(&next).map_err(|_| Unresolved::Unreadable)?;
        if target.is_absolute() {
            let rel = target
                .strip_prefix(base)
                .or_else(|_| target.strip_prefix(alias))
                .map_err(|_| Unresolved::LeadsOut)?;
            push_front(&mut pending, rel)?;
            at = base.to_path_buf();
        } else {
            // Relative to the link's own directory, `at`.
            push_front(&mut pending, &target)?;
        }
    }
    if at.starts_with(base) {
        Ok(at)
    } else {
        Err(Unresolved::LeadsOut)
    }
}

/// The entry `name` of the directory `parent` (named as the caller names it), resolved: it
/// must stay inside `parent` (a project directory inside its tenant's, say).
///
/// # Errors
/// `parent` cannot be resolved (it does not exist, or cannot be read); the inner result says
/// why `name` does not resolve inside it.
pub fn child_of(parent: &Path, name: &Path) -> std::io::Result<Result<PathBuf, Unresolved>> {
    let real = parent.canonicalize()?;
    Ok(resolve_inside(&real, parent, &real.join(name)))
}

/// Puts the components of the relative path `rel` before what is pending.
fn push_front(pending: &mut VecDeque<OsString>, rel: &Path) -> Result<(), Unresolved> {
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => names.push(n.to_os_string()),
            Component::ParentDir => names.push(OsString::from("..")),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(Unresolved::LeadsOut),
        }
    }
    for n in names.into_iter().rev() {
        pending.push_front(n);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A project beside another tenant's directory, with links of every kind.
    #[test]
    fn links_are_judged_by_their_text_not_by_what_they_reach() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let project = root.join("acme/shop");
        let other = root.join("globex/mart");
        std::fs::create_dir_all(project.join("_vance/workflows")).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("secret.yaml"), "x").unwrap();
        std::fs::write(project.join("_vance/workflows/real.yaml"), "y").unwrap();
        let w = project.join("_vance/workflows");
        symlink(other.join("secret.yaml"), w.join("there.yaml")).unwrap();
        symlink(other.join("nothing.yaml"), w.join("nowhere.yaml")).unwrap();
        symlink("../../../../globex/mart/secret.yaml", w.join("up.yaml")).unwrap();
        symlink(
            "../../../../globex/mart/nothing.yaml",
            w.join("up-nowhere.yaml"),
        )
        .unwrap();
        symlink("real.yaml", w.join("alias.yaml")).unwrap();
        symlink(project.join("_vance"), project.join("v")).unwrap();
        symlink("loop.yaml", w.join("loop.yaml")).unwrap();

        let resolve = |rel: &str| resolve_inside(&project, &project, &project.join(rel));
        // Out, existing or not: the same answer.
        for rel in [
            "_vance/workflows/there.yaml",
            "_vance/workflows/nowhere.yaml",
            "_vance/workflows/up.yaml",
            "_vance/workflows/up-nowhere.yaml",
        ] {
            assert_eq!(resolve(rel), Err(Unresolved::LeadsOut), "{rel}");
        }
        // In: resolved, through relative and absolute links.
        let real = project.join("_vance/workflows/real.yaml");
        assert_eq!(resolve("_vance/workflows/alias.yaml"), Ok(real.clone()));
        assert_eq!(resolve("v/workflows/real.yaml"), Ok(real.clone()));
        assert_eq!(resolve("_vance/workflows/real.yaml"), Ok(real));
        assert_eq!(
            resolve("_vance/workflows/none.yaml"),
            Err(Unresolved::Missing)
        );
        assert_eq!(
            resolve("_vance/workflows/real.yaml/x"),
            Err(Unresolved::Missing)
        );
        assert_eq!(
            resolve("_vance/workflows/loop.yaml"),
            Err(Unresolved::Unreadable)
        );
        assert_eq!(
            resolve_inside(&project, &project, &other.join("secret.yaml")),
            Err(Unresolved::LeadsOut)
        );
        // A tree named through a link of its own: an absolute link below that name is inside.
        let linked = tmp.path().join("linked-root");
        symlink(&root, &linked).unwrap();
        let named = linked.join("acme/shop");
        symlink(
            named.join("_vance/workflows/real.yaml"),
            w.join("by-name.yaml"),
        )
        .unwrap();
        assert_eq!(
            resolve_inside(&project, &named, &w.join("by-name.yaml")),
            Ok(project.join("_vance/workflows/real.yaml"))
        );
        assert_eq!(
            resolve("_vance/workflows/by-name.yaml"),
            Err(Unresolved::LeadsOut)
        );
        // Up out of the project and back into it by its own name: inside, as the file
        // system resolves it; up and into a neighbour: out.
        symlink(
            "../../../shop/_vance/workflows/real.yaml",
            w.join("reenter.yaml"),
        )
        .unwrap();
        assert_eq!(
            resolve("_vance/workflows/reenter.yaml"),
            Ok(project.join("_vance/workflows/real.yaml"))
        );
        assert_eq!(resolve("_vance/workflows/.."), Ok(project.join("_vance")));
        assert_eq!(resolve(".."), Err(Unresolved::LeadsOut));
    }
}
