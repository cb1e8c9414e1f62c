//! Shared helpers: temporary repositories and driving the real binaries.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Path of a built binary of this package.
pub fn bin(name: &str) -> PathBuf {
    match name {
        "evidence-gate" => PathBuf::from(env!("CARGO_BIN_EXE_evidence-gate")),
        "verify-evidence" => PathBuf::from(env!("CARGO_BIN_EXE_verify-evidence")),
        other => panic!("unknown binary {other}"),
    }
}

/// A temporary repository, and a private user configuration directory
/// (`XDG_CONFIG_HOME` of every command run in it).
pub struct Repo {
    pub dir: tempfile::TempDir,
    pub config: tempfile::TempDir,
}

impl Repo {
    pub fn new() -> Repo {
        Repo {
            dir: tempfile::tempdir().expect("tempdir"),
            config: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// Writes the user's rules file (`$XDG_CONFIG_HOME/evidence-gate/rules.json`),
    /// the place that may relax policy (threat-model.md I9).
    pub fn user_rules(&self, content: impl AsRef<[u8]>) {
        let dir = self.config.path().join("evidence-gate");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("rules.json"), content).unwrap();
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes a file, creating parent directories.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        p
    }

    pub fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.join(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    #[cfg(unix)]
    pub fn symlink(&self, target: impl AsRef<Path>, rel: &str) {
        let p = self.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::os::unix::fs::symlink(target, p).unwrap();
    }

    /// Runs a binary with `args` in the repository, feeding `stdin`.
    pub fn run(&self, name: &str, args: &[&str], stdin: Option<&[u8]>) -> Run {
        let config = self.config.path().to_str().unwrap();
        run_in(
            self.path(),
            name,
            args,
            stdin,
            &[("XDG_CONFIG_HOME", config)],
        )
    }

    /// Like [`Repo::run`] with extra environment variables.
    pub fn run_env(
        &self,
        name: &str,
        args: &[&str],
        stdin: Option<&[u8]>,
        env: &[(&str, &str)],
    ) -> Run {
        // The repository's own user configuration directory wins.
        let config = self.config.path().to_str().unwrap();
        let mut all = env.to_vec();
        all.push(("XDG_CONFIG_HOME", config));
        run_in(self.path(), name, args, stdin, &all)
    }

    /// Digest of every file under the repository (path, size, content hash,
    /// mtime), to prove that a command wrote nothing.
    pub fn snapshot(&self) -> Vec<(String, Vec<u8>, Option<std::time::SystemTime>)> {
        let mut out = Vec::new();
        snapshot_into(self.path(), self.path(), &mut out);
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

fn snapshot_into(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, Vec<u8>, Option<std::time::SystemTime>)>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let content = if meta.is_file() {
            std::fs::read(&p).unwrap_or_default()
        } else {
            Vec::new()
        };
        out.push((rel, content, meta.modified().ok()));
        if meta.is_dir() {
            snapshot_into(root, &p, out);
        }
    }
}

/// The result of one process run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as one JSON value.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }

    /// Every finding code in a `verify --format json` report.
    pub fn codes(&self) -> Vec<String> {
        let v = self.json();
        let mut out = Vec::new();
        for r in v["reports"].as_array().expect("reports") {
            for f in r["findings"].as_array().expect("findings") {
                out.push(f["code"].as_str().unwrap().to_owned());
            }
        }
        out
    }
}

/// Copies the directories and regular files under `from` into `to`
/// (anything else is left out).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let ty = e.file_type().expect("file type");
        let dest = to.join(e.file_name());
        if ty.is_dir() {
            copy_tree(&e.path(), &dest);
        } else if ty.is_file() {
            std::fs::copy(e.path(), &dest).expect("copy");
        }
    }
}

/// An empty directory shared by every test as `XDG_CONFIG_HOME`.
pub fn empty_config_home() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("tempdir"))
        .path()
}

/// A temporary directory shared by every test as `HOME` (and, below it,
/// `XDG_STATE_HOME`) where the caller names none.
pub fn temp_home() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("tempdir"))
        .path()
}

/// Points a spawned binary's `HOME` and `XDG_STATE_HOME` at [`temp_home`]
/// (callers may override them afterwards).
pub fn isolate_home(cmd: &mut Command) {
    cmd.env("HOME", temp_home())
        .env("XDG_STATE_HOME", temp_home().join("state"));
}

pub fn run_in(
    dir: &Path,
    name: &str,
    args: &[&str],
    stdin: Option<&[u8]>,
    env: &[(&str, &str)],
) -> Run {
    let mut cmd = Command::new(bin(name));
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.env_remove("NO_COLOR");
    // Never the real home's configuration: an empty directory unless the
    // caller names one.
    cmd.env("XDG_CONFIG_HOME", empty_config_home());
    // Never the real home's state either (threat-model.md §3: the per-user
    // witness): a shared temporary home unless the caller names one.
    isolate_home(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn");
    {
        let mut si = child.stdin.take().unwrap();
        if let Some(bytes) = stdin {
            // The child may exit before reading everything (size caps).
            let _ = si.write_all(bytes);
        }
    }
    let out: Output = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
