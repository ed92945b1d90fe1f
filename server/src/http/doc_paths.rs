//! Where a document path of the documents API may lead: inside its project, never out.
//!
//! Every segment of a path is a plain name (see [`segments`]), so nothing outside the
//! project's `_vance/` is reached by the name alone; a symbolic link inside the project could
//! still lead out (to another tenant's project, to `_auth/`, to `/etc`). So the path is
//! resolved as the file system resolves it, and the canonical result must lie inside the
//! canonical project directory, as the `doc_read` tool checks:
//!
//! * reading: the document itself ([`resolve_existing`]);
//! * writing: the deepest part of the path that exists, the document itself if it does
//!   ([`check_writable`]); what does not exist yet is created as plain directories below it;
//! * listing: the directory ([`resolve_existing`]), and each entry that is a link
//!   ([`entry_inside`]), which is left out of the listing when it leads out.
//!
//! Names longer than the file system takes are refused before any file system call, with 400.

use std::path::{Path, PathBuf};

use axum::http::StatusCode;
use magrathea_yaml::runtime::check_name;

use magrathea_exec::confine::Unresolved;

use super::error::ApiError;

/// Longest path segment, in bytes: the longest document name [`check_name`] takes (below the
/// usual file system limit of 255, leaving room for a temporary file's suffix).
pub(crate) const MAX_SEGMENT: usize = 250;

/// Longest document path, in bytes, relative to `_vance/`.
pub(crate) const MAX_PATH: usize = 1024;

/// Most names in a document path relative to `_vance/`, the file's own included: the
/// directories a write may create are bounded with the documents (a quota counts files).
pub(crate) const MAX_DEPTH: usize = 8;

/// The segments of a relative document path, each a plain name of at most [`MAX_SEGMENT`]
/// bytes, at most [`MAX_DEPTH`] of them, the whole at most [`MAX_PATH`] bytes; 400
/// otherwise. A path may name its document
/// relative to `_vance/` (`workflows/x.yaml`) or, as listings and diagnostics name it,
/// relative to the project (`_vance/workflows/x.yaml`): both are the same document.
pub(crate) fn segments(path: &str) -> Result<Vec<&str>, ApiError> {
    if path.len() > MAX_PATH {
        return Err(ApiError::bad_request(
            "MAG-HTTP-INVALID-PATH",
            format!(
                "the document path is {} bytes long; at most {MAX_PATH} are allowed",
                path.len()
            ),
        ));
    }
    let mut parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if parts.first() == Some(&"_vance") {
        parts.remove(0);
    }
    if parts.len() > MAX_DEPTH {
        return Err(ApiError::bad_request(
            "MAG-HTTP-INVALID-PATH",
            format!(
                "the document path has {} names; at most {MAX_DEPTH} are allowed below _vance/",
                parts.len()
            ),
        ));
    }
    for part in &parts {
        if part.len() > MAX_SEGMENT {
            return Err(ApiError::bad_request(
                "MAG-HTTP-INVALID-PATH",
                format!(
                    "a name in the document path is {} bytes long; at most {MAX_SEGMENT} are \
                     allowed per name",
                    part.len()
                ),
            ));
        }
        check_name(part)
            .map_err(|e| ApiError::bad_request("MAG-HTTP-INVALID-PATH", e.to_string()))?;
    }
    Ok(parts)
}

/// 403: `rel` leads outside the project through a symbolic link.
fn outside(rel: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "MAG-HTTP-OUTSIDE-PROJECT",
        format!(
            "`{rel}` leads outside the project (through a symbolic link); the documents API \
             reads and writes only inside the project"
        ),
    )
}

/// Whether an I/O error means "there is nothing at this path".
fn is_absent(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// The canonical project directory; `None` when it does not exist. A project directory that
/// is a link out of its tenant's directory (to another tenant's project) is refused: 403.
pub(crate) fn canonical_project(project: &Path) -> Result<Option<PathBuf>, ApiError> {
    let (Some(tenant), Some(name)) = (project.parent(), project.file_name()) else {
        return Ok(None);
    };
    let resolved = match magrathea_exec::confine::child_of(tenant, name.as_ref()) {
        Ok(r) => r,
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => {
            return Err(ApiError::internal(format!(
                "cannot resolve the tenant directory {}: {e}",
                tenant.display()
            )));
        }
    };
    match resolved {
        Ok(p) => Ok(Some(p)),
        Err(Unresolved::LeadsOut) => Err(outside(&name.to_string_lossy())),
        Err(Unresolved::Missing | Unresolved::Unreadable) => Ok(None),
    }
}

/// The canonical path of `path` (below `project`), which exists; `None` when nothing is
/// there; 403 when it resolves outside the project. `rel` names it in messages.
pub(crate) fn resolve_existing(
    project: &Path,
    path: &Path,
    rel: &str,
) -> Result<Option<PathBuf>, ApiError> {
    let Some(base) = canonical_project(project)? else {
        return Ok(None);
    };
    let Ok(rel_path) = path.strip_prefix(project) else {
        return Err(outside(rel));
    };
    // Resolved without looking past the project: a link (or a directory link on the way)
    // that leads out is refused alike whether anything is at its end.
    match magrathea_exec::confine::resolve_inside(&base, project, &base.join(rel_path)) {
        Ok(real) => Ok(Some(real)),
        Err(Unresolved::LeadsOut) => Err(outside(rel)),
        // A link to nothing inside the project, or a loop of links: no document.
        Err(Unresolved::Missing | Unresolved::Unreadable) => Ok(None),
    }
}

/// Checks that writing `file` (below `project`) stays in the project: the deepest part of its
/// path that exists (a dangling link counts as existing) must resolve inside the project.
/// When the project directory does not exist yet, nothing below it can lead out.
pub(crate) fn check_writable(project: &Path, file: &Path, rel: &str) -> Result<(), ApiError> {
    let Some(base) = canonical_project(project)? else {
        // A dangling link in place of the project directory is not a missing project.
        return match std::fs::symlink_metadata(project) {
            Ok(_) => Err(outside(rel)),
            Err(_) => Ok(()),
        };
    };
    let mut at = file;
    loop {
        if std::fs::symlink_metadata(at).is_ok() {
            return match at.canonicalize() {
                Ok(real) if real.starts_with(&base) => Ok(()),
                _ => Err(outside(rel)),
            };
        }
        match at.parent() {
            Some(parent) if parent.starts_with(project) => at = parent,
            _ => return Ok(()),
        }
    }
}

/// The canonical project directory, made when it does not exist yet: what the project's
/// files are read, written and removed beneath ([`magrathea_exec::beneath`]). 403 when it is a
/// link out of its tenant's directory.
pub(crate) fn project_base(project: &Path, rel: &str) -> Result<PathBuf, ApiError> {
    if let Some(base) = canonical_project(project)? {
        return Ok(base);
    }
    std::fs::create_dir_all(project).map_err(ApiError::internal)?;
    canonical_project(project)?.ok_or_else(|| outside(rel))
}

/// `file` (below `project`) relative to the project, for [`magrathea_exec::beneath`].
pub(crate) fn in_project<'a>(
    project: &Path,
    file: &'a Path,
    rel: &str,
) -> Result<&'a Path, ApiError> {
    file.strip_prefix(project).map_err(|_| outside(rel))
}

/// The answer to an I/O error of [`magrathea_exec::beneath`] on `rel`: 403 when the path led
/// out of the project (a link a step swapped in after the check), else `other`'s.
pub(crate) fn beneath_error(
    e: std::io::Error,
    rel: &str,
    other: impl FnOnce(std::io::Error) -> ApiError,
) -> ApiError {
    if magrathea_exec::beneath::is_outside(&e) {
        outside(rel)
    } else if magrathea_exec::beneath::is_through_link(&e) {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "MAG-HTTP-OUTSIDE-PROJECT",
            format!(
                "`{rel}` goes through a symbolic link: the documents API writes and removes \
                 documents only where their path says, through no link"
            ),
        )
    } else {
        other(e)
    }
}

/// Whether the directory entry `path` stays inside the canonical project `base` once
/// resolved (a dangling link does not).
pub(crate) fn entry_inside(base: &Path, path: &Path) -> bool {
    path.canonicalize().is_ok_and(|real| real.starts_with(base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_and_paths_are_refused_with_400() {
        let long = "a".repeat(MAX_SEGMENT + 1);
        let e = segments(&format!("workflows/{long}.yaml")).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.message.contains("at most 250"), "{}", e.message);
        let deep = ["abcdefgh"; 200].join("/");
        let e = segments(&deep).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.message.contains("at most 1024"), "{}", e.message);
        assert_eq!(
            segments("workflows/x.yaml").unwrap(),
            ["workflows", "x.yaml"]
        );
    }
}
