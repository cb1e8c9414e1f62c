//! Adversarial filesystem trees built at test time: symlinks at every depth,
//! hard links to files outside the root, FIFOs, sockets, directories, empty
//! files, files changing under the verifier, odd names.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::Repo;
use crate::evidence_cli::{payload, verify};

fn one(repo: &Repo, path: &str) -> crate::common::Run {
    verify(repo, &payload(json!([{ "path": path }])), &[])
}

fn assert_code(run: &crate::common::Run, code: &str, exit: i32) {
    assert_eq!(
        run.code, exit,
        "{code}: stdout={} stderr={}",
        run.stdout, run.stderr
    );
    assert_eq!(run.codes(), vec![code.to_owned()], "stdout={}", run.stdout);
}

#[test]
fn lexical_rejections() {
    let r = Repo::new();
    r.write("a/b.txt", "content\n");
    for (path, code) in [
        ("", "PATH_EMPTY"),
        ("a/b\u{0}.txt", "PATH_CONTROL_CHAR"),
        ("a/b\u{1b}.txt", "PATH_CONTROL_CHAR"),
        ("a\\b.txt", "PATH_BACKSLASH"),
        ("/etc/passwd", "PATH_ABSOLUTE"),
        ("C:/Windows/win.ini", "PATH_ABSOLUTE"),
        ("//server/share/x", "PATH_ABSOLUTE"),
        ("../outside.txt", "PATH_TRAVERSAL"),
        ("a/../a/b.txt", "PATH_TRAVERSAL"),
        ("./a/b.txt", "PATH_NOT_CLEAN"),
        ("a//b.txt", "PATH_NOT_CLEAN"),
        ("a/b.txt/", "PATH_NOT_CLEAN"),
        ("a/./b.txt", "PATH_NOT_CLEAN"),
        (".git/config", "PATH_FORBIDDEN"),
        (".GIT/config", "PATH_FORBIDDEN"),
        (".omo/ulw-loop/goals.json", "PATH_FORBIDDEN"),
        (".omagy/ultragoal/s1/ledger.jsonl", "PATH_FORBIDDEN"),
        (".omo/evidence-gate/ledger.jsonl", "PATH_FORBIDDEN"),
    ] {
        assert_code(&one(&r, path), code, 1);
    }
}

#[test]
fn too_long_paths_and_names() {
    let r = Repo::new();
    assert_code(&one(&r, &"n".repeat(256)), "PATH_TOO_LONG", 1);
    let long: Vec<String> = (0..40).map(|_| "d".repeat(120)).collect();
    assert_code(&one(&r, &long.join("/")), "PATH_TOO_LONG", 1);
    // 255 bytes is fine lexically (and then simply missing).
    assert_code(&one(&r, &"n".repeat(255)), "FILE_MISSING", 1);
}

#[test]
fn missing_files_and_non_directories_on_the_way() {
    let r = Repo::new();
    r.write("file.txt", "x\n");
    assert_code(&one(&r, "nope.txt"), "FILE_MISSING", 1);
    assert_code(&one(&r, "no/such/dir/file.txt"), "FILE_MISSING", 1);
    assert_code(&one(&r, "file.txt/inner"), "FILE_MISSING", 1);
}

#[cfg(unix)]
#[test]
fn symlinks_are_never_followed_at_any_depth() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "TOP-SECRET-CONTENT\n").unwrap();
    let r = Repo::new();
    r.write("real/file.txt", "inside\n");
    r.symlink("real/file.txt", "leaf-link.txt");
    r.symlink("real", "dir-link");
    r.symlink(outside.path().join("secret.txt"), "abs-link.txt");
    r.symlink("../../etc/passwd", "escape-link");
    r.symlink(outside.path(), "outside-dir");
    r.symlink("nowhere", "dangling");
    for path in [
        "leaf-link.txt",
        "dir-link/file.txt",
        "abs-link.txt",
        "escape-link",
        "outside-dir/secret.txt",
        "dangling",
    ] {
        let run = one(&r, path);
        assert_code(&run, "PATH_SYMLINK", 1);
        assert!(
            !run.stdout.contains("TOP-SECRET-CONTENT"),
            "no outside content in the report"
        );
        assert_eq!(run.json()["reports"][0]["files"], json!([]));
    }
    // Trailing slash through a symlinked directory: rejected lexically first.
    assert_code(&one(&r, "dir-link/"), "PATH_NOT_CLEAN", 1);
    // The root itself may be reached through a symlink: the user chose it.
    let via = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(r.path(), via.path().join("root")).unwrap();
    r.write(
        "p.json",
        serde_json::to_vec(&payload(json!([{"path": "real/file.txt"}]))).unwrap(),
    );
    let root = via.path().join("root");
    let run = r.run(
        "verify-evidence",
        &[
            "--format",
            "json",
            "--root",
            root.to_str().unwrap(),
            "p.json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[cfg(unix)]
#[test]
fn symlinked_intermediate_directory_deep_in_the_path() {
    let r = Repo::new();
    r.write("a/b/c/real.txt", "x\n");
    r.symlink("c", "a/b/link");
    assert_code(&one(&r, "a/b/link/real.txt"), "PATH_SYMLINK", 1);
    let run = one(&r, "a/b/link/real.txt");
    assert!(
        run.stdout.contains("a/b/link"),
        "names the symlinked component: {}",
        run.stdout
    );
}

#[cfg(unix)]
#[test]
fn hard_link_to_a_file_outside_the_root_is_rejected_unless_allowed() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "outside content\n").unwrap();
    let r = Repo::new();
    if std::fs::hard_link(&secret, r.join("linked.txt")).is_err() {
        // Different filesystems: link inside the root instead (same signal).
        r.write("orig.txt", "x\n");
        std::fs::hard_link(r.join("orig.txt"), r.join("linked.txt")).unwrap();
    }
    assert_code(&one(&r, "linked.txt"), "FILE_HARDLINKED", 1);
    r.write("allow.json", r#"{"evidence":{"hardLinks":"allow"}}"#);
    let run = verify(
        &r,
        &payload(json!([{"path": "linked.txt"}])),
        &["--rules", "allow.json"],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[cfg(unix)]
#[test]
fn fifo_never_hangs_the_verifier() {
    let r = Repo::new();
    let fifo = r.join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let started = Instant::now();
    let run = one(&r, "pipe");
    assert_code(&run, "NOT_REGULAR_FILE", 1);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "a FIFO must not block the open"
    );
    // Matched by a glob, too.
    let run = verify(&r, &payload(json!([{"glob": "pi*"}])), &[]);
    assert_eq!(run.code, 1);
    assert!(
        run.codes().contains(&"NOT_REGULAR_FILE".to_owned()),
        "{:?}",
        run.codes()
    );
}

#[cfg(unix)]
#[test]
fn socket_directory_and_empty_file() {
    let r = Repo::new();
    let _listener = std::os::unix::net::UnixListener::bind(r.join("sock")).unwrap();
    r.mkdir("adir");
    r.write("empty.txt", "");
    assert_code(&one(&r, "sock"), "NOT_REGULAR_FILE", 1);
    assert_code(&one(&r, "adir"), "NOT_REGULAR_FILE", 1);
    assert_code(&one(&r, "empty.txt"), "FILE_EMPTY", 1);
}

#[test]
fn file_growing_while_it_is_hashed_is_detected() {
    let r = Repo::new();
    let path = r.write("growing.bin", vec![7u8; 32 * 1024 * 1024]);
    r.write(
        "p.json",
        serde_json::to_vec(&payload(json!([{"path": "growing.bin"}]))).unwrap(),
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                f.write_all(&[1u8; 512]).unwrap();
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };
    let run = r.run("verify-evidence", &["--format", "json", "p.json"], None);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_code(&run, "FILE_CHANGED_DURING_CHECK", 1);
}

#[cfg(unix)]
#[test]
fn permission_denied_is_could_not_verify() {
    use std::os::unix::fs::PermissionsExt;
    let r = Repo::new();
    r.write("locked/file.txt", "x\n");
    r.write(
        "p.json",
        serde_json::to_vec(&payload(json!([{"path": "locked/file.txt"}]))).unwrap(),
    );
    std::fs::set_permissions(r.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(r.join("p.json"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(r.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root ignores permission bits: drop to an unprivileged user when we are root.
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false);
    let bin = crate::common::bin("verify-evidence");
    let mut cmd = if is_root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
        c
    } else {
        std::process::Command::new(&bin)
    };
    crate::common::isolate_home(&mut cmd);
    let out = cmd
        .args(["--format", "json", "p.json"])
        .current_dir(r.path())
        .output()
        .unwrap();
    std::fs::set_permissions(r.join("locked"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if is_root && stdout.is_empty() {
        // setpriv unavailable in this environment.
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["verdict"], "error");
    assert_eq!(v["reports"][0]["findings"][0]["code"], "IO_ERROR");
    assert_eq!(v["reports"][0]["findings"][0]["path"], "locked/file.txt");
}

#[cfg(unix)]
#[test]
fn non_utf8_names_are_skipped_by_globs() {
    use std::os::unix::ffi::OsStrExt;
    let r = Repo::new();
    r.write("d/good.txt", "x\n");
    std::fs::write(
        r.join("d")
            .join(std::ffi::OsStr::from_bytes(b"bad\xff.txt")),
        "y\n",
    )
    .unwrap();
    let run = verify(
        &r,
        &payload(json!([{"glob": "d/*.txt", "min": 1, "max": 1}])),
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.json()["reports"][0]["files"][0]["path"], "d/good.txt");
}

#[test]
fn globs_count_regular_files_and_enforce_min_and_max() {
    let r = Repo::new();
    for i in 0..5 {
        r.write(&format!("tests/rl/t{i}.rs"), format!("// {i}\n"));
    }
    r.write("tests/rl/deep/x.rs", "// deep\n");
    r.write("tests/rl/notes.md", "notes\n");
    let run = verify(
        &r,
        &payload(json!([{"glob": "tests/rl/*.rs", "min": 5, "max": 5}])),
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.json()["reports"][0]["files"].as_array().unwrap().len(),
        5,
        "`*` does not cross `/`"
    );
    let run = verify(
        &r,
        &payload(json!([{"glob": "tests/rl/**/*.rs", "min": 6, "max": 6}])),
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_code(
        &verify(
            &r,
            &payload(json!([{"glob": "tests/rl/*.rs", "min": 6}])),
            &[],
        ),
        "GLOB_TOO_FEW_MATCHES",
        1,
    );
    assert_code(
        &verify(
            &r,
            &payload(json!([{"glob": "tests/**/*.rs", "max": 3}])),
            &[],
        ),
        "GLOB_TOO_MANY_MATCHES",
        1,
    );
    assert_code(
        &verify(&r, &payload(json!([{"glob": "nothing/**"}])), &[]),
        "GLOB_TOO_FEW_MATCHES",
        1,
    );
    for bad in [
        json!({"glob": "a/[b"}),
        json!({"glob": "../*"}),
        json!({"glob": "/etc/*"}),
        json!({"glob": "x", "min": 3, "max": 2}),
        json!({"glob": ""}),
    ] {
        assert_code(&verify(&r, &payload(json!([bad])), &[]), "GLOB_INVALID", 1);
    }
}

/// Each glob walks the tree: their number is capped by the rules, and a
/// pattern declared again is walked once and each file hashed once, so a
/// payload of repeated `**` globs cannot turn the audit quadratic.
#[test]
fn glob_fan_out_is_capped_and_repeated_patterns_walk_once() {
    let r = Repo::new();
    for i in 0..20 {
        r.write(&format!("d/f{i}.txt"), "x\n");
    }
    let same = vec![json!({"glob": "**/*.txt"}); 64];
    let run = verify(&r, &payload(json!(same)), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let v = run.json();
    let files = v["reports"][0]["files"].as_array().unwrap();
    assert_eq!(files.len(), 20, "each matched file is listed once");

    let over = vec![json!({"glob": "**/*.txt"}); 65];
    let run = verify(&r, &payload(json!(over)), &[]);
    assert_code(&run, "GLOB_INVALID", 1);
    assert_eq!(run.codes(), ["GLOB_INVALID"]);
    let f = &run.json()["reports"][0]["findings"][0];
    assert_eq!(f["detail"], json!({"globs": 65, "max": 64}), "{f}");

    r.write(
        "rules.json",
        r#"{"evidence": {"limits": {"maxGlobDeliverables": 2}}}"#,
    );
    let three: Vec<_> = (0..3)
        .map(|i| json!({"glob": format!("d/f{i}.txt")}))
        .collect();
    let run = verify(&r, &payload(json!(three)), &["--rules", "rules.json"]);
    assert_code(&run, "GLOB_INVALID", 1);
    let run = verify(&r, &payload(json!(three[..2])), &["--rules", "rules.json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);

    r.write(
        "rules.json",
        r#"{"evidence": {"limits": {"maxGlobDeliverables": 0}}}"#,
    );
    let run = verify(&r, &payload(json!(three)), &["--rules", "rules.json"]);
    assert_code(&run, "RULES_INVALID", 2);
}

#[test]
fn globs_never_enter_repository_metadata_or_engine_state() {
    let r = Repo::new();
    r.write(".git/config.txt", "[core]\n");
    r.write(".omo/ulw-loop/goals.txt", "{}\n");
    r.write("src/a.txt", "a\n");
    let run = verify(&r, &payload(json!([{"glob": "**/*.txt", "max": 1}])), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.json()["reports"][0]["files"][0]["path"], "src/a.txt");
    assert_code(
        &verify(&r, &payload(json!([{"glob": ".git/*"}])), &[]),
        "PATH_FORBIDDEN",
        1,
    );
}

#[cfg(unix)]
#[test]
fn globs_report_symlinks_they_would_match_or_descend_into() {
    let r = Repo::new();
    r.write("tests/real/a.rs", "a\n");
    r.write("other/b.rs", "b\n");
    r.symlink("../other", "tests/linkdir");
    r.symlink("real/a.rs", "tests/file-link.rs");
    let run = verify(&r, &payload(json!([{"glob": "tests/**/*.rs"}])), &[]);
    assert_eq!(run.code, 1);
    let v = run.json();
    let sym: Vec<&str> = v["reports"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "PATH_SYMLINK")
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(sym, ["tests/file-link.rs", "tests/linkdir"]);
    assert!(!run.stdout.contains("other/b.rs"), "never followed");
    // A symlinked glob base.
    r.symlink("tests", "tlink");
    let run = verify(&r, &payload(json!([{"glob": "tlink/real/*.rs"}])), &[]);
    assert_eq!(run.code, 1);
    assert_eq!(run.codes(), ["PATH_SYMLINK", "GLOB_TOO_FEW_MATCHES"]);
    // A symlink the pattern cannot reach is irrelevant.
    let run = verify(&r, &payload(json!([{"glob": "other/*.rs"}])), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[test]
fn ten_thousand_file_glob_is_sorted_deterministic_and_each_file_listed_once() {
    let r = Repo::new();
    for d in 0..20 {
        for f in 0..500 {
            r.write(&format!("gen/d{d:02}/f{f:03}.txt"), format!("{d}-{f}\n"));
        }
    }
    let p = payload(
        json!([{"glob": "gen/**/*.txt", "min": 10000, "max": 10000}, {"path": "gen/d00/f000.txt"}]),
    );
    let a = verify(&r, &p, &[]);
    assert_eq!(a.code, 0, "{}", &a.stdout[..a.stdout.len().min(2000)]);
    let files = a.json()["reports"][0]["files"].as_array().unwrap().clone();
    assert_eq!(files.len(), 10000);
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    let b = verify(&r, &p, &[]);
    assert_eq!(
        a.stdout, b.stdout,
        "parallel hashing keeps a deterministic order"
    );
}
