//! The base commit of `verify-evidence --base REF`, read from the root's git
//! repository with the `git` command (docs/threat-model.md#i8).
//!
//! Why the command and not a library such as `gix` (measured;
//! docs/ci.md#why-the-git-command has the numbers): every CI runner that checks a
//! repository out has `git`, and the audit needs three plumbing calls plus
//! one `cat-file` per ledger, rules or wiring file present at the base, a few
//! milliseconds each. `gix` (features `revision`, `sha1`) brings 124 crates,
//! 94 of them new, 3.2 CPU-minutes of release build and 3.4 MB of binary to
//! save one process start per file once per CI run. The process is spawned
//! only by the binary, through
//! [`Ambient::git`]; this module builds arguments and parses output.

use std::path::{Path, PathBuf};

use super::base::BaseTree;
use crate::ambient::{Ambient, GitOutput};

/// One commit of the root's repository.
pub(crate) struct GitBase<'a> {
    amb: &'a dyn Ambient,
    root: PathBuf,
    commit: String,
    /// The root's path inside the repository, with a trailing `/` (or empty).
    prefix: String,
    label: String,
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).trim().to_owned()
}

impl<'a> GitBase<'a> {
    /// Resolves `rev` to a commit in the repository that holds `root`. The
    /// error says why in one sentence, with the fix.
    pub(crate) fn open(
        amb: &'a dyn Ambient,
        root: &Path,
        rev: &str,
    ) -> Result<GitBase<'a>, String> {
        if rev.is_empty() || rev.starts_with('-') || rev.chars().any(char::is_control) {
            return Err(format!(
                "--base `{}` is not a revision name",
                rev.escape_debug()
            ));
        }
        let run = |args: &[&str]| -> Result<GitOutput, String> {
            amb.git(root, args).map_err(|e| {
                format!("--base needs the `git` command to read the base commit, and running it failed: {e}")
            })
        };
        let prefix = run(&["rev-parse", "--show-prefix"])?;
        if !prefix.success {
            return Err(format!(
                "--base {rev}: `{}` is not inside a git repository ({})",
                root.display(),
                text(&prefix.stderr)
            ));
        }
        let spec = format!("{rev}^{{commit}}");
        let commit = run(&["rev-parse", "--verify", "--quiet", &spec])?;
        let sha = text(&commit.stdout);
        if !commit.success || sha.is_empty() {
            return Err(format!(
                "--base {rev}: no such commit in the repository at `{}`; in CI fetch it first (actions/checkout with `fetch-depth: 0`, or `git fetch origin {rev}`)",
                root.display()
            ));
        }
        let short: String = sha.chars().take(12).collect();
        Ok(GitBase {
            amb,
            root: root.to_path_buf(),
            label: if sha == rev {
                sha.clone()
            } else {
                format!("{rev} ({short})")
            },
            commit: sha,
            prefix: text(&prefix.stdout),
        })
    }

    fn git(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        let out = self
            .amb
            .git(&self.root, args)
            .map_err(|e| format!("git {}: {e}", args.join(" ")))?;
        if !out.success {
            return Err(format!("git {}: {}", args.join(" "), text(&out.stderr)));
        }
        Ok(out.stdout)
    }
}

impl BaseTree for GitBase<'_> {
    fn label(&self) -> &str {
        &self.label
    }

    fn files(&self, paths: &[&str]) -> Result<Vec<String>, String> {
        let full: Vec<String> = paths
            .iter()
            .map(|p| format!("{}{p}", self.prefix))
            .collect();
        let mut args = vec![
            "ls-tree",
            "-r",
            "-z",
            "--full-tree",
            self.commit.as_str(),
            "--",
        ];
        args.extend(full.iter().map(String::as_str));
        let out = self.git(&args)?;
        let mut files = Vec::new();
        for rec in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            // `<mode> SP <type> SP <object> TAB <path>`
            let Some(tab) = rec.iter().position(|b| *b == b'\t') else {
                return Err(format!(
                    "git ls-tree printed an unexpected line: {}",
                    text(rec)
                ));
            };
            let (meta, path) = (&rec[..tab], &rec[tab + 1..]);
            // Regular files only: a symlink or submodule at the base holds no state.
            if !(meta.starts_with(b"100644 blob ") || meta.starts_with(b"100755 blob ")) {
                continue;
            }
            let Ok(path) = std::str::from_utf8(path) else {
                continue;
            };
            if let Some(rel) = path.strip_prefix(self.prefix.as_str()) {
                files.push(rel.to_owned());
            }
        }
        Ok(files)
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        let spec = format!("{}:{}{path}", self.commit, self.prefix);
        self.git(&["cat-file", "blob", &spec])
    }
}
