//! Deep trees (threat-model.md I14): every directory walk is iterative and
//! depth-bounded, and reports `WALK_DEPTH_LIMIT` at the bound; no tree the
//! agent builds overflows the stack or exhausts descriptors. Every run has a
//! deadline: a hang or a crash is a failure.

use std::process::{Command, Stdio};
use std::time::Duration;

use cap_std::fs::Dir;
use serde_json::{Value, json};

use crate::common::{Repo, Run, bin};

/// Runs `verify-evidence --format json <args…>` in the repository with a
/// deadline, home and per-user state in temporary directories.
fn verify_bounded(repo: &Repo, args: &[&str]) -> Run {
    let mut cmd = Command::new(bin("verify-evidence"));
    cmd.args(["--format", "json"])
        .args(args)
        .current_dir(repo.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let home = repo.join("..home");
    cmd.env("HOME", &home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"));
    let child = cmd.spawn().expect("spawn");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("verify-evidence {} hung", args.join(" "));
        }
    };
    assert!(
        out.status.code().is_some(),
        "verify-evidence was killed by a signal (a stack overflow?): {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Run {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A temporary repository for a deep tree: in RAM (`/dev/shm`) where there
/// is one, because removing 25,000 directories from a journalling disk
/// takes minutes; elsewhere the usual temporary directory.
fn deep_repo() -> Repo {
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap_or_else(|_| tempfile::tempdir().unwrap())
    } else {
        tempfile::tempdir().unwrap()
    };
    Repo {
        dir,
        config: tempfile::tempdir().unwrap(),
    }
}

/// Creates `levels` nested directories named `d` below `rel`, one relative
/// step at a time (the whole path is far beyond `PATH_MAX`), and returns
/// nothing; [`remove_chain`] takes it down again.
fn build_chain(repo: &Repo, rel: &str, levels: usize, leaf: Option<(&str, &[u8])>) {
    std::fs::create_dir_all(repo.join(rel)).unwrap();
    let mut cur = Dir::open_ambient_dir(repo.join(rel), cap_std::ambient_authority()).unwrap();
    for _ in 0..levels {
        cur.create_dir("d").unwrap();
        cur = cur.open_dir("d").unwrap();
    }
    if let Some((name, bytes)) = leaf {
        cur.write(name, bytes).unwrap();
    }
}

/// Removes a chain built by [`build_chain`] without recursion and in
/// linear time: handles are kept every 1,000 levels; from the deepest of
/// those up, each stretch is opened level by level and removed bottom-up.
fn remove_chain(repo: &Repo, rel: &str) {
    let top = Dir::open_ambient_dir(repo.join(rel), cap_std::ambient_authority()).unwrap();
    let mut checkpoints = vec![top.try_clone().unwrap()];
    let mut cur = top;
    let mut level = 0usize;
    while cur.exists("d") {
        cur = cur.open_dir("d").unwrap();
        level += 1;
        if level.is_multiple_of(1000) {
            checkpoints.push(cur.try_clone().unwrap());
        }
    }
    drop(cur);
    while let Some(cp) = checkpoints.pop() {
        let mut chain = vec![cp];
        loop {
            let last = chain.last().unwrap();
            if !last.exists("d") {
                break;
            }
            let next = last.open_dir("d").unwrap();
            chain.push(next);
        }
        let deepest = chain.last().unwrap();
        for e in deepest.entries().unwrap() {
            deepest.remove_file(e.unwrap().file_name()).unwrap();
        }
        while chain.len() > 1 {
            drop(chain.pop());
            chain.last().unwrap().remove_dir("d").unwrap();
        }
    }
}

fn codes_and_paths(run: &Run) -> Vec<(String, String)> {
    let v: Value = run.json();
    let mut out = Vec::new();
    for r in v["reports"].as_array().expect("reports") {
        for f in r["findings"].as_array().unwrap() {
            out.push((
                f["code"].as_str().unwrap().to_owned(),
                f["path"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    out
}

fn payload(deliverables: Value) -> Vec<u8> {
    serde_json::to_vec(&crate::evidence_cli::payload(deliverables)).unwrap()
}

/// I14 regression: a 25,000-level directory under `.omo/evidence` made the
/// repository audit recurse once per level (stack overflow, or running out
/// of descriptors). Now the walk stops at the bound with `WALK_DEPTH_LIMIT`
/// (could not verify, exit 2) naming the directory it did not enter, and
/// the payload beside the tree is still audited.
#[test]
fn a_25000_level_tree_under_the_evidence_root_is_reported_at_the_bound() {
    let repo = deep_repo();
    repo.write("src/lib.rs", "pub fn f() {}\n");
    repo.write(
        ".omo/evidence/G001/ok.evidence.json",
        payload(json!([{"path": "src/lib.rs"}])),
    );
    build_chain(&repo, ".omo/evidence/deep", 25_000, None);
    let run = verify_bounded(&repo, &[]);
    remove_chain(&repo, ".omo/evidence/deep");
    assert_eq!(run.code, 2, "{}", run.stdout);
    let found = codes_and_paths(&run);
    let limit: Vec<&(String, String)> = found
        .iter()
        .filter(|(c, _)| c == "WALK_DEPTH_LIMIT")
        .collect();
    assert_eq!(limit.len(), 1, "{found:?}");
    let depth = limit[0].1.split('/').filter(|c| *c == "d").count();
    assert_eq!(
        depth, 128,
        "the first directory not entered is the 128th `d` (129 levels below .omo/evidence): {}",
        limit[0].1
    );
    assert!(
        run.stdout.contains("ok.evidence.json"),
        "the payload beside the tree is audited: {}",
        run.stdout
    );
}

/// Honest use next to it: a payload 100 levels down (deep, but inside the
/// bound) is found and verified, and the audit passes.
#[test]
fn a_payload_inside_the_depth_bound_is_still_found_and_verified() {
    let repo = Repo::new();
    repo.write("src/lib.rs", "pub fn f() {}\n");
    build_chain(
        &repo,
        ".omo/evidence/deep",
        100,
        Some((
            "ok.evidence.json",
            &payload(json!([{"path": "src/lib.rs"}])),
        )),
    );
    let run = verify_bounded(&repo, &[]);
    remove_chain(&repo, ".omo/evidence/deep");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("ok.evidence.json"), "{}", run.stdout);
    assert!(codes_and_paths(&run).is_empty(), "{}", run.stdout);
}

/// The glob walk of a deliverable is bounded too: `deep/**` over a
/// 25,000-level tree reports `WALK_DEPTH_LIMIT` instead of recursing; the
/// same glob over a tree inside the bound matches its files.
#[test]
fn a_glob_over_a_deep_tree_stops_at_the_bound_and_says_so() {
    let repo = deep_repo();
    build_chain(&repo, "deep", 25_000, Some(("x.rs", b"// x\n")));
    repo.write("deep/top.rs", "// top\n");
    repo.write(
        "p.json",
        payload(json!([{"glob": "deep/**/*.rs", "min": 1}])),
    );
    let run = verify_bounded(&repo, &["p.json"]);
    remove_chain(&repo, "deep");
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        codes_and_paths(&run)
            .iter()
            .any(|(c, _)| c == "WALK_DEPTH_LIMIT"),
        "{}",
        run.stdout
    );

    let honest = Repo::new();
    build_chain(&honest, "deep", 60, Some(("x.rs", b"// x\n")));
    honest.write("deep/top.rs", "// top\n");
    honest.write(
        "p.json",
        payload(json!([{"glob": "deep/**/*.rs", "min": 2, "max": 2}])),
    );
    let run = verify_bounded(&honest, &["p.json"]);
    remove_chain(&honest, "deep");
    assert_eq!(run.code, 0, "{}", run.stdout);
}
