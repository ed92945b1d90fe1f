//! The store's directory and files are for its owner alone: they hold every run's
//! parameters, variables and outputs. What the store creates has mode 0700 (directories) and
//! 0600 (files) whatever the umask; what exists already keeps its mode (its operator chose it).

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::Path;

/// Creates `dir` and its missing parents, each 0700.
pub(super) fn create_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Creates the empty file redb then initializes, 0600, unless it exists. Errors are left for
/// redb's open to report with its own words.
pub(super) fn create_file(path: &Path) {
    let _ = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
}
