//! Settings files and workflow documents, read once and kept while the file is unchanged.
//!
//! A start reads the tenant's settings several times (its bounds, its execution policy, its
//! shell defaults), the project's once or twice, and the workflow's document once; reading
//! and parsing them each time cost more than the rest of a start's own work. Each use still
//! looks at the file (one `stat`): a file whose length, modification time, inode or change
//! time differs is read again, so an edit applies to the next start as it did before.
//!
//! File times are coarse (a few milliseconds), so two writes in a row can leave the same
//! stamp; a file modified less than [`SETTLE`] before it was read is not kept and is read again
//! at each use until it is older (the approach git takes with its index). Missing files are
//! not kept either (they cost the defaults, or the cascade's next place, and a failed `stat`),
//! nor are files that fail to read. At most [`MAX_FILES`] files of [`MAX_BYTES`] in all are
//! kept per kind: a request naming many scopes or documents cannot grow a cache without bound.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use crate::settings::{ProjectSettings, TenantSettings};

/// How long before its reading a file must have been last modified to be kept.
pub(crate) const SETTLE: Duration = Duration::from_secs(2);
/// The most files kept per kind; past it the cache starts over.
pub(crate) const MAX_FILES: usize = 4_096;
/// The most bytes (by the files' lengths) kept per kind; past it the cache starts over. A
/// file longer than a quarter of it is not kept.
pub(crate) const MAX_BYTES: u64 = 32 << 20;

/// What identifies one version of a file without reading it: its length, modification and
/// change times and inode. A file modified less than two seconds before it was read may be
/// written again with the same stamp ([`Stamp::settled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: SystemTime,
    #[cfg(unix)]
    inode: (u64, u64),
    #[cfg(unix)]
    changed: (i64, i64),
}

impl Stamp {
    /// The stamp of a file from its metadata; `None` where the platform gives no times.
    pub fn of(meta: &std::fs::Metadata) -> Option<Self> {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Some(Self {
            len: meta.len(),
            modified: meta.modified().ok()?,
            #[cfg(unix)]
            inode: (meta.dev(), meta.ino()),
            #[cfg(unix)]
            changed: (meta.ctime(), meta.ctime_nsec()),
        })
    }

    /// Whether the file was last modified long enough before `read_at` that a later write
    /// would change its stamp.
    pub fn settled(&self, read_at: SystemTime) -> bool {
        self.modified
            .checked_add(SETTLE)
            .is_some_and(|settled_at| settled_at <= read_at)
    }
}

/// Parsed files of one kind, by path.
#[derive(Debug)]
struct FileCache<T> {
    files: Mutex<Kept<T>>,
}

/// The files a [`FileCache`] keeps, and their length in all.
#[derive(Debug)]
struct Kept<T> {
    by_path: HashMap<PathBuf, (Stamp, T)>,
    bytes: u64,
}

impl<T> Kept<T> {
    fn remove(&mut self, path: &Path) {
        if let Some((stamp, _)) = self.by_path.remove(path) {
            self.bytes -= stamp.len;
        }
    }
}

impl<T> Default for FileCache<T> {
    fn default() -> Self {
        Self {
            files: Mutex::new(Kept {
                by_path: HashMap::new(),
                bytes: 0,
            }),
        }
    }
}

impl<T: Clone> FileCache<T> {
    /// The parsed file at `path`: kept if its stamp is unchanged, else `read(path)`; `T`'s
    /// default when the file cannot be looked at (it is missing).
    fn get(&self, path: &Path, read: impl FnOnce(&Path) -> T) -> T
    where
        T: Default,
    {
        match self.try_get(
            path,
            |p| Ok::<_, std::convert::Infallible>(read(p)),
            |_| Ok(T::default()),
        ) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// [`FileCache::get`] for a `read` that may fail; a failure is not kept. When the file
    /// cannot be looked at (it is missing, or a directory on its path is), `missing` says what
    /// that gives, from the error of the `stat`, which is the error opening it would give:
    /// the file is not opened only to fail again.
    fn try_get<E>(
        &self,
        path: &Path,
        read: impl FnOnce(&Path) -> Result<T, E>,
        missing: impl FnOnce(std::io::Error) -> Result<T, E>,
    ) -> Result<T, E> {
        // The path itself first (one system call for a file or for nothing), then what a link
        // leads to. A link to nothing is the reader's to judge (it may lead out of its
        // project, which is refused as a link to something is), not an absent file.
        let (meta, dangling) = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::metadata(path) {
                Ok(m) => (Ok(m), false),
                Err(e) => (Err(e), true),
            },
            other => (other, false),
        };
        let stamp = match meta {
            Ok(meta) => Some(meta)
                .filter(|m| m.is_file())
                .and_then(|m| Stamp::of(&m)),
            Err(error) => {
                self.files
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(path);
                return if dangling { read(path) } else { missing(error) };
            }
        };
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(stamp) = stamp else {
            files.remove(path);
            drop(files);
            return read(path);
        };
        if let Some((kept, value)) = files.by_path.get(path)
            && *kept == stamp
        {
            return Ok(value.clone());
        }
        drop(files);
        let read_at = SystemTime::now();
        // Read after the stamp was taken: what is kept is at least as new as its stamp, and a
        // later write changes the stamp.
        let value = read(path)?;
        if stamp.settled(read_at) && stamp.len <= MAX_BYTES / 4 {
            let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
            files.remove(path);
            if files.by_path.len() >= MAX_FILES || files.bytes + stamp.len > MAX_BYTES {
                files.by_path.clear();
                files.bytes = 0;
            }
            files.bytes += stamp.len;
            files
                .by_path
                .insert(path.to_path_buf(), (stamp, value.clone()));
        }
        Ok(value)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_path
            .len()
    }
}

/// The settings files of a document tree, parsed, and its workflow documents (see the module
/// docs).
#[derive(Debug, Default)]
pub(crate) struct FileCaches {
    tenant: FileCache<TenantSettings>,
    project: FileCache<ProjectSettings>,
    documents: FileCache<Arc<str>>,
}

impl FileCaches {
    /// The tenant settings at `path`, as `read` makes them from the file.
    pub(crate) fn tenant(
        &self,
        path: &Path,
        read: impl FnOnce(&Path) -> TenantSettings,
    ) -> TenantSettings {
        self.tenant.get(path, read)
    }

    /// The project settings at `path`, as `read` makes them from the file.
    pub(crate) fn project(
        &self,
        path: &Path,
        read: impl FnOnce(&Path) -> ProjectSettings,
    ) -> ProjectSettings {
        self.project.get(path, read)
    }

    /// The text of the document at `path`, as `read` reads it when it is not kept.
    pub(crate) fn document(
        &self,
        path: &Path,
        read: impl FnOnce(&Path) -> std::io::Result<String>,
    ) -> std::io::Result<String> {
        self.documents
            .try_get(path, |p| read(p).map(Arc::from), Err)
            .map(|text| String::from(&*text))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::fs::{File, FileTimes};

    use super::*;

    /// Sets the file's modification time `ago` before now.
    fn age(path: &Path, ago: Duration) {
        let at = SystemTime::now() - ago;
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_times(FileTimes::new().set_modified(at))
            .unwrap();
    }

    /// `dir/name` holding `contents`, last modified a minute ago.
    fn settled_file(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        age(&path, Duration::from_secs(60));
        path
    }

    fn reads(cache: &FileCache<String>, path: &Path, count: &Cell<u32>) -> String {
        cache.get(path, |p| {
            count.set(count.get() + 1);
            std::fs::read_to_string(p).unwrap_or_default()
        })
    }

    #[test]
    fn an_unchanged_settled_file_is_read_once_and_an_edit_is_seen_at_the_next_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = settled_file(dir.path(), "settings.yaml", "a: 1\n");
        let (cache, count) = (FileCache::default(), Cell::new(0));
        assert_eq!(reads(&cache, &path, &count), "a: 1\n");
        assert_eq!(reads(&cache, &path, &count), "a: 1\n");
        assert_eq!(count.get(), 1, "the second use is served from the cache");

        // The same length: the edit's times tell it apart.
        std::fs::write(&path, "a: 2\n").unwrap();
        assert_eq!(reads(&cache, &path, &count), "a: 2\n");
        assert_eq!(count.get(), 2);
    }

    #[test]
    fn a_file_written_just_now_is_read_at_every_use_until_it_settles() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.yaml");
        std::fs::write(&path, "a: 1\n").unwrap();
        let (cache, count) = (FileCache::default(), Cell::new(0));
        reads(&cache, &path, &count);
        reads(&cache, &path, &count);
        assert_eq!(count.get(), 2, "a fresh file is not kept");
        assert_eq!(cache.len(), 0);
        age(&path, Duration::from_secs(60));
        reads(&cache, &path, &count);
        reads(&cache, &path, &count);
        assert_eq!(count.get(), 3);
    }

    #[test]
    fn a_removed_file_gives_what_a_missing_one_gives_and_is_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let path = settled_file(dir.path(), "settings.yaml", "a: 1\n");
        let (cache, count) = (FileCache::default(), Cell::new(0));
        assert_eq!(reads(&cache, &path, &count), "a: 1\n");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(reads(&cache, &path, &count), "");
        assert_eq!(cache.len(), 0);
        assert_eq!(count.get(), 1, "a missing file is not opened");
    }

    #[test]
    fn the_cache_holds_a_bounded_number_of_files() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, count) = (FileCache::default(), Cell::new(0));
        for i in 0..MAX_FILES + 10 {
            let path = settled_file(dir.path(), &format!("{i}.yaml"), "a: 1\n");
            reads(&cache, &path, &count);
            assert!(cache.len() <= MAX_FILES);
        }
    }

    #[test]
    fn the_cache_holds_a_bounded_number_of_bytes_and_no_oversized_file() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, count) = (FileCache::default(), Cell::new(0));
        let big = settled_file(
            dir.path(),
            "big.yaml",
            vec![b'a'; (MAX_BYTES / 4 + 1) as usize],
        );
        reads(&cache, &big, &count);
        reads(&cache, &big, &count);
        assert_eq!(
            count.get(),
            2,
            "a file over a quarter of the budget is read each time"
        );
        assert_eq!(cache.len(), 0);

        let quarter = vec![b'b'; (MAX_BYTES / 4) as usize];
        for i in 0..6 {
            let path = settled_file(dir.path(), &format!("{i}.yaml"), &quarter);
            reads(&cache, &path, &count);
            let kept = cache.files.lock().unwrap().bytes;
            assert!(kept <= MAX_BYTES, "{kept} bytes kept");
            assert!(cache.len() >= 1);
        }
    }

    #[test]
    fn a_failed_read_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = settled_file(dir.path(), "doc.yaml", "a: 1\n");
        let cache: FileCache<String> = FileCache::default();
        let failed: Result<String, &str> =
            cache.try_get(&path, |_| Err("no access"), |_| Err("missing"));
        assert_eq!(failed, Err("no access"));
        assert_eq!(cache.len(), 0);
        let read = cache.try_get(
            &path,
            |p| std::fs::read_to_string(p).map_err(|_| "unread"),
            |_| Err("missing"),
        );
        assert_eq!(read.as_deref(), Ok("a: 1\n"));
        assert_eq!(cache.len(), 1);
    }

    fn read_text(path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path)
    }

    #[test]
    fn documents_are_kept_until_edited_and_missing_ones_say_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = settled_file(dir.path(), "flow.yaml", "start: a\n");
        let caches = FileCaches::default();
        assert_eq!(caches.document(&path, read_text).unwrap(), "start: a\n");
        assert_eq!(caches.document(&path, read_text).unwrap(), "start: a\n");
        assert_eq!(caches.documents.len(), 1);
        // A rewrite through a rename (how documents are saved) has another inode.
        let next = settled_file(dir.path(), "flow.yaml.new", "start: b\n");
        std::fs::rename(&next, &path).unwrap();
        assert_eq!(caches.document(&path, read_text).unwrap(), "start: b\n");
        std::fs::remove_file(&path).unwrap();
        let missing = caches.document(&path, read_text).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(caches.documents.len(), 0);
    }

    #[test]
    fn tenant_settings_are_parsed_from_the_file_and_follow_its_edits() {
        let dir = tempfile::tempdir().unwrap();
        let path = settled_file(
            dir.path(),
            "settings.yaml",
            "bounds:\n  maxJournalBytes: 7000\n",
        );
        let cache = FileCaches::default();
        let scope = crate::Scope::new("acme", "shop");
        let limit = |s: TenantSettings| s.bounds.journal_bytes(&scope);
        assert_eq!(limit(cache.tenant(&path, TenantSettings::read)), Some(7000));
        assert_eq!(limit(cache.tenant(&path, TenantSettings::read)), Some(7000));
        std::fs::write(&path, "bounds:\n  maxJournalBytes: 9000\n").unwrap();
        assert_eq!(limit(cache.tenant(&path, TenantSettings::read)), Some(9000));
    }
}
