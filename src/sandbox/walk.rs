//! Directory walks through confined, no-follow handles (glob expansion).

use std::io;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;

/// What a walked directory entry is, from the entry's own type (never followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed, whatever it points to).
    Symlink,
    /// FIFO, socket, device.
    Other,
}

/// One entry met by [`walk`].
#[derive(Debug, Clone)]
pub struct Entry {
    /// Repo-relative path with forward slashes.
    pub path: String,
    /// Its type.
    pub kind: EntryKind,
}

/// What the walk could not read.
#[derive(Debug)]
pub struct WalkError {
    /// Repo-relative directory that failed.
    pub path: String,
    /// The error.
    pub error: io::Error,
}

/// Walks `start` (a directory handle whose repo-relative path is `prefix`,
/// empty for the root) depth-first in byte order of names. `descend(dir_path)`
/// decides whether a directory is entered; `visit` sees every entry of every
/// entered directory. Entries whose names are not UTF-8 are reported to
/// `visit_non_utf8` and not entered. Directories are opened with
/// `open_dir_nofollow`, so a directory replaced by a symlink mid-walk is not
/// entered.
pub fn walk(
    start: &Dir,
    prefix: &str,
    descend: &mut dyn FnMut(&str) -> bool,
    visit: &mut dyn FnMut(&Entry),
    visit_non_utf8: &mut dyn FnMut(&str),
) -> Result<(), WalkError> {
    let mut names: Vec<(String, EntryKind)> = Vec::new();
    let entries = start.entries().map_err(|error| WalkError {
        path: prefix.to_owned(),
        error,
    })?;
    for entry in entries {
        let entry = entry.map_err(|error| WalkError {
            path: prefix.to_owned(),
            error,
        })?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            visit_non_utf8(prefix);
            continue;
        };
        let ft = entry.file_type().map_err(|error| WalkError {
            path: join(prefix, name),
            error,
        })?;
        let kind = if ft.is_symlink() {
            EntryKind::Symlink
        } else if ft.is_dir() {
            EntryKind::Dir
        } else if ft.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        };
        names.push((name.to_owned(), kind));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in names {
        let path = join(prefix, &name);
        visit(&Entry {
            path: path.clone(),
            kind,
        });
        if kind == EntryKind::Dir && descend(&path) {
            match start.open_dir_nofollow(&name) {
                Ok(sub) => walk(&sub, &path, descend, visit, visit_non_utf8)?,
                // Replaced between listing and opening: report it as a symlink
                // if it became one, otherwise as an unreadable directory.
                Err(error) => {
                    if start
                        .symlink_metadata(&name)
                        .is_ok_and(|m| m.file_type().is_symlink())
                    {
                        visit(&Entry {
                            path,
                            kind: EntryKind::Symlink,
                        });
                    } else if error.kind() != io::ErrorKind::NotFound {
                        return Err(WalkError { path, error });
                    }
                }
            }
        }
    }
    Ok(())
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

/// True when the symlink at `path` (repo-relative, already met by a walk)
/// resolves, inside the root, to a directory. Escaping or dangling links are
/// reported as directories too, so a walk never silently skips them.
pub fn points_to_dir(root: &Dir, path: &str) -> bool {
    match root.metadata(path) {
        Ok(m) => m.is_dir(),
        Err(e) => e.kind() != io::ErrorKind::NotFound,
    }
}
