//! Files of a project, opened only when they are regular files.
//!
//! A step may make any kind of file in its project: a named pipe (`mkfifo`) blocks whoever
//! opens it for reading until a writer comes, which may be never, and a device may never end.
//! Every file the server reads from a project (documents, settings, scripts, layouts, the
//! files a tool reads) is opened without blocking and looked at through the opened
//! descriptor: anything but a regular file is refused, so no request and no step can hold a
//! thread of the server on such a file. Nor is a file read past [`MAX_BYTES`] (a step may make
//! a sparse file of any length in no time): its length is looked at before it is read, and a
//! file that grows meanwhile is read no further.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The most bytes of a project file the server reads: far above any document, settings file
/// or script (a document over the API is at most 1 MiB).
pub const MAX_BYTES: u64 = 16 << 20;

/// What [`open`] refuses: a named pipe, a device or a socket.
#[derive(Debug)]
struct NotRegular;

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a regular file (a named pipe, a device or a socket)")
    }
}

impl std::error::Error for NotRegular {}

/// What [`open`] and [`read`] refuse: a file longer than [`MAX_BYTES`].
#[derive(Debug)]
struct TooLarge;

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "longer than {} MiB, the most the server reads of a file of a project",
            MAX_BYTES >> 20
        )
    }
}

impl std::error::Error for TooLarge {}

fn too_large() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::FileTooLarge, TooLarge)
}

/// Whether `e` is the error of [`open`] or [`read`] for a file longer than [`MAX_BYTES`].
pub fn is_too_large(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<TooLarge>())
}

/// Whether `e` is the error of [`open`] for a file that is not a regular file.
pub fn is_not_regular(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<NotRegular>())
}

/// Opens `path` (following links, as `File::open` does) for reading without blocking on a
/// named pipe, and refuses it unless the opened file is a regular file of at most
/// [`MAX_BYTES`]: a directory is `IsADirectory`, a special file [`is_not_regular`], a longer
/// file [`is_too_large`].
pub fn open(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    checked(options.open(path)?)
}

/// [`open`] of `path` resolved beneath `base` ([`crate::beneath::open_read`]): no link, even
/// one swapped in by a step after `path` was checked, leads the open out of `base`.
///
/// # Errors
/// As [`open`], and a path that leads out ([`crate::beneath::is_outside`]).
pub fn open_beneath(base: &Path, path: &Path) -> std::io::Result<File> {
    checked(crate::beneath::open_read(base, path)?)
}

/// `file` when it is a regular file of at most [`MAX_BYTES`] (see [`open`]).
fn checked(file: File) -> std::io::Result<File> {
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if kind.is_dir() {
        // What reading a directory gives, as before this check.
        return Err(std::io::Error::from(std::io::ErrorKind::IsADirectory));
    }
    if !kind.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            NotRegular,
        ));
    }
    if meta.len() > MAX_BYTES {
        return Err(too_large());
    }
    Ok(file)
}

/// The bytes of the regular file at `path` (see [`open`]).
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    read_opened(open(path)?)
}

/// The bytes of `file`, opened by [`open`]: at most [`MAX_BYTES`], however it grows.
pub fn read_opened(file: File) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The text of the regular file at `path` (see [`open`]); not UTF-8 is `InvalidData`.
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_pipe_a_directory_or_a_huge_file_is_refused_at_once_and_a_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = read(&fifo).unwrap_err();
        assert!(is_not_regular(&e), "{e}");
        assert_eq!(
            read(dir.path()).unwrap_err().kind(),
            std::io::ErrorKind::IsADirectory
        );
        let file = dir.path().join("a.yaml");
        std::fs::write(&file, "text").unwrap();
        assert_eq!(read_to_string(&file).unwrap(), "text");
        assert_eq!(
            read(&dir.path().join("missing")).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
        // A sparse file of any length costs a step nothing to make; it is not read.
        let sparse = dir.path().join("sparse.yaml");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(100 << 30)
            .unwrap();
        let e = read(&sparse).unwrap_err();
        assert!(is_too_large(&e), "{e}");
    }
}
