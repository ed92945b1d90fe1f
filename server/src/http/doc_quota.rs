//! How much one project may keep under `_vance/`: anyone with `workflow.write` writes
//! documents there (and publishing keeps every replaced version), so their number and their
//! bytes are bounded per project. A write that would pass either bound is refused with 507
//! (`MAG-HTTP-QUOTA`) and changes nothing; replacing a document counts its new size instead of
//! its old one.
//!
//! A write into a project that has no directory yet creates it, so the number of projects a
//! tenant holds is bounded too: a write that would create one more than
//! [`DocumentQuota::max_projects`] is refused the same way.
//!
//! The usage is counted when a write asks (a walk of `_vance/` that stops past the bounds, a
//! listing of the tenant's directory), and a tenant's writes are counted and made one at a
//! time (`write_turn`): concurrent writes cannot pass a bound together.

use std::path::{Path, PathBuf};

use axum::http::StatusCode;

use super::error::ApiError;
use crate::tree::project_names;

/// Documents (files) a project may hold under `_vance/`, unless
/// [`ServeConfig::document_quota`](crate::ServeConfig::document_quota) says otherwise.
pub const DEFAULT_MAX_DOCUMENTS: usize = 10_000;

/// Bytes of documents a project may hold under `_vance/`, unless
/// [`ServeConfig::document_quota`](crate::ServeConfig::document_quota) says otherwise.
pub const DEFAULT_MAX_DOCUMENT_BYTES: u64 = 256 << 20;

/// Locks that order document writes: a tenant's writes take the same one, so that the count
/// of a write and its write are not interleaved with another's. A fixed number, shared by
/// tenants whose names fall on the same one, so that their number bounds nothing.
const WRITE_TURNS: usize = 64;

/// The turn of `tenant`'s document writes: hold it from the quota's count to the write.
pub(crate) async fn write_turn(tenant: &str) -> tokio::sync::MutexGuard<'static, ()> {
    static TURNS: std::sync::OnceLock<Vec<tokio::sync::Mutex<()>>> = std::sync::OnceLock::new();
    let turns = TURNS.get_or_init(|| {
        (0..WRITE_TURNS)
            .map(|_| tokio::sync::Mutex::new(()))
            .collect()
    });
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(tenant, &mut h);
    let i = (std::hash::Hasher::finish(&h) % WRITE_TURNS as u64) as usize;
    turns[i].lock().await
}

/// Projects a tenant may hold (directories beside its `_tenant/`), unless
/// [`ServeConfig::document_quota`](crate::ServeConfig::document_quota) says otherwise.
pub const DEFAULT_MAX_PROJECTS: usize = 1_000;

/// The bounds of one project's documents, and of the projects of one tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocumentQuota {
    /// Most documents (files) under `_vance/`.
    pub max_documents: usize,
    /// Most bytes of them.
    pub max_bytes: u64,
    /// Most projects of a tenant: a write that would create the directory of one more is
    /// refused.
    pub max_projects: usize,
}

impl Default for DocumentQuota {
    fn default() -> Self {
        Self {
            max_documents: DEFAULT_MAX_DOCUMENTS,
            max_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
            max_projects: DEFAULT_MAX_PROJECTS,
        }
    }
}

/// What a walk of `_vance/` found.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    documents: usize,
    bytes: u64,
}

impl DocumentQuota {
    /// Whether writing `new_len` bytes to `file` (a path under `vance`, the project's
    /// `_vance/` directory, replacing the document there if any) keeps the project within
    /// the quota; 507 `MAG-HTTP-QUOTA` naming the project (`label`) if not. Reads the disk:
    /// call it off the runtime's threads.
    pub(crate) fn check(
        &self,
        vance: &Path,
        file: &Path,
        new_len: u64,
        label: &str,
    ) -> Result<(), ApiError> {
        let used = self.usage(vance);
        let replaced = std::fs::symlink_metadata(file)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        let documents = used.documents + usize::from(replaced.is_none());
        let bytes = used
            .bytes
            .saturating_sub(replaced.unwrap_or(0))
            .saturating_add(new_len);
        if documents <= self.max_documents && bytes <= self.max_bytes {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "MAG-HTTP-QUOTA",
            format!(
                "[MAG-HTTP-QUOTA] project `{label}` may hold {} documents and {} bytes under \
                 _vance/; with this write it would hold {}{} documents and {}{} bytes: remove \
                 documents (or drafts) first",
                self.max_documents,
                self.max_bytes,
                if used.documents > self.max_documents {
                    "more than "
                } else {
                    ""
                },
                documents,
                if used.bytes > self.max_bytes {
                    "more than "
                } else {
                    ""
                },
                bytes
            ),
        ))
    }

    /// Whether a write into the project directory `project` keeps its tenant within
    /// [`DocumentQuota::max_projects`]: a project that exists always passes; a new one passes
    /// while the tenant's directory (`project`'s parent) holds fewer projects than the bound.
    /// 507 `MAG-HTTP-QUOTA` naming the tenant (`tenant`) if not. Reads the disk: call it off
    /// the runtime's threads.
    pub(crate) fn check_project(&self, project: &Path, tenant: &str) -> Result<(), ApiError> {
        if project.is_dir() {
            return Ok(());
        }
        let projects = project
            .parent()
            .map_or(0, |tenant| project_names(tenant).len());
        if projects < self.max_projects {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "MAG-HTTP-QUOTA",
            format!(
                "[MAG-HTTP-QUOTA] tenant `{tenant}` may hold {} projects and holds as many: \
                 this write would create another; write into an existing project, or remove \
                 a project first",
                self.max_projects
            ),
        ))
    }

    /// The documents and bytes under `vance`, counted until both bounds are passed.
    /// Symbolic links are not followed (a link counts as nothing).
    fn usage(&self, vance: &Path) -> Usage {
        let mut used = Usage::default();
        let mut dirs: Vec<PathBuf> = vec![vance.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if kind.is_file() {
                    used.documents += 1;
                    used.bytes += entry.metadata().map_or(0, |m| m.len());
                    if used.documents > self.max_documents && used.bytes > self.max_bytes {
                        return used;
                    }
                }
            }
        }
        used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_within_the_bounds_passes_and_one_past_either_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let vance = dir.path().join("_vance");
        std::fs::create_dir_all(vance.join("workflows")).unwrap();
        std::fs::write(vance.join("workflows/a.yaml"), vec![b'a'; 100]).unwrap();
        std::fs::write(vance.join("settings.yaml"), vec![b's'; 50]).unwrap();
        let quota = DocumentQuota {
            max_documents: 3,
            max_bytes: 300,
            ..DocumentQuota::default()
        };
        let new = vance.join("workflows/b.yaml");
        assert!(
            quota.check(&vance, &new, 150, "acme/shop").is_ok(),
            "3 documents, 300 bytes"
        );
        let refused = quota.check(&vance, &new, 151, "acme/shop").unwrap_err();
        assert_eq!(refused.status, StatusCode::INSUFFICIENT_STORAGE);
        assert!(refused.message.contains("acme/shop"), "{}", refused.message);
        // Replacing counts the new size instead of the old, and no new document.
        let replaced = vance.join("workflows/a.yaml");
        assert!(quota.check(&vance, &replaced, 250, "acme/shop").is_ok());
        assert!(quota.check(&vance, &replaced, 251, "acme/shop").is_err());

        std::fs::write(&new, b"b").unwrap();
        let fourth = vance.join("workflows/c.yaml");
        let refused = quota.check(&vance, &fourth, 1, "acme/shop").unwrap_err();
        assert!(
            refused.message.contains("4 documents"),
            "{}",
            refused.message
        );
    }
}
