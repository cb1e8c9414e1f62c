//! `verify-evidence --base REF` (docs/threat-model.md#i8, docs/threat-model.md#tm-6): recorded
//! history is append-only against git.
//!
//! - every ledger present at REF (goal ledgers, archived ledgers, the hook
//!   gate ledger) keeps REF's bytes as its prefix at HEAD
//!   (`LEDGER_REWRITTEN`);
//! - no plan, ledger or archived run present at REF vanishes, moves or is
//!   renamed (`STATE_VANISHED`), except the engine's own archive: REF's
//!   ledger bytes are the prefix of `<state>/.archive/<stamp>/ledger.jsonl`
//!   and the successor run's first record names that archive and its last
//!   record (`plan_created.replaced.archive` / `.previousHead`);
//! - a plan or ledger in a dot-named directory under a state directory,
//!   other than `.archive`, is `STATE_HIDDEN`;
//! - a run archived in the change (absent from REF) has the files it
//!   recorded re-hashed (`ARCHIVED_EVIDENCE_CHANGED`), even those the new
//!   run recorded again: a new run proving a reverted file does not make
//!   the old run's proof hold;
//! - `.evidence-gate/rules.json` and the repository's hook wiring files
//!   compared byte for byte with REF (`RULES_CHANGED`, `WIRING_CHANGED`).
//!
//! HEAD is the working tree (CI checks HEAD out), read through the sandbox;
//! REF is read through [`BaseTree`].

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use cap_std::fs::Dir;
use serde_json::{Value, json};

use super::progress::Silent;
use super::recorded::{self, LedgerFiles};
use super::scan::{Opened, entry_kind, open_state_file, scan_chain, scan_ledger};
use super::state_dir::{GOALS, LEDGER};
use crate::evidence::Root;
use crate::finding::problem_finding;
use crate::finding::{Code, Finding, Report, ReportBuilder, ReportKind, Severity};
use crate::goals::journal::LedgerKind;
use crate::ledger::ForeignSeverity;
use crate::sandbox::open::{self, FileProblem};
use crate::sandbox::walk::{self, EntryKind};
use crate::sandbox::{PathLimits, RelPath};

/// The archive directory inside a state directory (docs/state-formats.md#ge-2).
const ARCHIVE: &str = ".archive";
/// Most archive links followed from a live ledger back to REF's run.
const MAX_LINKS: usize = 64;
/// Deepest directory below a state directory the hidden-state scan enters.
const MAX_DEPTH: usize = 8;
/// Largest rules or wiring file compared.
const MAX_CONFIG: u64 = 4 * 1024 * 1024;

/// The base commit's tree (the `git` command in the binaries; tests
/// substitute their own).
pub(crate) trait BaseTree {
    /// How reports name the base: `REF (commit)`.
    fn label(&self) -> &str;
    /// Every regular file at or below each of `paths` (root-relative),
    /// root-relative.
    fn files(&self, paths: &[&str]) -> Result<Vec<String>, String>;
    /// The bytes of the file at `path` (root-relative).
    fn read(&self, path: &str) -> Result<Vec<u8>, String>;
}

/// What to compare with the base.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BaseOptions<'a> {
    /// Every state directory any policy in play names (HEAD's rules,
    /// REF's rules, the embedded defaults), root-relative.
    pub state_dirs: &'a [String],
    /// The hook gate ledger, root-relative.
    pub gate_ledger: &'a str,
    /// The repository rules override, root-relative.
    pub rules_file: &'a str,
    /// Hook wiring files a repository may hold, root-relative.
    pub wiring_files: &'a [&'a str],
    /// Warnings (`ARCHIVED_EVIDENCE_CHANGED`, `RULES_CHANGED`,
    /// `WIRING_CHANGED`) fail.
    pub strict: bool,
}

/// Findings grouped into reports by subject.
struct Reports {
    by_subject: BTreeMap<(u8, String), Vec<Finding>>,
}

impl Reports {
    fn push(&mut self, kind: ReportKind, subject: &str, f: Finding) {
        let rank = match kind {
            ReportKind::Plan => 0,
            ReportKind::GateLedger => 1,
            ReportKind::Payload => 2,
        };
        self.by_subject
            .entry((rank, subject.to_owned()))
            .or_default()
            .push(f);
    }

    fn finish(self) -> Vec<Report> {
        self.by_subject
            .into_iter()
            .map(|((rank, subject), findings)| {
                let kind = match rank {
                    0 => ReportKind::Plan,
                    1 => ReportKind::GateLedger,
                    _ => ReportKind::Payload,
                };
                let mut b = ReportBuilder::new(subject, kind);
                for f in findings {
                    b.push(f);
                }
                b.finish(true)
            })
            .collect()
    }
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

fn leaf(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, l)| l)
}

fn rel(path: &str) -> Option<RelPath> {
    RelPath::parse(path, PathLimits::default()).ok()
}

/// The file at `path` in the working tree, through the sandbox.
enum Head {
    Absent,
    File(cap_std::fs::File, u64),
    Problem(Finding),
}

fn open_head(root: &Dir, path: &str) -> Head {
    let dir_path = parent(path);
    let owned;
    let dir: &Dir = if dir_path.is_empty() {
        root
    } else {
        let Some(p) = rel(dir_path) else {
            return Head::Absent;
        };
        match open::open_dir(root, &p) {
            Ok(d) => {
                owned = d;
                &owned
            }
            Err(FileProblem::Missing) => return Head::Absent,
            Err(pr) => {
                let (code, why) = problem_finding(&pr);
                return Head::Problem(Finding::new(code, Some(path), why));
            }
        }
    };
    match open_state_file(dir, leaf(path), path) {
        Opened::Absent => Head::Absent,
        Opened::File(f, len) => Head::File(f, len),
        Opened::Problem(f) => Head::Problem(f),
    }
}

/// Whether the working-tree file at `path` starts with `prefix`.
enum Prefix {
    Absent,
    Holds,
    Differs { head_len: u64, at: u64 },
    Problem(Finding),
}

fn head_prefix(root: &Dir, path: &str, prefix: &[u8]) -> Prefix {
    let (mut file, len) = match open_head(root, path) {
        Head::Absent => return Prefix::Absent,
        Head::Problem(f) => return Prefix::Problem(f),
        Head::File(f, len) => (f, len),
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut done = 0usize;
    while done < prefix.len() {
        let want = (prefix.len() - done).min(buf.len());
        let n = match file.read(&mut buf[..want]) {
            Ok(n) => n,
            Err(e) => {
                return Prefix::Problem(Finding::new(
                    Code::IoError,
                    Some(path),
                    format!("could not read `{path}`: {e}"),
                ));
            }
        };
        if n == 0 {
            return Prefix::Differs {
                head_len: len,
                at: done as u64,
            };
        }
        if let Some(i) = buf[..n]
            .iter()
            .zip(&prefix[done..done + n])
            .position(|(a, b)| a != b)
        {
            return Prefix::Differs {
                head_len: len,
                at: (done + i) as u64,
            };
        }
        done += n;
    }
    Prefix::Holds
}

fn read_head(root: &Dir, path: &str) -> Result<Option<Vec<u8>>, Box<Finding>> {
    match open_head(root, path) {
        Head::Absent => Ok(None),
        Head::Problem(f) => Err(Box::new(f)),
        Head::File(f, len) => {
            if len > MAX_CONFIG {
                return Err(Box::new(Finding::new(
                    Code::IoError,
                    Some(path),
                    format!(
                        "`{path}` is over the {MAX_CONFIG}-byte limit for a configuration file"
                    ),
                )));
            }
            let mut out = Vec::new();
            f.take(MAX_CONFIG + 1)
                .read_to_end(&mut out)
                .map_err(|e| Box::new(Finding::new(Code::IoError, Some(path), e.to_string())))?;
            Ok(Some(out))
        }
    }
}

/// The first record of the working-tree ledger at `path`, if it is a JSON object.
fn first_record(root: &Dir, path: &str) -> Option<Value> {
    let Head::File(file, _) = open_head(root, path) else {
        return None;
    };
    let mut line = Vec::new();
    let mut r = std::io::BufReader::new(file.take(16 * 1024 * 1024));
    std::io::BufRead::read_until(&mut r, b'\n', &mut line).ok()?;
    serde_json::from_slice::<Value>(&line)
        .ok()
        .filter(Value::is_object)
}

/// The hash of the last record of the working-tree ledger at `path`.
fn ledger_head_hash(root: &Dir, path: &str) -> Option<String> {
    let Head::File(file, _) = open_head(root, path) else {
        return None;
    };
    scan_chain(file, path, ForeignSeverity::Warning, &mut Silent)
        .ok()?
        .chain
        .head
}

/// The engine's archive exception (docs/threat-model.md#tm-6): starting from the
/// live ledger of `dir`, follow `plan_created.replaced` links through
/// `dir/.archive/<stamp>/` to an archived ledger that keeps `bytes` as its
/// prefix, each link's `previousHead` naming that archive's last record.
fn archived_holder(root: &Dir, dir: &str, bytes: &[u8]) -> Option<String> {
    let archive_base = format!("{dir}/{ARCHIVE}/");
    let mut successor = format!("{dir}/{LEDGER}");
    for _ in 0..MAX_LINKS {
        let first = first_record(root, &successor)?;
        if entry_kind(&first) != Some(LedgerKind::PlanCreated.as_str()) {
            return None;
        }
        let replaced = first.get("replaced")?;
        // `.archive/<stamp>` relative to the state directory, or the
        // repo-relative path earlier versions wrote.
        let named_archive = replaced.get("archive")?.as_str()?;
        let archive = if named_archive.starts_with(&format!("{ARCHIVE}/")) {
            format!("{dir}/{named_archive}")
        } else {
            named_archive.to_owned()
        };
        let stamp = archive.strip_prefix(&archive_base)?;
        if stamp.is_empty() || stamp.contains('/') || stamp.starts_with('.') {
            return None;
        }
        let archived = format!("{archive}/{LEDGER}");
        // `previousHead: {seq, sha256}`, or the bare digest of earlier versions.
        let named = crate::ledger::previous_head_sha256(replaced);
        if named.is_none() || named != ledger_head_hash(root, &archived).as_deref() {
            return None;
        }
        if matches!(head_prefix(root, &archived, bytes), Prefix::Holds) {
            return Some(archive);
        }
        successor = archived;
    }
    None
}

/// Where a state file at REF lives: its state directory (the session or
/// base directory, never an archive), for grouping findings.
fn state_dir_of(path: &str) -> &str {
    let dir = parent(path);
    match dir.find(&format!("/{ARCHIVE}/")) {
        Some(i) => &dir[..i],
        None => dir,
    }
}

fn is_archived(path: &str) -> bool {
    path.split('/').any(|c| c == ARCHIVE)
}

/// Compares the working tree with the base and returns one report per
/// subject that has findings (none when everything holds).
pub(crate) fn check(root: &Root, base: &dyn BaseTree, opts: &BaseOptions<'_>) -> Vec<Report> {
    let dir = root.dir();
    let mut out = Reports {
        by_subject: BTreeMap::new(),
    };
    let label = base.label().to_owned();
    let escalate = |f: Finding| {
        if opts.strict {
            f.with_severity(Severity::Error)
        } else {
            f
        }
    };

    let mut watched: Vec<&str> = opts.state_dirs.iter().map(String::as_str).collect();
    watched.push(opts.gate_ledger);
    watched.push(opts.rules_file);
    watched.extend_from_slice(opts.wiring_files);
    let at_base: BTreeSet<String> = match base.files(&watched) {
        Ok(f) => f.into_iter().collect(),
        Err(e) => {
            out.push(
                ReportKind::Plan,
                ".",
                Finding::new(
                    Code::IoError,
                    None,
                    format!("could not list the base {label}: {e}"),
                ),
            );
            return out.finish();
        }
    };
    let under_state = |p: &str| {
        opts.state_dirs.iter().any(|s| {
            p.strip_prefix(s.as_str())
                .is_some_and(|r| r.starts_with('/'))
        })
    };
    let read_base = |p: &str, out: &mut Reports, kind: ReportKind, subject: &str| match base.read(p)
    {
        Ok(b) => Some(b),
        Err(e) => {
            out.push(
                kind,
                subject,
                Finding::new(
                    Code::IoError,
                    Some(p),
                    format!("could not read `{p}` at the base {label}: {e}"),
                ),
            );
            None
        }
    };

    // Ledgers and plans present at REF.
    for path in &at_base {
        let name = leaf(path);
        let gate = path == opts.gate_ledger;
        if !gate && !(under_state(path) && (name == LEDGER || name == GOALS)) {
            continue;
        }
        let (kind, subject) = if gate {
            (ReportKind::GateLedger, path.as_str())
        } else {
            (ReportKind::Plan, state_dir_of(path))
        };
        if name == GOALS && !gate {
            match open_head(dir, path) {
                Head::File(..) => {}
                Head::Problem(f) => out.push(kind, subject, f),
                Head::Absent => out.push(
                    kind,
                    subject,
                    Finding::new(
                        Code::StateVanished,
                        Some(path),
                        format!(
                            "the plan `{path}` exists at the base {label} and is gone: state that CI has seen may not be deleted, moved or renamed (restore it: `git checkout {} -- {path}`)",
                            base_rev(&label)
                        ),
                    ),
                ),
            }
            continue;
        }
        let Some(bytes) = read_base(path, &mut out, kind, subject) else {
            continue;
        };
        let verdict = head_prefix(dir, path, &bytes);
        if matches!(verdict, Prefix::Holds) {
            continue;
        }
        if !gate && !is_archived(path) && archived_holder(dir, parent(path), &bytes).is_some() {
            continue;
        }
        let f = match verdict {
            Prefix::Holds => continue,
            Prefix::Problem(f) => f,
            Prefix::Absent => Finding::new(
                Code::StateVanished,
                Some(path),
                format!(
                    "the ledger `{path}` exists at the base {label} and is gone, and no archived run the successor names holds it: recorded history may not be deleted, moved or renamed (restore it: `git checkout {} -- {path}`)",
                    base_rev(&label)
                ),
            )
            .with_detail(json!({"base": label, "baseBytes": bytes.len()})),
            Prefix::Differs { head_len, at } => Finding::new(
                Code::LedgerRewritten,
                Some(path),
                format!(
                    "the ledger no longer starts with its {} bytes at the base {label} (HEAD has {head_len} bytes and differs from byte {at}): a ledger only grows; restore the base's records (`git checkout {} -- {path}`) and append new work through the tool",
                    bytes.len(),
                    base_rev(&label)
                ),
            )
            .with_detail(json!({"base": label, "baseBytes": bytes.len(), "headBytes": head_len, "firstDifference": at})),
        };
        out.push(kind, subject, f);
    }

    // The working tree's state directories: hidden state and runs archived
    // in this change.
    let mut new_archives: Vec<String> = Vec::new();
    let mut hidden: BTreeSet<String> = BTreeSet::new();
    for s in opts.state_dirs {
        let Some(p) = rel(s) else { continue };
        let Ok(sdir) = open::open_dir(dir, &p) else {
            continue;
        };
        let mut entries = Vec::new();
        let depth = s.matches('/').count() + MAX_DEPTH;
        if let Err(e) = walk::walk(
            &sdir,
            s,
            &mut |d| d.matches('/').count() < depth,
            &mut |e| entries.push(e.clone()),
            &mut |_| {},
        ) {
            out.push(
                ReportKind::Plan,
                s,
                Finding::new(
                    Code::IoError,
                    Some(&e.path),
                    format!(
                        "could not list the state directory to look for hidden state: {}",
                        e.error
                    ),
                ),
            );
        }
        for e in entries {
            let name = leaf(&e.path);
            if e.kind != EntryKind::File || (name != LEDGER && name != GOALS) {
                continue;
            }
            let inner = &e.path[s.len() + 1..];
            let comps: Vec<&str> = inner.split('/').collect();
            let dirs = &comps[..comps.len() - 1];
            if let Some(i) = dirs
                .iter()
                .position(|c| c.starts_with('.') && *c != ARCHIVE)
            {
                hidden.insert(format!("{s}/{}", dirs[..=i].join("/")));
                continue;
            }
            // `<dir>/.archive/<stamp>/ledger.jsonl`
            if name == LEDGER
                && dirs.len() >= 2
                && dirs[dirs.len() - 2] == ARCHIVE
                && !at_base.contains(&e.path)
            {
                new_archives.push(e.path.clone());
            }
        }
    }
    for h in &hidden {
        out.push(
            ReportKind::Plan,
            h,
            Finding::new(
                Code::StateHidden,
                Some(h),
                format!(
                    "`{h}` holds a plan or ledger in a dot-named directory, where the audit does not look: state lives in session directories without a leading dot (move it back, e.g. `git mv {h} {}/{}`)",
                    parent(h),
                    leaf(h).trim_start_matches('.')
                ),
            ),
        );
    }
    for archived in new_archives {
        let state = state_dir_of(&archived).to_owned();
        let mut files = LedgerFiles::new(&archived);
        if let Head::File(f, _) = open_head(dir, &archived) {
            let _ = scan_ledger(
                f,
                &archived,
                ForeignSeverity::Warning,
                &mut Silent,
                &mut |line, v| files.record_entry(line, v),
            );
        }
        let (outcomes, _) = recorded::check(
            dir,
            root.limits(),
            root.file_checks(),
            std::slice::from_ref(&files),
            &mut Silent,
        );
        for o in outcomes {
            for f in o.findings {
                let message = format!(
                    "archived in this change (absent from the base {label}), a run {}; the file no longer holds what that run proved (restore it, or have a person review why the new run replaced that proof)",
                    f.message
                );
                let mut a = Finding::new(Code::ArchivedEvidenceChanged, f.path.as_deref(), message);
                a.detail = f.detail.map(|mut d| {
                    d["cause"] = json!(f.code.name());
                    d
                });
                out.push(ReportKind::Plan, &state, escalate(a));
            }
        }
    }

    // The auditor's policy and the hooks' wiring.
    let mut configs: Vec<(&str, Code)> = vec![(opts.rules_file, Code::RulesChanged)];
    configs.extend(opts.wiring_files.iter().map(|w| (*w, Code::WiringChanged)));
    for (path, code) in configs {
        let was = if at_base.contains(path) {
            match read_base(path, &mut out, ReportKind::Plan, path) {
                Some(b) => Some(b),
                None => continue,
            }
        } else {
            None
        };
        let now = match read_head(dir, path) {
            Ok(n) => n,
            Err(f) => {
                out.push(ReportKind::Plan, path, *f);
                continue;
            }
        };
        let what = match (&was, &now) {
            (None, None) => continue,
            (Some(a), Some(b)) if a == b => continue,
            (None, Some(_)) => "added",
            (Some(_), None) => "removed",
            (Some(_), Some(_)) => "changed",
        };
        let why = if code == Code::RulesChanged {
            "the repository's rules configure the hooks, the goal engine and this audit (state directories, evidence roots, limits)"
        } else {
            "hook wiring decides which hooks the agents' hosts run"
        };
        out.push(
            ReportKind::Plan,
            path,
            escalate(
                Finding::new(
                    code,
                    Some(path),
                    format!(
                        "`{path}` was {what} since the base {label}: {why}; have a person review the change (or restore it: `git checkout {} -- {path}`)",
                        base_rev(&label)
                    ),
                )
                .with_detail(json!({"base": label, "change": what})),
            ),
        );
    }
    out.finish()
}

/// The revision part of a label (`REF (commit)` → `REF`).
fn base_rev(label: &str) -> &str {
    label.split(' ').next().unwrap_or(label)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::rules::RuleSet;
    use crate::rules::evidence::EvidenceRules;

    /// A base tree held in memory: the library needs no git to be tested.
    struct Fixed(Vec<(&'static str, &'static [u8])>);

    impl BaseTree for Fixed {
        fn label(&self) -> &str {
            "base (0123456789ab)"
        }
        fn files(&self, paths: &[&str]) -> Result<Vec<String>, String> {
            Ok(self
                .0
                .iter()
                .filter(|(p, _)| {
                    paths
                        .iter()
                        .any(|w| p == w || p.starts_with(&format!("{w}/")))
                })
                .map(|(p, _)| (*p).to_owned())
                .collect())
        }
        fn read(&self, path: &str) -> Result<Vec<u8>, String> {
            self.0
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, b)| b.to_vec())
                .ok_or_else(|| format!("{path}: not at the base"))
        }
    }

    fn codes(tree: &Fixed, setup: impl FnOnce(&std::path::Path)) -> Vec<(Code, Severity)> {
        let tmp = tempfile::tempdir().unwrap();
        setup(tmp.path());
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let rules: EvidenceRules = RuleSet::embedded().unwrap().family().unwrap();
        let root = Root::new(dir, &rules).unwrap();
        let state = vec![".omo/ulw-loop".to_owned()];
        check(
            &root,
            tree,
            &BaseOptions {
                state_dirs: &state,
                gate_ledger: ".omo/evidence-gate/ledger.jsonl",
                rules_file: ".evidence-gate/rules.json",
                wiring_files: &[".claude/settings.json"],
                strict: false,
            },
        )
        .iter()
        .flat_map(|r| r.findings().iter().map(|f| (f.code, f.severity)))
        .collect()
    }

    const LEDGER_AT_BASE: &[u8] = b"{\"kind\":\"a\"}\n";

    #[test]
    fn a_ledger_that_extends_the_base_passes_and_one_that_does_not_is_rewritten() {
        let tree = Fixed(vec![(".omo/ulw-loop/s1/ledger.jsonl", LEDGER_AT_BASE)]);
        let grown = codes(&tree, |p| {
            std::fs::create_dir_all(p.join(".omo/ulw-loop/s1")).unwrap();
            std::fs::write(
                p.join(".omo/ulw-loop/s1/ledger.jsonl"),
                b"{\"kind\":\"a\"}\n{\"kind\":\"b\"}\n",
            )
            .unwrap();
        });
        assert!(grown.is_empty(), "{grown:?}");
        let edited = codes(&tree, |p| {
            std::fs::create_dir_all(p.join(".omo/ulw-loop/s1")).unwrap();
            std::fs::write(
                p.join(".omo/ulw-loop/s1/ledger.jsonl"),
                b"{\"kind\":\"b\"}\n",
            )
            .unwrap();
        });
        assert_eq!(edited, [(Code::LedgerRewritten, Severity::Error)]);
        let gone = codes(&tree, |_| {});
        assert_eq!(gone, [(Code::StateVanished, Severity::Error)]);
    }

    #[test]
    fn hidden_state_and_changed_wiring_are_reported() {
        let tree = Fixed(vec![(".claude/settings.json", b"{}")]);
        let found = codes(&tree, |p| {
            std::fs::create_dir_all(p.join(".omo/ulw-loop/.old/.archive/x")).unwrap();
            std::fs::write(p.join(".omo/ulw-loop/.old/goals.json"), b"{}").unwrap();
            std::fs::create_dir_all(p.join(".omo/ulw-loop/s1/.archive/x")).unwrap();
            std::fs::write(p.join(".omo/ulw-loop/s1/.archive/x/goals.json"), b"{}").unwrap();
            std::fs::create_dir_all(p.join(".claude")).unwrap();
            std::fs::write(p.join(".claude/settings.json"), b"{\"hooks\":{}}").unwrap();
        });
        assert_eq!(
            found,
            [
                (Code::WiringChanged, Severity::Warning),
                (Code::StateHidden, Severity::Error)
            ]
        );
    }
}
