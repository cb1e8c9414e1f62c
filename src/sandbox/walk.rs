//! Directory walks through confined, no-follow handles (glob expansion).

use std::io;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;

/// What a walked directory entry is, from the entry's own type (never followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
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
pub(crate) struct Entry {
    /// Repo-relative path with forward slashes.
    pub path: String,
    /// Its type.
    pub kind: EntryKind,
}

/// What the walk could not read.
#[derive(Debug)]
pub(crate) struct WalkError {
    /// Repo-relative directory that failed.
    pub path: String,
    /// The error.
    pub error: io::Error,
}

/// How many directory levels below its start a walk enters at most
/// (docs/threat-model.md#i14): the walk is iterative, and the bound keeps the
/// open handles (one per level) and the work finite on any tree. Deeper
/// directories are reported in [`Walked::too_deep`] and not entered.
pub(crate) const MAX_DEPTH: usize = 128;

/// What a finished walk could not cover.
#[derive(Debug, Default)]
#[must_use = "directories beyond the depth bound must be reported"]
pub(crate) struct Walked {
    /// Repo-relative directories at [`MAX_DEPTH`] that `descend` asked to
    /// enter and the walk did not.
    pub too_deep: Vec<String>,
}

/// One directory being walked: its handle, repo-relative path, sorted
/// entries and the next entry to visit.
struct Frame {
    dir: Dir,
    prefix: String,
    names: std::vec::IntoIter<(String, EntryKind)>,
}

/// Walks `start` (a directory handle whose repo-relative path is `prefix`,
/// empty for the root) depth-first in byte order of names. `descend(dir_path)`
/// decides whether a directory is entered; `visit` sees every entry of every
/// entered directory. Entries whose names are not UTF-8 are reported to
/// `visit_non_utf8` and not entered. Directories are opened with
/// `open_dir_nofollow`, so a directory replaced by a symlink mid-walk is not
/// entered. The walk keeps its own stack (no recursion) and enters at most
/// [`MAX_DEPTH`] levels; directories it would have entered below that are
/// returned in [`Walked::too_deep`].
pub(crate) fn walk(
    start: &Dir,
    prefix: &str,
    descend: &mut dyn FnMut(&str) -> bool,
    visit: &mut dyn FnMut(&Entry),
    visit_non_utf8: &mut dyn FnMut(&str),
) -> Result<Walked, WalkError> {
    let mut walked = Walked::default();
    let first = start.try_clone().map_err(|error| WalkError {
        path: prefix.to_owned(),
        error,
    })?;
    let names = list(&first, prefix, visit_non_utf8)?;
    let mut stack = vec![Frame {
        dir: first,
        prefix: prefix.to_owned(),
        names: names.into_iter(),
    }];
    loop {
        let depth = stack.len();
        let Some(top) = stack.last_mut() else { break };
        let Some((name, kind)) = top.names.next() else {
            stack.pop();
            continue;
        };
        let path = join(&top.prefix, &name);
        visit(&Entry {
            path: path.clone(),
            kind,
        });
        if kind != EntryKind::Dir || !descend(&path) {
            continue;
        }
        if depth > MAX_DEPTH {
            walked.too_deep.push(path);
            continue;
        }
        match top.dir.open_dir_nofollow(&name) {
            Ok(sub) => {
                let names = list(&sub, &path, visit_non_utf8)?;
                stack.push(Frame {
                    dir: sub,
                    prefix: path,
                    names: names.into_iter(),
                });
            }
            // Replaced between listing and opening: report it as a symlink
            // if it became one, otherwise as an unreadable directory.
            Err(error) => {
                if top
                    .dir
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
    Ok(walked)
}

/// The entries of one directory, sorted by name, with their own types.
fn list(
    dir: &Dir,
    prefix: &str,
    visit_non_utf8: &mut dyn FnMut(&str),
) -> Result<Vec<(String, EntryKind)>, WalkError> {
    let mut names: Vec<(String, EntryKind)> = Vec::new();
    let entries = dir.entries().map_err(|error| WalkError {
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
    Ok(names)
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
pub(crate) fn points_to_dir(root: &Dir, path: &str) -> bool {
    match root.metadata(path) {
        Ok(m) => m.is_dir(),
        Err(e) => e.kind() != io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, Dir) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        (tmp, dir)
    }

    #[test]
    fn visits_depth_first_in_byte_order() {
        let (_tmp, dir) = tree();
        dir.create_dir_all("b/c").unwrap();
        dir.write("b/c/f", b"x").unwrap();
        dir.write("a", b"x").unwrap();
        dir.write("b/e", b"x").unwrap();
        let mut seen = Vec::new();
        let walked = walk(
            &dir,
            "",
            &mut |_| true,
            &mut |e| seen.push(e.path.clone()),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(seen, ["a", "b", "b/c", "b/c/f", "b/e"]);
        assert!(walked.too_deep.is_empty());
    }

    #[test]
    fn stops_at_the_depth_bound_and_reports_the_directory_it_did_not_enter() {
        let (_tmp, dir) = tree();
        let mut cur = dir.try_clone().unwrap();
        for _ in 0..MAX_DEPTH + 5 {
            cur.create_dir("d").unwrap();
            cur = cur.open_dir("d").unwrap();
        }
        let mut deepest = 0;
        let walked = walk(
            &dir,
            "",
            &mut |_| true,
            &mut |e| deepest = deepest.max(e.path.split('/').count()),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(deepest, MAX_DEPTH + 1);
        assert_eq!(walked.too_deep.len(), 1);
        assert_eq!(walked.too_deep[0].split('/').count(), MAX_DEPTH + 1);
    }
}
