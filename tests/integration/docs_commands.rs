//! Every command block of `README.md` and `docs/*.md` runs as printed.
//!
//! A fenced block whose info string starts with `sh` or `console` is
//! executed; one that also carries the word `no-run` is skipped (installing a
//! host, `cargo test` itself, pushing to a remote). The blocks of one file run
//! in order in one temporary workspace, so a walkthrough may build on the
//! blocks before it; each block starts in the workspace root, a git
//! repository holding a copy of `fixtures/`. `HOME`, `XDG_*` and `CODEX_HOME`
//! point into the same temporary directory, the environment is otherwise
//! empty, and the built binaries come first on `PATH`.
//!
//! Conventions the documents follow (explained in the README, "How the
//! documentation is tested"):
//! * a block runs under `bash -e -o pipefail`: every command must exit 0,
//!   unless its line ends with the comment `# exit N`, which states its exit
//!   status (and is checked);
//! * in a `console` block, lines starting with `$ ` are commands and the
//!   lines after one are text its output must contain (`...` stands for
//!   lines left out);
//! * `cargo run [--release] --bin NAME --` runs the built binary `NAME`;
//! * a block that only runs the project's CI scripts (`.ci/…`) is not run.
//!
//! JSON blocks must parse; a `json rules` block must also load as a rules
//! override, and a `json schema=NAME` block must validate against
//! `evidence-gate schema NAME`. The link check at the end makes
//! every relative link of the documents, and every `docs/….md#anchor` cited
//! in `src/`, resolve to a file and heading of the repository.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::common::{bin, copy_tree};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One fenced block of a document.
struct Block {
    file: String,
    line: usize,
    info: Vec<String>,
    body: String,
}

fn documents() -> Vec<PathBuf> {
    let mut files = vec![Path::new(ROOT).join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(ROOT)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

fn blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).expect("document");
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match open.take() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some(Block {
                        file: relative(path),
                        line: i + 1,
                        info: info.split_whitespace().map(str::to_owned).collect(),
                        body: String::new(),
                    });
                }
            }
            Some(mut b) => {
                if line.starts_with("```") {
                    out.push(b);
                } else {
                    b.body.push_str(line);
                    b.body.push('\n');
                    open = Some(b);
                }
            }
        }
    }
    assert!(
        open.is_none(),
        "{}: unterminated code block",
        relative(path)
    );
    out
}

fn lang(b: &Block) -> &str {
    b.info.first().map(String::as_str).unwrap_or("")
}

fn flagged(b: &Block, word: &str) -> bool {
    b.info.iter().skip(1).any(|w| w == word)
}

/// A block that only runs the project's own CI scripts (`.ci/…`, which build
/// the project and install hosts from npm) is not run, like `no-run`.
fn runs_ci_scripts(b: &Block) -> bool {
    let commands: Vec<String> = logical_lines(&b.body)
        .into_iter()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    !commands.is_empty()
        && commands.iter().all(|l| {
            l.split_whitespace()
                .find(|w| !w.contains('=') && *w != "bash")
                .is_some_and(|w| w.starts_with(".ci/"))
        })
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Joins backslash-continued lines into logical lines.
fn logical_lines(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in body.lines() {
        if let Some(head) = line.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
        } else {
            cur.push_str(line);
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `cmd   # exit N …` → (`cmd`, N).
fn expected_exit(line: &str) -> Option<(&str, i32)> {
    let at = line.rfind("# exit ")?;
    let (cmd, comment) = line.split_at(at);
    if !cmd.ends_with(' ') || cmd.trim().is_empty() {
        return None;
    }
    let n: String = comment["# exit ".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((cmd.trim_end(), n.parse().ok()?))
}

fn cargo_run(line: &str) -> String {
    let mut s = line.to_owned();
    for name in ["evidence-gate", "verify-evidence"] {
        for form in [
            format!("cargo run --release --bin {name} --"),
            format!("cargo run --bin {name} --"),
        ] {
            s = s.replace(&form, name);
        }
    }
    s
}

fn check_status(cmd: &str, want: i32) -> String {
    format!(
        "if {cmd}\nthen __s=0; else __s=$?; fi\n\
         if [ \"$__s\" -ne {want} ]; then echo \"docs: expected exit {want}, got $__s: \"{q} >&2; exit 97; fi\n",
        q = quote(cmd)
    )
}

/// The bash script a block runs as.
fn script(b: &Block) -> String {
    let mut s = String::from("set -e -o pipefail\n");
    if lang(b) == "console" {
        let mut cmds: Vec<(String, Vec<String>)> = Vec::new();
        for line in b.body.lines() {
            if let Some(cmd) = line.strip_prefix("$ ") {
                cmds.push((cmd.to_owned(), Vec::new()));
            } else if let Some(last) = cmds.last_mut() {
                if let Some(prev) = last.0.strip_suffix('\\') {
                    last.0 = format!("{prev} {}", line.trim());
                } else if !line.trim().is_empty() && line.trim() != "..." {
                    last.1.push(line.trim().to_owned());
                }
            }
        }
        for (cmd, want_out) in cmds {
            let (cmd, want) = match expected_exit(&cmd) {
                Some((c, n)) => (c.to_owned(), n),
                None => (cmd, 0),
            };
            let cmd = cargo_run(&cmd);
            s.push_str(&check_status(
                &format!("__out=$( {{ {cmd} ; }} 2>&1 )"),
                want,
            ));
            // A here-string, not a pipe: `grep -q` exits at its first match,
            // and under `pipefail` a `printf` still writing into the pipe
            // would then fail the check with SIGPIPE (seen under load).
            for want_line in want_out {
                s.push_str(&format!(
                    "grep -qF -- {w} <<< \"$__out\" || {{ echo \"docs: output of \"{c}\" lacks \"{w}; printf '%s\\n' \"$__out\"; exit 98; }} >&2\n",
                    w = quote(&want_line),
                    c = quote(&cmd)
                ));
            }
        }
    } else {
        for line in logical_lines(&b.body) {
            let line = cargo_run(&line);
            match expected_exit(&line) {
                Some((cmd, n)) => s.push_str(&check_status(cmd, n)),
                None => {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        }
    }
    s
}

/// A fresh workspace: `work/` (a git repository with `fixtures/`), and the
/// private home and XDG directories around it.
struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = Workspace { dir };
        for d in ["home/.codex", "state", "config", "data", "cache"] {
            std::fs::create_dir_all(w.dir.path().join(d)).expect("mkdir");
        }
        copy_tree(
            &Path::new(ROOT).join("fixtures"),
            &w.work().join("fixtures"),
        );
        let git = w.command("git").args(["init", "-q", "-b", "main"]).status();
        assert!(git.expect("git").success(), "git init");
        w
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn command(&self, program: &str) -> Command {
        let root = self.dir.path();
        let bindir = bin("evidence-gate").parent().expect("bin dir").to_owned();
        let path = format!(
            "{}:{}",
            bindir.display(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
        );
        let mut cmd = Command::new(program);
        cmd.current_dir(self.work())
            .env_clear()
            .env("PATH", path)
            .env("HOME", root.join("home"))
            .env("XDG_STATE_HOME", root.join("state"))
            .env("XDG_CONFIG_HOME", root.join("config"))
            .env("XDG_DATA_HOME", root.join("data"))
            .env("XDG_CACHE_HOME", root.join("cache"))
            .env("CODEX_HOME", root.join("home/.codex"))
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .env("GIT_AUTHOR_NAME", "docs")
            .env("GIT_AUTHOR_EMAIL", "docs@example.invalid")
            .env("GIT_COMMITTER_NAME", "docs")
            .env("GIT_COMMITTER_EMAIL", "docs@example.invalid")
            .env("GIT_CONFIG_NOSYSTEM", "1");
        cmd
    }
}

#[test]
fn every_documented_command_runs_as_printed() {
    let mut failures = Vec::new();
    let mut ran = 0;
    for doc in documents() {
        let runnable: Vec<Block> = blocks(&doc)
            .into_iter()
            .filter(|b| {
                matches!(lang(b), "sh" | "console") && !flagged(b, "no-run") && !runs_ci_scripts(b)
            })
            .collect();
        if runnable.is_empty() {
            continue;
        }
        let ws = Workspace::new();
        for b in runnable {
            ran += 1;
            let out = ws
                .command("bash")
                .args(["--noprofile", "--norc", "-c", &script(&b)])
                .output()
                .expect("bash");
            if !out.status.success() {
                failures.push(format!(
                    "{}:{}: exit {:?}\n--- block\n{}--- stdout\n{}--- stderr\n{}",
                    b.file,
                    b.line,
                    out.status.code(),
                    b.body,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    assert!(ran > 10, "only {ran} command blocks found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn no_run_blocks_are_few_and_named() {
    // `no-run` is for what a test cannot do: install a host, run the test
    // suite, the CI script or the benchmarks themselves, publish. Each is
    // listed here, so a new one is a deliberate decision.
    let mut found = BTreeSet::new();
    for doc in documents() {
        for b in blocks(&doc) {
            if flagged(&b, "no-run") {
                assert!(
                    matches!(lang(&b), "sh" | "console"),
                    "{}:{}: no-run on a {} block",
                    b.file,
                    b.line,
                    lang(&b)
                );
                found.insert(b.file.clone());
            }
        }
    }
    let allowed: BTreeSet<String> = [
        "README.md",
        "docs/architecture.md",
        "docs/hosts.md",
        "docs/performance.md",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let extra: Vec<_> = found.difference(&allowed).collect();
    assert!(extra.is_empty(), "unexpected no-run blocks in {extra:?}");
}

#[test]
fn every_json_block_parses_and_rules_blocks_load() {
    let mut failures = Vec::new();
    for doc in documents() {
        for b in blocks(&doc) {
            if lang(&b) != "json" {
                continue;
            }
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&b.body) {
                failures.push(format!("{}:{}: {e}", b.file, b.line));
                continue;
            }
            if let Some(name) = b.info.iter().find_map(|w| w.strip_prefix("schema=")) {
                let out = Command::new(bin("evidence-gate"))
                    .args(["schema", name])
                    .output()
                    .expect("evidence-gate schema");
                assert!(out.status.success(), "evidence-gate schema {name} failed");
                let schema: serde_json::Value =
                    serde_json::from_slice(&out.stdout).expect("schema is JSON");
                let validator = jsonschema::validator_for(&schema).expect("schema compiles");
                let doc: serde_json::Value = serde_json::from_str(&b.body).expect("parsed above");
                let errors: Vec<String> = validator
                    .iter_errors(&doc)
                    .map(|e| format!("{} at {}", e, e.instance_path()))
                    .collect();
                if !errors.is_empty() {
                    failures.push(format!(
                        "{}:{}: not a valid `{name}` document: {}",
                        b.file,
                        b.line,
                        errors.join("; ")
                    ));
                }
            }
            if flagged(&b, "rules") {
                let ws = Workspace::new();
                std::fs::write(ws.work().join("rules-block.json"), &b.body).expect("write");
                let out = ws
                    .command(bin("verify-evidence").to_str().expect("utf-8 path"))
                    .args([
                        "--rules",
                        "rules-block.json",
                        "--root",
                        "fixtures/payloads/example",
                        "fixtures/payloads/example/evidence.json",
                    ])
                    .output()
                    .expect("verify-evidence");
                if !out.status.success() {
                    failures.push(format!(
                        "{}:{}: the rules block does not load: {}",
                        b.file,
                        b.line,
                        String::from_utf8_lossy(&out.stdout)
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// GitHub's heading anchor: lower case, punctuation other than `-` and `_`
/// dropped, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a document: heading slugs (with GitHub's `-1`, `-2`
/// suffixes for repeats) and explicit `<a id="…">` anchors.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut fence = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("<a id=\"") {
            let tail = &rest[at + 7..];
            if let Some(end) = tail.find('"') {
                out.insert(tail[..end].to_owned());
                rest = &tail[end..];
            } else {
                break;
            }
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes > 0 && line[hashes..].starts_with(' ') {
            let mut h = line[hashes..].to_owned();
            // Inline anchors are not part of the heading text.
            while let (Some(a), Some(b)) = (h.find("<a "), h.find("</a>")) {
                h.replace_range(a..b + 4, "");
            }
            let s = slug(&h);
            let n = seen.entry(s.clone()).or_insert(0);
            out.insert(if *n == 0 { s } else { format!("{s}-{n}") });
            *n += 1;
        }
    }
    out
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `(target, anchor)` of every `docs/….md#anchor` (or `docs/….md`) in `text`.
fn doc_citations(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("docs/") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || "/._-#".contains(c)))
            .unwrap_or(tail.len());
        let cite = tail[..end].trim_end_matches('.');
        if let Some(md) = cite.find(".md") {
            let file = cite[..md + 3].to_owned();
            let anchor = cite[md + 3..].strip_prefix('#').map(str::to_owned);
            out.push((file, anchor));
        }
        rest = &tail[end.max(5)..];
    }
    out
}

#[test]
fn every_link_and_source_citation_resolves() {
    let mut anchor_sets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("document");
        anchor_sets.insert(relative(&doc), anchors(&text));
    }
    let mut failures = Vec::new();
    let mut check = |from: &str, file: &str, anchor: Option<&str>| {
        let Some(set) = anchor_sets.get(file) else {
            if !Path::new(ROOT).join(file).exists() {
                failures.push(format!("{from}: {file} does not exist"));
            }
            return;
        };
        if let Some(a) = anchor
            && !set.contains(a)
        {
            failures.push(format!("{from}: {file} has no anchor #{a}"));
        }
    };
    // Relative links of the documents.
    for doc in documents() {
        let from = relative(&doc);
        let text = std::fs::read_to_string(&doc).expect("document");
        let base = Path::new(&from)
            .parent()
            .unwrap_or(Path::new(""))
            .to_owned();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let tail = &rest[at + 2..];
            let Some(end) = tail.find(')') else { break };
            let target = &tail[..end];
            rest = &tail[end..];
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target, None),
            };
            let file = if path.is_empty() {
                from.clone()
            } else {
                let joined = base.join(path);
                let mut parts: Vec<String> = Vec::new();
                for c in joined.components() {
                    match c {
                        std::path::Component::ParentDir => {
                            parts.pop();
                        }
                        std::path::Component::Normal(s) => {
                            parts.push(s.to_string_lossy().into_owned())
                        }
                        _ => {}
                    }
                }
                parts.join("/")
            };
            check(&from, &file, anchor);
        }
    }
    // Citations in the source.
    let mut sources = Vec::new();
    rs_files(&Path::new(ROOT).join("src"), &mut sources);
    let mut cited = 0;
    for src in sources {
        let text = std::fs::read_to_string(&src).expect("source");
        for (file, anchor) in doc_citations(&text) {
            cited += 1;
            check(&relative(&src), &file, anchor.as_deref());
        }
    }
    assert!(cited > 100, "only {cited} citations of docs/ found in src/");
    failures.sort();
    failures.dedup();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn no_source_comment_cites_a_document_outside_the_repository() {
    // The design documents live in docs/; a comment citing the old
    // specification names (`goal-engine.md §3.4`, `R§2.5`) resolves nowhere.
    let mut sources = Vec::new();
    rs_files(&Path::new(ROOT).join("src"), &mut sources);
    let mut failures = Vec::new();
    for src in sources {
        let text = std::fs::read_to_string(&src).expect("source");
        for (i, line) in text.lines().enumerate() {
            // Comments only: message texts are output, changed with the code.
            if !line.trim_start().starts_with("//") {
                continue;
            }
            let bare = [
                "goal-engine.md",
                "threat-model.md I",
                "threat-model.md §",
                "quality-gate.md",
                "evidence.md §",
                "hooks.md §",
                "R§",
            ]
            .iter()
            .any(|pat| {
                line.match_indices(pat)
                    .any(|(at, _)| !line[..at].ends_with("docs/"))
            });
            if bare {
                failures.push(format!("{}:{}: {}", relative(&src), i + 1, line.trim()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
