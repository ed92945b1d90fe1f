//! Where workflow documents come from: the project, then the tenant (reference §6).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::confine::Unresolved;
use crate::file_cache::FileCaches;

/// A tenant and project: the scope of runs, documents and lanes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    /// Tenant name.
    pub tenant: String,
    /// Project name.
    pub project: String,
}

impl Scope {
    /// A scope.
    pub fn new(tenant: impl Into<String>, project: impl Into<String>) -> Self {
        Self {
            tenant: tenant.into(),
            project: project.into(),
        }
    }

    /// `tenant/project`, as journaled in each run's StartRecord.
    pub fn key(&self) -> String {
        format!("{}/{}", self.tenant, self.project)
    }

    /// Parses [`Scope::key`].
    pub fn parse(key: &str) -> Option<Self> {
        let (t, p) = key.split_once('/')?;
        Some(Self::new(t, p))
    }

    /// The scope a run's tasks resolve documents and workspaces in: the run's `tenant/project`,
    /// or, for a run started without one (a code workflow's child), tenant `_`, project `_`.
    pub fn of_run(key: &str) -> Self {
        Self::parse(key).unwrap_or_else(|| Self::new("_", "_"))
    }
}

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// No document of that name in the project or the tenant.
    #[error(
        "[MAG-DOC001] unknown workflow '{name}': looked for {} and {}{hint}",
        project.display(),
        tenant.display()
    )]
    UnknownWorkflow {
        /// The name asked for.
        name: String,
        /// The project path searched, as [`DocumentSource::label`] names it.
        project: PathBuf,
        /// The tenant path searched, as [`DocumentSource::label`] names it.
        tenant: PathBuf,
        /// `" (did you mean 'x'?)"` naming a close document of the kind, or the empty string.
        hint: String,
    },
    /// The name is not a plain file name (path traversal, separators, hidden files).
    #[error(
        "[MAG-DOC002] invalid document name '{0}': use a plain file name of ASCII letters, digits, \
         '.', '_' and '-' (no path separators, no '..'), of at most 250 bytes"
    )]
    InvalidName(String),
    /// The workflow is archived: it refuses new starts (see [`DocumentSource::is_archived`]).
    #[error(
        "[MAG-VR001] workflow '{0}' is archived: it refuses new starts (runs already started \
         finish); unarchive it to start it again"
    )]
    Archived(String),
    /// A draft start asked for a workflow that has no draft in the project.
    #[error(
        "[MAG-VR002] workflow '{0}' has no draft: looked for _vance/{DRAFTS_DIR}/{0}.yaml in \
         the project"
    )]
    NoDraft(String),
    /// The document is a symbolic link (or lies under one) that leads out of its project or
    /// tenant directory in a served tree ([`DocumentSource::confined`]).
    #[error(
        "[MAG-DOC004] {0} leads out of its project through a symbolic link: documents are read \
         inside their project only"
    )]
    OutsideProject(PathBuf),
    /// The file is not UTF-8 text: an invalid document, located like every diagnostic.
    #[error(
        "{}:{}:{}: [MAG-Y001] {}: expected a UTF-8 document; save the file as UTF-8",
        path.display(),
        text.line,
        text.column,
        text.what
    )]
    NotUtf8 {
        /// The file, as [`DocumentSource::label`] names it.
        path: PathBuf,
        /// Where and what.
        #[source]
        text: NotUtf8Text,
    },
    /// The file is longer than the server reads of a project file
    /// ([`crate::regular_file::MAX_BYTES`]): an invalid document, located like every
    /// diagnostic.
    #[error(
        "{}:1:1: [MAG-Y002] the document is longer than {} MiB, the most the server reads of a \
         file of a project: a workflow document has at most 1 MiB",
        path.display(),
        crate::regular_file::MAX_BYTES >> 20
    )]
    TooLarge {
        /// The file, as [`DocumentSource::label`] names it.
        path: PathBuf,
    },
    /// The file exists but could not be read.
    #[error("[MAG-DOC003] cannot read {path}: {message}")]
    Io {
        /// The file, as [`DocumentSource::label`] names it.
        path: PathBuf,
        /// The I/O error.
        message: String,
    },
}

/// `path` named relative to `root` (`acme/shop/_vance/…`), so that a server's directory
/// layout is not revealed: a relative path (already named so) as it is, a path outside the
/// root by its file name only, never an absolute path of the server.
pub fn root_relative(root: &Path, path: &Path) -> String {
    if path.is_relative() {
        return path.display().to_string();
    }
    if let Ok(rel) = path.strip_prefix(root) {
        return rel.display().to_string();
    }
    if let Ok(canonical) = root.canonicalize()
        && let Ok(rel) = path.strip_prefix(&canonical)
    {
        return rel.display().to_string();
    }
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The directory under `_vance/` that holds drafts of workflows: `<name>.yaml`, started only
/// explicitly, published into `workflows/`.
pub const DRAFTS_DIR: &str = "workflow-drafts";

/// The directory under `_vance/` that keeps every replaced live workflow document, immutable:
/// `<name>/<sha256 of the text>.yaml`.
pub const HISTORY_DIR: &str = "workflow-history";

/// The directory under `_vance/` of the workflows' lifecycle markers: `<name>.yaml` exists
/// while the workflow is archived.
pub const STATE_DIR: &str = "workflow-state";

/// A directory tree of documents: `<root>/<tenant>/<project>/_vance/…`, with
/// `<root>/<tenant>/_tenant/_vance/…` as the tenant-wide fallback.
#[derive(Debug, Clone)]
pub struct DocumentSource {
    /// Shared by the clones (a server clones its state, and with it this, per request).
    root: Arc<Path>,
    served: bool,
    /// Directories besides the tree that no step may reach (the server's store).
    protected: Arc<[PathBuf]>,
    /// Parsed settings files and read workflow documents, shared by the clones of this
    /// source.
    files: Arc<FileCaches>,
}

/// The longest name of a document, a tenant or a project, in bytes: `<name>.yaml` stays
/// within the 255 bytes a file system takes for a file name.
pub(crate) const MAX_NAME: usize = 250;

/// Checks that `name` is a plain document name of at most 250 bytes (`MAX_NAME`).
pub fn check_name(name: &str) -> Result<(), DocumentError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !name.contains("..");
    if ok {
        Ok(())
    } else {
        Err(DocumentError::InvalidName(name.to_string()))
    }
}

/// The error inside the I/O error of [`DocumentSource::confined`]: the file (as
/// [`DocumentSource::label`] names it) leads out of its project.
#[derive(Debug)]
struct LeadsOut(String);

impl std::fmt::Display for LeadsOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} leads out of its project through a symbolic link",
            self.0
        )
    }
}

impl std::error::Error for LeadsOut {}

/// Why a file is not UTF-8 text: where its first byte that is not lies, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotUtf8Text {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, in characters.
    pub column: usize,
    /// What the file is: `the file is not UTF-8 text (byte 0xE9)`, or UTF-16 text.
    pub what: String,
}

impl NotUtf8Text {
    /// The position and nature of `e`.
    pub fn of(e: &std::string::FromUtf8Error) -> Self {
        let bytes = e.as_bytes();
        let (line, column) = utf8_position(e);
        let what = if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
            "the file is UTF-16 text (it begins with a UTF-16 byte-order mark)".to_string()
        } else {
            format!(
                "the file is not UTF-8 text (byte 0x{:02X})",
                bytes[e.utf8_error().valid_up_to()]
            )
        };
        Self { line, column, what }
    }

    /// The `NotUtf8Text` an error of [`DocumentSource::read_text`] carries, if it is one.
    pub fn in_error(e: &std::io::Error) -> Option<&Self> {
        e.get_ref().and_then(|inner| inner.downcast_ref::<Self>())
    }
}

impl std::fmt::Display for NotUtf8Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not UTF-8 text at line {}, column {}: {}: expected a UTF-8 document; save the file \
             as UTF-8",
            self.line, self.column, self.what
        )
    }
}

impl std::error::Error for NotUtf8Text {}

/// The line and column (from 1, in characters) of the first byte of a text that is not UTF-8.
pub fn utf8_position(e: &std::string::FromUtf8Error) -> (usize, usize) {
    let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
    // The bytes before it are valid UTF-8.
    let before = std::str::from_utf8(valid).unwrap_or_default();
    // Line breaks as YAML counts them (a line feed, a carriage return, or both together);
    // a byte-order mark is no column of the first line.
    let (mut line, mut column) = (1, 1);
    let mut chars = before.chars().peekable();
    let mut first = true;
    while let Some(c) = chars.next() {
        match c {
            '\u{FEFF}' if first => {}
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => {
                line += 1;
                column = 1;
            }
            _ => column += 1,
        }
        first = false;
    }
    (line, column)
}

/// Whether `e` is [`DocumentSource::confined`]'s refusal of a file that leads out of its
/// project.
pub fn leads_out(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<LeadsOut>()) || crate::beneath::is_outside(e)
}

impl DocumentSource {
    /// Documents under `root` in the `<tenant>/<project>` layout.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: Arc::from(root.into()),
            served: false,
            protected: Arc::from([]),
            files: Arc::default(),
        }
    }

    /// The same tree, marked as served to remote clients (`magrathea serve`, an application's
    /// HTTP server) rather than run by its owner from the `magrathea` command. What a served
    /// project's runs may execute is stricter by default; see [`TenantSettings`](crate::TenantSettings).
    pub fn served(mut self) -> Self {
        self.served = true;
        self
    }

    /// The same tree, with `dir` (the server's store, when it lies outside the tree) among
    /// the directories no step may reach: a served shell step whose sandbox would let it read
    /// one is refused, as for the tree itself.
    pub fn protect(mut self, dir: impl Into<PathBuf>) -> Self {
        let mut all = self.protected.to_vec();
        all.push(dir.into());
        self.protected = Arc::from(all);
        self
    }

    /// The tree's root and the directories [`DocumentSource::protect`] added.
    pub fn protected(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(&*self.root).chain(self.protected.iter().map(PathBuf::as_path))
    }

    /// Whether the tree is served to remote clients (see [`DocumentSource::served`]).
    pub fn is_served(&self) -> bool {
        self.served
    }

    /// A path as messages and records name it. In a served tree, relative to the root
    /// (`acme/shop/_vance/…`), or by its file name when it lies outside (a workspace the
    /// tenant placed elsewhere): what a task's error or a run's journal says reaches API
    /// clients, who must not learn the server's directory layout. For the owner running the
    /// `magrathea` command, the path as it is.
    pub fn label(&self, path: &Path) -> String {
        if self.served {
            root_relative(&self.root, path)
        } else {
            path.display().to_string()
        }
    }

    /// A single project directory (the `magrathea` command's view): the project is the
    /// directory's name, the tenant its parent's, and the tenant fallback is
    /// `<parent>/_tenant/`.
    pub fn for_project_dir(dir: &Path) -> (Self, Scope) {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let name = |p: &Path| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "_".into())
        };
        let project = name(&dir);
        let tenant_dir = dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| dir.clone());
        let tenant = name(&tenant_dir);
        let root = tenant_dir
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| tenant_dir.clone());
        (
            Self {
                root: Arc::from(root),
                served: false,
                protected: Arc::from([]),
                files: Arc::default(),
            },
            Scope::new(tenant, project),
        )
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The project's directory.
    pub fn project_dir(&self, scope: &Scope) -> PathBuf {
        self.root.join(&scope.tenant).join(&scope.project)
    }

    /// The tenant-wide directory.
    pub fn tenant_dir(&self, scope: &Scope) -> PathBuf {
        self.root.join(&scope.tenant).join("_tenant")
    }

    /// `path`, a file of this tree, as the file to read. In a served tree the file must lie,
    /// with every symbolic link resolved, inside the project or tenant directory its path
    /// names (`<root>/<tenant>/<project or _tenant>`): a link that leads elsewhere — another
    /// project, another tenant, the server's own files — is refused with
    /// [`std::io::ErrorKind::PermissionDenied`], as the documents API refuses it. A shell step
    /// may make links in its project; the server reads with more rights than the step has.
    /// The canonical path is returned, so a link swapped after the check changes nothing.
    /// The tree of the `magrathea` command is its owner's: links there are followed.
    pub fn confined(&self, path: &Path) -> std::io::Result<PathBuf> {
        self.confined_beneath(path).map(|(_, real)| real)
    }

    /// [`DocumentSource::confined`], with the canonical project (or `_tenant`) directory the
    /// path lies beneath in a served tree (`None` for the owner's tree): what opens and writes
    /// of it resolve beneath ([`crate::beneath`]), so that a link a step swaps in after the
    /// check leads nowhere else.
    ///
    /// # Errors
    /// As [`DocumentSource::confined`].
    pub fn confined_beneath(&self, path: &Path) -> std::io::Result<(Option<PathBuf>, PathBuf)> {
        if !self.served {
            return Ok((None, path.to_path_buf()));
        }
        let outside = || {
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                LeadsOut(self.label(path)),
            )
        };
        let rel = path.strip_prefix(&*self.root).map_err(|_| outside())?;
        let mut parts = rel.components();
        let (Some(tenant), Some(project)) = (parts.next(), parts.next()) else {
            return Err(outside());
        };
        let named = self.root.join(tenant).join(project);
        // The project (or `_tenant`) directory itself stays in its tenant's: a project that
        // is a link to another tenant's is none of this tenant's.
        let base = match crate::confine::child_of(&self.root.join(tenant), project.as_ref())? {
            Ok(base) => base,
            Err(Unresolved::LeadsOut) => return Err(outside()),
            Err(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{} not found", self.label(path)),
                ));
            }
        };
        // Resolved without looking past the project: a link out is refused alike whether
        // its target exists or not, so the answer tells nothing of another tenant's files.
        match crate::confine::resolve_inside(&base, &named, &base.join(parts.as_path())) {
            Ok(real) => Ok((Some(base), real)),
            Err(Unresolved::LeadsOut) => Err(outside()),
            // A loop of links (all inside: each was judged before it was followed) names no
            // document either.
            Err(Unresolved::Missing | Unresolved::Unreadable) => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{} not found", self.label(path)),
            )),
        }
    }

    /// Checks that a file written under `dir`, a directory of this tree that may not exist yet,
    /// stays in its project: the nearest directory that exists (where the missing ones would
    /// be made) must pass [`DocumentSource::confined`].
    pub fn confined_dir(&self, dir: &Path) -> std::io::Result<()> {
        let existing = dir.ancestors().find(|d| d.exists()).unwrap_or(dir);
        // Without its project (or tenant) directory yet, all of it would be made afresh.
        let inside_one = existing
            .strip_prefix(&*self.root)
            .is_ok_and(|rel| rel.components().count() >= 2);
        if !inside_one && dir.starts_with(&*self.root) {
            return Ok(());
        }
        self.confined(existing).map(drop)
    }

    /// `path`, a file of this tree, opened through [`DocumentSource::confined`] (beneath its
    /// project in a served tree) as [`crate::regular_file::open`] opens it.
    ///
    /// # Errors
    /// As [`DocumentSource::confined`] and [`crate::regular_file::open`].
    pub fn open_confined(&self, path: &Path) -> std::io::Result<std::fs::File> {
        match self.confined_beneath(path)? {
            (Some(base), real) => crate::regular_file::open_beneath(&base, &real),
            (None, real) => crate::regular_file::open(&real),
        }
    }

    /// The text of `path`, a file of this tree, read through [`DocumentSource::confined`]. A
    /// file that is not UTF-8 is [`std::io::ErrorKind::InvalidData`] carrying a
    /// [`NotUtf8Text`] ([`NotUtf8Text::in_error`]).
    pub fn read_text(&self, path: &Path) -> std::io::Result<String> {
        let bytes = crate::regular_file::read_opened(self.open_confined(path)?)?;
        String::from_utf8(bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, NotUtf8Text::of(&e)))
    }

    /// The [`DocumentError`] of an error reading `path` that is neither a missing file nor a
    /// link out.
    fn read_error(&self, path: &Path, e: &std::io::Error) -> DocumentError {
        if crate::regular_file::is_too_large(e) {
            return DocumentError::TooLarge {
                path: self.label(path).into(),
            };
        }
        match NotUtf8Text::in_error(e) {
            Some(text) => DocumentError::NotUtf8 {
                path: self.label(path).into(),
                text: text.clone(),
            },
            None => DocumentError::Io {
                path: self.label(path).into(),
                message: e.to_string(),
            },
        }
    }

    /// Resolves `_vance/<kind>/<name>.yaml` by the cascade: project, then tenant.
    pub fn document(
        &self,
        scope: &Scope,
        kind: &str,
        name: &str,
    ) -> Result<(PathBuf, String), DocumentError> {
        check_name(name)?;
        let file = format!("{name}.yaml");
        let project = self
            .project_dir(scope)
            .join("_vance")
            .join(kind)
            .join(&file);
        let tenant = self.tenant_dir(scope).join("_vance").join(kind).join(&file);
        // A name that is there but no document (a link that leads nowhere, a directory).
        let mut no_file = None;
        for path in [&project, &tenant] {
            match self.files.document(path, |p| self.read_text(p)) {
                Ok(text) => return Ok((path.clone(), text)),
                // Not there (or no regular file: a named pipe a step made is no document),
                // unless a link on the way (a project, `_vance/`, a directory) leads out: then
                // refused as a link out to something is.
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound
                        || crate::regular_file::is_not_regular(&e) =>
                {
                    if self.confined(path).is_err_and(|e| leads_out(&e)) {
                        return Err(DocumentError::OutsideProject(self.label(path).into()));
                    }
                    if no_file.is_none() && std::fs::symlink_metadata(path).is_ok() {
                        no_file = Some(path);
                    }
                    continue;
                }
                Err(e) if leads_out(&e) => {
                    return Err(DocumentError::OutsideProject(self.label(path).into()));
                }
                Err(e) => return Err(self.read_error(path, &e)),
            }
        }
        // The name as a file name (`x.yaml`), or a close one of the documents there.
        let hint = if let Some(path) = no_file {
            format!(
                " (`{}` is there but is no regular file: a link that leads nowhere, a \
                 directory or a named pipe)",
                self.label(path)
            )
        } else if let Some(stem) = name.strip_suffix(".yaml").filter(|s| !s.is_empty()) {
            format!(" (the name is the file's without `.yaml`: did you mean '{stem}'?)")
        } else {
            let names = self.document_names(scope, kind);
            crate::suggest::hint(
                name,
                names.iter().map(String::as_str).filter(|n| *n != name),
            )
        };
        Err(DocumentError::UnknownWorkflow {
            name: name.to_string(),
            project: self.label(&project).into(),
            tenant: self.label(&tenant).into(),
            hint,
        })
    }

    /// Resolves a workflow document by the cascade.
    pub fn workflow(&self, scope: &Scope, name: &str) -> Result<(PathBuf, String), DocumentError> {
        self.document(scope, "workflows", name)
    }

    /// The document a new run of `name` starts from: the live workflow by the cascade, or,
    /// with `draft`, the project's `_vance/workflow-drafts/<name>.yaml`. An archived workflow
    /// refuses both ([`DocumentError::Archived`]).
    pub fn workflow_to_start(
        &self,
        scope: &Scope,
        name: &str,
        draft: bool,
    ) -> Result<(PathBuf, String), DocumentError> {
        check_name(name)?;
        if self.is_archived(scope, name) {
            return Err(DocumentError::Archived(name.to_string()));
        }
        if !draft {
            return self.workflow(scope, name);
        }
        let path = self.draft_path(scope, name);
        match self.read_text(&path) {
            Ok(text) => Ok((path, text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(DocumentError::NoDraft(name.to_string()))
            }
            Err(e) if leads_out(&e) => Err(DocumentError::OutsideProject(self.label(&path).into())),
            Err(e) => Err(self.read_error(&path, &e)),
        }
    }

    /// The project's draft of the workflow `name` (which may not exist).
    pub fn draft_path(&self, scope: &Scope, name: &str) -> PathBuf {
        self.project_dir(scope)
            .join("_vance")
            .join(DRAFTS_DIR)
            .join(format!("{name}.yaml"))
    }

    /// The marker that archives the workflow `name` in the project (which may not exist).
    pub fn archive_marker(&self, scope: &Scope, name: &str) -> PathBuf {
        self.project_dir(scope)
            .join("_vance")
            .join(STATE_DIR)
            .join(format!("{name}.yaml"))
    }

    /// Whether the workflow `name` is archived in the project: its marker exists (inside the
    /// project: one reached through a link out of it is none).
    pub fn is_archived(&self, scope: &Scope, name: &str) -> bool {
        let marker = self.archive_marker(scope, name);
        // Every start asks, and almost every answer is no: one `stat` says so. Only a marker
        // found is checked to lie inside the project (several lookups more).
        check_name(name).is_ok()
            && marker.is_file()
            && marker
                .parent()
                .is_some_and(|dir| self.confined_dir(dir).is_ok())
    }

    /// Names of the workflows visible in the scope (project first, then tenant), sorted.
    pub fn workflow_names(&self, scope: &Scope) -> Vec<String> {
        self.document_names(scope, "workflows")
    }

    /// Names of the `_vance/<kind>/*.yaml` documents visible in the scope, sorted (at most a
    /// directory's first 10,000 entries each). In a served tree each directory is listed
    /// beneath its project (or tenant) directory: one a step swapped for a link out lists
    /// nothing, so a hint never names what lies elsewhere.
    fn document_names(&self, scope: &Scope, kind: &str) -> Vec<String> {
        let mut names = Vec::new();
        for base in [self.project_dir(scope), self.tenant_dir(scope)] {
            let dir = base.join("_vance").join(kind);
            let listed = if self.served {
                crate::beneath::list_dir(&base, &dir)
            } else {
                crate::beneath::list_dir_following(&dir)
            };
            let Ok(mut list) = listed else {
                continue;
            };
            for _ in 0..10_000 {
                let Some(entry) = list.next_name() else {
                    break;
                };
                if let Some(name) = entry
                    .ok()
                    .and_then(|n| n.to_str()?.strip_suffix(".yaml").map(str::to_owned))
                {
                    names.push(name);
                }
            }
        }
        names.sort();
        names.dedup();
        names
    }

    /// The workspace directory named `name` for a scope: the project's `workspaces:` setting
    /// (relative paths are relative to the project), else `workspace` = the project directory.
    pub fn workspace_dir(&self, scope: &Scope, name: &str) -> Option<PathBuf> {
        let project = self.project_dir(scope);
        match self.settings(scope).workspaces.get(name) {
            Some(p) if p.is_absolute() => Some(p.clone()),
            Some(p) => Some(project.join(p)),
            None if name == "workspace" => Some(project),
            None => None,
        }
    }

    /// Whether `file` is, once every link is followed, the project's or the tenant's
    /// `_vance/settings.yaml`, which hold event tokens, webhook path tokens and signing
    /// secrets: no step reads them, and the documents API shows them only to a token that may
    /// write them.
    pub fn is_settings_file(&self, scope: &Scope, file: &Path) -> bool {
        let Ok(real) = file.canonicalize() else {
            return false;
        };
        [self.project_dir(scope), self.tenant_dir(scope)]
            .iter()
            .filter_map(|dir| dir.join("_vance").join("settings.yaml").canonicalize().ok())
            .any(|settings| settings == real)
    }

    /// The tenant's settings (`<tenant>/_tenant/_vance/settings.yaml`), or defaults. The
    /// documents API cannot write this file: it belongs to the tenant's administrator.
    pub fn tenant_settings(&self, scope: &Scope) -> super::settings::TenantSettings {
        let path = self.tenant_dir(scope).join("_vance").join("settings.yaml");
        self.files.tenant(&path, |p| {
            super::settings::TenantSettings::from_read(p, self.read_text(p))
        })
    }

    /// The project's settings (`_vance/settings.yaml`), or defaults.
    pub fn settings(&self, scope: &Scope) -> super::settings::ProjectSettings {
        let path = self.project_dir(scope).join("_vance").join("settings.yaml");
        self.files.project(&path, |p| {
            super::settings::ProjectSettings::from_read(p, self.read_text(p))
        })
    }
}

#[cfg(test)]
mod tests;
