//! The workspace a command works on: the opened root directory, the rules
//! that apply to it and the place of its per-user state, assembled once at
//! each command-line edge and passed down.
//!
//! The rules come in layers (docs/threat-model.md#i9):
//!
//! 1. the embedded defaults;
//! 2. the user's configuration (`$XDG_CONFIG_HOME/evidence-gate/rules.json`),
//!    in full, when the edge reads it;
//! 3. the `--rules FILE` named on the command line, in full;
//! 4. the repository's `.evidence-gate/rules.json`, as the edge's
//!    [`RepoRules`] says: tighten-only (hooks, gate, goal engine, init,
//!    doctor), ignored, or — for `verify-evidence --repo-rules`, where the
//!    caller opts in — in full beneath `--rules`.
//!
//! The tighten-only merge itself lives in one place,
//! [`RuleSet::load_tightened`]; this module only decides which layers go in.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

use crate::ambient::{self, Ambient, ReadError};
use crate::rules::profiles::{Profile, ProfileError, Profiles};
use crate::rules::{self, REPO_OVERRIDE, RuleSet, RulesError};
use crate::userstate::{self, UserState, UserStateError};

/// Cap on a rules file named on the command line (`--rules FILE`).
pub const MAX_RULES_FILE: u64 = 4 * 1024 * 1024;

/// What the repository's `.evidence-gate/rules.json` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepoRules {
    /// Applied after the trusted layers, tighten-only.
    Tighten,
    /// Applied in full, beneath `--rules` (`verify-evidence --repo-rules`:
    /// the caller asked for the repository's own policy).
    Trusted,
    /// Not read.
    Ignore,
}

/// What a failure to assemble the rules does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// The edge reports the error.
    Fail,
    /// The hooks' policy: an unusable repository override falls back to the
    /// trusted layers alone, unusable trusted layers to the embedded
    /// defaults; the error is kept in [`Workspace::rules_error`].
    Fallback,
}

/// How an edge assembles its workspace.
#[derive(Debug, Clone, Copy)]
pub struct WorkspaceOptions<'a> {
    /// `--rules FILE`: read with [`ambient::read_file`] (a leaf symlink the
    /// user chose is followed; a FIFO, directory or device is refused; at most
    /// [`MAX_RULES_FILE`] bytes).
    pub rules_file: Option<&'a Path>,
    /// Whether the user's configuration file is a layer.
    pub user_config: bool,
    /// The repository override's role.
    pub repo_rules: RepoRules,
    /// What an error does.
    pub on_error: OnError,
    /// The ambient path the root directory was opened at, when the edge
    /// knows it: canonicalized once through the [`Ambient`] capability, it
    /// names the workspace's per-user state ([`Workspace::user_state`]).
    pub root_path: Option<&'a Path>,
}

/// Why the workspace could not be assembled.
#[derive(Debug)]
pub enum WorkspaceError {
    /// The `--rules` file could not be read.
    RulesFile {
        /// The path as given.
        path: PathBuf,
        /// Why.
        error: ReadError,
    },
    /// The user's configuration file could not be read.
    UserConfig(RulesError),
    /// The repository override could not be read, or the merged rules are
    /// invalid.
    Rules(RulesError),
}

impl fmt::Display for WorkspaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkspaceError::RulesFile { path, error } => {
                write!(f, "{}: {error}", path.display())
            }
            WorkspaceError::UserConfig(e) | WorkspaceError::Rules(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for WorkspaceError {}

/// The opened root directory, its rules and its canonical path.
#[derive(Debug)]
pub struct Workspace {
    dir: Dir,
    rules: RuleSet,
    repo_override: bool,
    rules_error: Option<String>,
    /// `opts.root_path` canonicalized; `None` when no path was given.
    canonical_root: Option<io::Result<PathBuf>>,
}

impl Workspace {
    /// Assembles the rules for the opened root `dir` as `opts` says, and
    /// canonicalizes `opts.root_path` (unknown when absent or when that
    /// fails).
    pub fn open(
        amb: &dyn Ambient,
        dir: Dir,
        opts: &WorkspaceOptions<'_>,
    ) -> Result<Workspace, WorkspaceError> {
        let loaded = load_rules(amb, Some(&dir), opts)?;
        Ok(Workspace {
            dir,
            rules: loaded.rules,
            repo_override: loaded.repo_override,
            rules_error: loaded.error,
            canonical_root: opts.root_path.map(|p| amb.canonicalize(p)),
        })
    }

    /// A workspace whose rules the edge assembled and judged itself
    /// (`doctor` reports each layer's error as a check of its own): `rules`
    /// as given, no repository override reported as applied, and the
    /// canonical form of `root_path` as [`Workspace::open`] takes it.
    pub(crate) fn with_rules(
        amb: &dyn Ambient,
        dir: Dir,
        rules: RuleSet,
        root_path: Option<&Path>,
    ) -> Workspace {
        Workspace {
            dir,
            rules,
            repo_override: false,
            rules_error: None,
            canonical_root: root_path.map(|p| amb.canonicalize(p)),
        }
    }

    /// The root's canonical path (symlinks resolved), when the edge named
    /// the root's path and it could be resolved.
    pub fn canonical_root(&self) -> Option<&Path> {
        self.canonical_root.as_ref()?.as_deref().ok()
    }

    /// Why the root's path the edge named could not be resolved.
    pub fn canonical_root_error(&self) -> Option<&io::Error> {
        self.canonical_root.as_ref()?.as_ref().err()
    }

    /// The workspace's per-user state directory
    /// (`$XDG_STATE_HOME/evidence-gate/v1/<workspace-id>/`,
    /// docs/threat-model.md#tm-3), resolved only: nothing is created or
    /// opened. `None` when the canonical root or the per-user base is
    /// unknown.
    pub fn user_state_path(&self, amb: &dyn Ambient) -> Option<PathBuf> {
        userstate::workspace_path(amb, self.canonical_root()?)
    }

    /// Opens (creating and claiming it on first use) the workspace's
    /// per-user state directory, the one [`Workspace::user_state_path`]
    /// names; [`UserStateError::RootUnknown`] without a canonical root.
    pub(crate) fn user_state(&self, amb: &dyn Ambient) -> Result<UserState, UserStateError> {
        match self.canonical_root() {
            Some(root) => UserState::open(amb, root),
            None => Err(UserStateError::RootUnknown),
        }
    }

    /// The root directory.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The rules.
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// Gives up the root directory and the rules.
    pub fn into_parts(self) -> (Dir, RuleSet) {
        (self.dir, self.rules)
    }

    /// Whether the repository override was read and applied (tighten-only or
    /// in full).
    pub fn repo_override_applied(&self) -> bool {
        self.repo_override
    }

    /// With [`OnError::Fallback`], the error the rules fell back from.
    pub fn rules_error(&self) -> Option<&str> {
        self.rules_error.as_deref()
    }

    /// The goal-engine profile `name` of the rules.
    pub fn profile(&self, name: &str) -> Result<Profile, ProfileError> {
        Profiles::lookup(&self.rules, name)
    }
}

/// Rules assembled by [`load_rules`].
#[derive(Debug)]
pub struct LoadedRules {
    /// The rules.
    pub rules: RuleSet,
    /// Whether the repository override was applied.
    pub repo_override: bool,
    /// With [`OnError::Fallback`], the error the rules fell back from.
    pub error: Option<String>,
}

/// Assembles the rules for `root` (no root: no repository override) as
/// `opts` says; with [`OnError::Fallback`] it does not fail.
pub fn load_rules(
    amb: &dyn Ambient,
    root: Option<&Dir>,
    opts: &WorkspaceOptions<'_>,
) -> Result<LoadedRules, WorkspaceError> {
    match (load_strict(amb, root, opts), opts.on_error) {
        (Ok(l), _) => Ok(l),
        (Err(e), OnError::Fail) => Err(e),
        (Err(e), OnError::Fallback) => Ok(fallback(amb, opts, e)),
    }
}

fn embedded() -> RuleSet {
    RuleSet::embedded().expect("embedded rules validate")
}

/// The hooks' fallback after `error`: the trusted layers alone when they
/// load, else the embedded defaults.
fn fallback(amb: &dyn Ambient, opts: &WorkspaceOptions<'_>, error: WorkspaceError) -> LoadedRules {
    let message = Some(error.to_string());
    let rules = match error {
        WorkspaceError::Rules(_) => trusted_layers(amb, opts)
            .ok()
            .and_then(|owned| RuleSet::load(&rules::layers(&owned)).ok())
            .unwrap_or_else(embedded),
        WorkspaceError::RulesFile { .. } | WorkspaceError::UserConfig(_) => embedded(),
    };
    LoadedRules {
        rules,
        repo_override: false,
        error: message,
    }
}

/// The trusted layers: the user's configuration (when asked for), then the
/// `--rules` file. The `--rules` file is read first, so its error wins.
fn trusted_layers(
    amb: &dyn Ambient,
    opts: &WorkspaceOptions<'_>,
) -> Result<Vec<(String, Vec<u8>)>, WorkspaceError> {
    let extra = match opts.rules_file {
        Some(path) => match ambient::read_file(amb, path, MAX_RULES_FILE) {
            Ok(bytes) => Some((path.display().to_string(), bytes)),
            Err(error) => {
                return Err(WorkspaceError::RulesFile {
                    path: path.to_path_buf(),
                    error,
                });
            }
        },
        None => None,
    };
    let mut owned = Vec::new();
    if opts.user_config {
        owned.extend(rules::read_user_config(amb).map_err(WorkspaceError::UserConfig)?);
    }
    owned.extend(extra);
    Ok(owned)
}

fn load_strict(
    amb: &dyn Ambient,
    root: Option<&Dir>,
    opts: &WorkspaceOptions<'_>,
) -> Result<LoadedRules, WorkspaceError> {
    let mut owned = trusted_layers(amb, opts)?;
    let repo = match (root, opts.repo_rules) {
        (Some(dir), RepoRules::Tighten | RepoRules::Trusted) => {
            rules::read_repo_override(dir).map_err(WorkspaceError::Rules)?
        }
        _ => None,
    };
    let repo_override = repo.is_some();
    let rules = if opts.repo_rules == RepoRules::Trusted {
        if let Some(b) = repo {
            owned.insert(0, (REPO_OVERRIDE.to_owned(), b));
        }
        RuleSet::load(&rules::layers(&owned))
    } else {
        RuleSet::load_tightened(
            &rules::layers(&owned),
            repo.as_ref().map(|b| rules::Layer {
                name: REPO_OVERRIDE,
                bytes: b,
            }),
        )
    }
    .map_err(WorkspaceError::Rules)?;
    Ok(LoadedRules {
        rules,
        repo_override,
        error: None,
    })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::rules::hooks::SubagentStopRules;
    use std::collections::HashMap;

    use crate::ambient::test_double::Fake;

    /// A temp tree: `home/` (the user's configuration under
    /// `home/cfg/evidence-gate/rules.json`) and `repo/`.
    struct Tree {
        tmp: tempfile::TempDir,
        amb: Fake,
    }

    impl Tree {
        fn new() -> Tree {
            let tmp = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(tmp.path().join("repo/.evidence-gate")).unwrap();
            std::fs::create_dir_all(tmp.path().join("home/cfg/evidence-gate")).unwrap();
            let mut vars = HashMap::new();
            vars.insert("HOME".into(), tmp.path().join("home").into_os_string());
            vars.insert(
                "XDG_CONFIG_HOME".into(),
                tmp.path().join("home/cfg").into_os_string(),
            );
            Tree {
                amb: Fake { vars },
                tmp,
            }
        }
        fn path(&self, rel: &str) -> PathBuf {
            self.tmp.path().join(rel)
        }
        fn write(&self, rel: &str, text: &str) {
            std::fs::write(self.path(rel), text).unwrap();
        }
        fn user_config(&self, text: &str) {
            self.write("home/cfg/evidence-gate/rules.json", text);
        }
        fn repo_override(&self, text: &str) {
            self.write("repo/.evidence-gate/rules.json", text);
        }
        fn open(&self, opts: &WorkspaceOptions<'_>) -> Result<Workspace, WorkspaceError> {
            let dir = self.amb.open_dir(&self.path("repo")).unwrap();
            Workspace::open(&self.amb, dir, opts)
        }
    }

    fn opts(rules_file: Option<&Path>) -> WorkspaceOptions<'_> {
        WorkspaceOptions {
            rules_file,
            user_config: true,
            repo_rules: RepoRules::Tighten,
            on_error: OnError::Fail,
            root_path: None,
        }
    }

    fn stop(ws: &Workspace) -> SubagentStopRules {
        ws.rules().family().unwrap()
    }

    #[test]
    fn the_user_state_path_is_the_directory_user_state_opens() {
        let mut t = Tree::new();
        t.amb.vars.insert(
            "XDG_STATE_HOME".into(),
            t.path("home/state").into_os_string(),
        );
        // The root is named through a symlink: the state is the canonical
        // root's.
        std::os::unix::fs::symlink(t.path("repo"), t.path("link")).unwrap();
        let link = t.path("link");
        let ws = t
            .open(&WorkspaceOptions {
                root_path: Some(&link),
                ..opts(None)
            })
            .unwrap();
        let canonical = std::fs::canonicalize(t.path("repo")).unwrap();
        assert_eq!(ws.canonical_root(), Some(canonical.as_path()));
        let path = ws.user_state_path(&t.amb).unwrap();
        // Resolving creates nothing.
        assert!(!path.exists());
        let state = ws.user_state(&t.amb).unwrap();
        assert_eq!(state.path(), path.as_path());
        assert!(path.is_dir());
        assert_eq!(
            UserState::open(&t.amb, &canonical).unwrap().path(),
            path.as_path()
        );
    }

    #[test]
    fn without_a_root_path_the_user_state_is_unknown() {
        let t = Tree::new();
        let ws = t.open(&opts(None)).unwrap();
        assert_eq!(ws.canonical_root(), None);
        assert!(ws.canonical_root_error().is_none());
        assert_eq!(ws.user_state_path(&t.amb), None);
        assert!(matches!(
            ws.user_state(&t.amb),
            Err(UserStateError::RootUnknown)
        ));
        // A root path that does not resolve is unknown too.
        let gone = t.path("gone");
        let ws = t
            .open(&WorkspaceOptions {
                root_path: Some(&gone),
                ..opts(None)
            })
            .unwrap();
        assert_eq!(ws.canonical_root(), None);
        assert_eq!(
            ws.canonical_root_error().map(io::Error::kind),
            Some(io::ErrorKind::NotFound)
        );
    }

    #[test]
    fn embedded_alone_when_no_layer_exists() {
        let t = Tree::new();
        let ws = t.open(&opts(None)).unwrap();
        assert_eq!(ws.rules().sources(), ["embedded"]);
        assert!(!ws.repo_override_applied());
        assert_eq!(stop(&ws).max_attempts, 3);
    }

    #[test]
    fn provenance_lists_every_layer_in_order() {
        let t = Tree::new();
        t.user_config(r#"{"subagent_stop": {"max_attempts": 4}}"#);
        t.write("extra.json", r#"{"subagent_stop": {"max_attempts": 6}}"#);
        t.repo_override(r#"{"subagent_stop": {"max_attempts": 7}}"#);
        let extra = t.path("extra.json");
        let ws = t.open(&opts(Some(&extra))).unwrap();
        let user = t.path("home/cfg/evidence-gate/rules.json");
        assert_eq!(
            ws.rules().sources(),
            [
                "embedded".to_owned(),
                user.display().to_string(),
                extra.display().to_string(),
                format!("{REPO_OVERRIDE} (tighten-only)"),
            ]
        );
        assert!(ws.repo_override_applied());
        assert_eq!(stop(&ws).max_attempts, 7);
    }

    #[test]
    fn without_user_config_or_repository_only_the_rules_file_counts() {
        let t = Tree::new();
        t.user_config(r#"{"subagent_stop": {"max_attempts": 4}}"#);
        t.repo_override(r#"{"subagent_stop": {"max_attempts": 7}}"#);
        let ws = t
            .open(&WorkspaceOptions {
                user_config: false,
                repo_rules: RepoRules::Ignore,
                ..opts(None)
            })
            .unwrap();
        assert_eq!(ws.rules().sources(), ["embedded"]);
        assert!(!ws.repo_override_applied());
    }

    #[test]
    fn trusted_repository_rules_apply_in_full_beneath_the_rules_file() {
        let t = Tree::new();
        t.repo_override(r#"{"subagent_stop": {"reuse_protection": false}}"#);
        t.write("extra.json", r#"{"subagent_stop": {"max_attempts": 2}}"#);
        let extra = t.path("extra.json");
        let ws = t
            .open(&WorkspaceOptions {
                user_config: false,
                repo_rules: RepoRules::Trusted,
                ..opts(Some(&extra))
            })
            .unwrap();
        assert_eq!(
            ws.rules().sources(),
            [
                "embedded".to_owned(),
                REPO_OVERRIDE.to_owned(),
                extra.display().to_string()
            ]
        );
        assert!(ws.repo_override_applied());
        assert!(!stop(&ws).reuse_protection);
        assert_eq!(stop(&ws).max_attempts, 2);
    }

    #[test]
    fn a_loosening_repository_override_is_refused() {
        let t = Tree::new();
        // The gated agent writes the repository: it tries to switch reuse
        // protection off and to shrink the attempt cap below the user's.
        t.user_config(r#"{"subagent_stop": {"max_attempts": 5}}"#);
        t.repo_override(r#"{"subagent_stop": {"reuse_protection": false, "max_attempts": 1}}"#);
        let ws = t.open(&opts(None)).unwrap();
        assert!(stop(&ws).reuse_protection);
        assert_eq!(stop(&ws).max_attempts, 5);
        let mut ignored: Vec<&str> = ws
            .rules()
            .relaxations()
            .iter()
            .map(|r| r.pointer.as_str())
            .collect();
        ignored.sort_unstable();
        assert_eq!(
            ignored,
            [
                "/subagent_stop/max_attempts",
                "/subagent_stop/reuse_protection"
            ]
        );
    }

    #[test]
    fn a_tightening_repository_override_is_applied() {
        let t = Tree::new();
        t.repo_override(r#"{"subagent_stop": {"max_attempts": 8}}"#);
        let ws = t.open(&opts(None)).unwrap();
        assert_eq!(stop(&ws).max_attempts, 8);
        assert!(ws.rules().relaxations().is_empty());
    }

    #[test]
    fn a_repository_override_that_is_a_symlink_is_refused() {
        let t = Tree::new();
        t.write(
            "elsewhere.json",
            r#"{"subagent_stop": {"max_attempts": 8}}"#,
        );
        std::os::unix::fs::symlink(
            t.path("elsewhere.json"),
            t.path("repo/.evidence-gate/rules.json"),
        )
        .unwrap();
        assert!(matches!(
            t.open(&opts(None)),
            Err(WorkspaceError::Rules(e)) if e.file == REPO_OVERRIDE
        ));
    }

    #[test]
    fn a_rules_file_symlink_is_followed_as_the_user_chose_it() {
        let t = Tree::new();
        t.write("target.json", r#"{"subagent_stop": {"max_attempts": 6}}"#);
        std::os::unix::fs::symlink(t.path("target.json"), t.path("link.json")).unwrap();
        let link = t.path("link.json");
        let ws = t.open(&opts(Some(&link))).unwrap();
        assert_eq!(stop(&ws).max_attempts, 6);
        assert_eq!(ws.rules().sources()[1], link.display().to_string());
    }

    #[test]
    fn a_rules_file_that_is_a_fifo_is_refused_without_blocking() {
        let t = Tree::new();
        let fifo = t.path("fifo.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(matches!(
            t.open(&opts(Some(&fifo))),
            Err(WorkspaceError::RulesFile {
                error: ReadError::NotRegular,
                ..
            })
        ));
    }

    #[test]
    fn an_oversized_rules_file_is_refused() {
        let t = Tree::new();
        let big = t.path("big.json");
        std::fs::write(&big, vec![b' '; MAX_RULES_FILE as usize + 1]).unwrap();
        let err = t.open(&opts(Some(&big))).unwrap_err();
        assert!(
            matches!(
                err,
                WorkspaceError::RulesFile {
                    error: ReadError::TooLarge { .. },
                    ..
                }
            ),
            "{err}"
        );
        // At the cap it is read (and then judged as JSON).
        std::fs::write(&big, vec![b' '; MAX_RULES_FILE as usize]).unwrap();
        assert!(matches!(
            t.open(&opts(Some(&big))),
            Err(WorkspaceError::Rules(_))
        ));
    }

    #[test]
    fn fallback_drops_an_invalid_repository_override_but_keeps_the_trusted_layers() {
        let t = Tree::new();
        t.user_config(r#"{"subagent_stop": {"max_attempts": 4}}"#);
        t.repo_override("{not json");
        let strict = t.open(&opts(None)).unwrap_err();
        assert!(matches!(strict, WorkspaceError::Rules(_)));
        let ws = t
            .open(&WorkspaceOptions {
                on_error: OnError::Fallback,
                ..opts(None)
            })
            .unwrap();
        assert_eq!(ws.rules_error(), Some(strict.to_string().as_str()));
        assert_eq!(stop(&ws).max_attempts, 4);
        assert!(!ws.repo_override_applied());
    }

    #[test]
    fn fallback_to_embedded_when_a_trusted_layer_is_unusable() {
        let t = Tree::new();
        t.user_config("[]");
        let ws = t
            .open(&WorkspaceOptions {
                on_error: OnError::Fallback,
                ..opts(None)
            })
            .unwrap();
        assert!(ws.rules_error().is_some());
        assert_eq!(ws.rules().sources(), ["embedded"]);
        let missing = t.path("missing.json");
        let ws = t
            .open(&WorkspaceOptions {
                on_error: OnError::Fallback,
                ..opts(Some(&missing))
            })
            .unwrap();
        assert_eq!(
            ws.rules_error().unwrap(),
            format!("{}: {}", missing.display(), ReadError::NotFound)
        );
        assert_eq!(ws.rules().sources(), ["embedded"]);
    }
}
