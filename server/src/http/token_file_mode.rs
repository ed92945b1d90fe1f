//! Who else may write the token file. A token file, or an `_auth/` directory, that every user
//! of the machine may write lets any of them add a token of their own with every scope on any
//! tenant: it is refused, as sshd refuses an `authorized_keys` that others can write. One that
//! its group may write (a umask of 002 gives that) is used with a warning, and so is a file that
//! every user may read while it holds plain `token:` values.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// Why `file` (the token file) may not be trusted: it or its directory is writable by every
/// user. A file or directory that is missing or cannot be examined is left to the reading.
pub(super) fn world_writable(file: &Path) -> Option<String> {
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty())?;
    [(dir, "directory"), (file, "file")]
        .into_iter()
        .find_map(|(path, what)| {
            let mode = mode_of(path)?;
            (mode & 0o002 != 0).then(|| {
                format!(
                    "the token {what} {} is writable by every user of this machine (mode \
                     {mode:04o}): any of them could add a token of their own; remove their \
                     write permission (`chmod o-w {}`)",
                    path.display(),
                    path.display()
                )
            })
        })
}

/// Warnings about `file` that do not stop its use: it or its directory is writable by its
/// group; it holds plain tokens (`plain`) and every user may read it.
pub(super) fn warnings(file: &Path, plain: bool) -> Vec<String> {
    let mut said = Vec::new();
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        for (path, what) in [(dir, "directory"), (file, "file")] {
            if let Some(mode) = mode_of(path).filter(|m| m & 0o020 != 0) {
                said.push(format!(
                    "the token {what} {} is writable by its group (mode {mode:04o}): each \
                     member may add a token; `chmod g-w` it unless that is meant",
                    path.display()
                ));
            }
        }
    }
    if let Some(mode) = mode_of(file).filter(|m| plain && m & 0o004 != 0) {
        said.push(format!(
            "the token file {} holds plain `token:` values and every user of this machine may \
             read it (mode {mode:04o}): give `tokenSha256:` instead, or `chmod o-r` it",
            file.display()
        ));
    }
    said
}

fn mode_of(path: &Path) -> Option<u32> {
    Some(std::fs::metadata(path).ok()?.permissions().mode() & 0o7777)
}

#[cfg(test)]
mod tests {
    use std::fs::Permissions;

    use super::*;

    #[test]
    fn names_what_every_user_or_the_group_may_write_or_read() {
        let dir = tempfile::tempdir().unwrap();
        let auth = dir.path().join("_auth");
        std::fs::create_dir(&auth).unwrap();
        let file = auth.join("tokens.yaml");
        std::fs::write(&file, "tokens: []\n").unwrap();
        let chmod = |p: &Path, m: u32| std::fs::set_permissions(p, Permissions::from_mode(m));
        chmod(&auth, 0o755).unwrap();
        chmod(&file, 0o600).unwrap();
        assert_eq!(world_writable(&file), None);
        assert!(warnings(&file, true).is_empty());

        chmod(&file, 0o644).unwrap();
        assert_eq!(world_writable(&file), None);
        assert!(warnings(&file, false).is_empty(), "hashes may be read");
        let said = warnings(&file, true);
        assert!(said.len() == 1 && said[0].contains("plain"), "{said:?}");

        chmod(&file, 0o664).unwrap();
        chmod(&auth, 0o775).unwrap();
        assert_eq!(world_writable(&file), None);
        assert_eq!(warnings(&file, false).len(), 2);

        chmod(&file, 0o666).unwrap();
        let why = world_writable(&file).unwrap();
        assert!(why.contains("token file") && why.contains("0666"), "{why}");
        chmod(&file, 0o644).unwrap();
        chmod(&auth, 0o1777).unwrap();
        let why = world_writable(&file).unwrap();
        assert!(
            why.contains("token directory") && why.contains("1777"),
            "{why}"
        );

        // A missing file's directory still counts: anyone could create the file.
        std::fs::remove_file(&file).unwrap();
        assert!(world_writable(&file).is_some());
    }
}
