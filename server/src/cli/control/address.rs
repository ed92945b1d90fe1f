//! A socket's address for a store in a deep directory. A Unix socket's path must fit in
//! `sun_path` (108 bytes with its end), and a store's directory is often deeper than that (a
//! CI runner's checkout, a project under a long home directory). A longer path is reached
//! through an open handle on its directory, `/proc/self/fd/<n>/<name>`, which the kernel
//! follows to the directory when it binds or connects: the socket is the same file at the
//! same place.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// The longest path a socket address holds.
const SOCKET_PATH_MAX: usize = 107;

/// The address of the socket file `path`, and the directory handle it goes through, which
/// must stay open while the address is bound or connected to.
pub(crate) struct Address {
    /// What to bind or connect to.
    pub(crate) path: PathBuf,
    _dir: Option<File>,
}

impl Address {
    /// `path` itself when it fits a socket address, else a short path through its directory.
    pub(crate) fn of(path: &Path) -> io::Result<Self> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(Self::plain(path));
        };
        if path.as_os_str().len() <= SOCKET_PATH_MAX {
            return Ok(Self::plain(path));
        }
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        // A handle for the path alone: it needs no right to read the directory.
        let dir = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
            .open(dir)?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name);
        Ok(Self {
            path,
            _dir: Some(dir),
        })
    }

    fn plain(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            _dir: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::os::unix::net::{UnixListener, UnixStream};

    use super::*;

    #[test]
    fn a_socket_deeper_than_an_address_holds_is_bound_and_reached_in_its_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d".repeat(100)).join("e".repeat(100));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("control.sock");
        assert!(
            UnixListener::bind(&path).is_err(),
            "too long for an address"
        );

        let bound = Address::of(&path).unwrap();
        assert!(bound.path.as_os_str().len() <= SOCKET_PATH_MAX);
        let listener = UnixListener::bind(&bound.path).unwrap();
        drop(bound);
        assert!(path.exists(), "the socket is the file in its directory");

        let to = Address::of(&path).unwrap();
        let mut client = UnixStream::connect(&to.path).unwrap();
        client.write_all(b"hi").unwrap();
        let (mut served, _) = listener.accept().unwrap();
        let mut got = [0; 2];
        served.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hi");

        let short = tmp.path().join("s.sock");
        assert_eq!(Address::of(&short).unwrap().path, short);
    }
}
