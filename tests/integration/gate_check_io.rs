//! `evidence-gate gate check` beyond the document rules: limits, special
//! files, documents that cannot be read (exit 2), rules and usage errors,
//! surface resolution, and read-only behaviour.

use serde_json::Value;

use crate::gate_check::{ATTEMPT, check, first_error, fixture_repo};

#[test]
fn oversized_artifacts_and_documents_fail() {
    let r = fixture_repo();
    r.write(
        "small.json",
        r#"{"gates":{"common":{"limits":{"maxArtifactBytes":200}}}}"#,
    );
    let run = check(&r, "lazycodex.json", &["--rules", "small.json"]);
    assert_eq!(run.code, 1);
    let first = first_error(&run);
    assert_eq!(first["code"], "FILE_TOO_LARGE");
    assert_eq!(first["field"], "manualQa.artifactRefs[0].path");
    r.write(
        "tiny.json",
        r#"{"gates":{"common":{"limits":{"maxGateBytes":100}}}}"#,
    );
    let run = check(&r, "lazycodex.json", &["--rules", "tiny.json"]);
    assert_eq!(
        run.code, 1,
        "a document that was read but is too large is known to be invalid"
    );
    assert_eq!(first_error(&run)["code"], "GATE_JSON_INVALID");
    let run = r.run(
        "evidence-gate",
        &["gate", "check", "-", "--json", "--rules", "tiny.json"],
        Some(&vec![b' '; 10_000]),
    );
    assert_eq!(run.code, 1);
    assert_eq!(first_error(&run)["code"], "GATE_JSON_INVALID");
}

#[cfg(unix)]
#[test]
fn hard_linked_artifacts_follow_the_sandbox_policy() {
    let r = fixture_repo();
    std::fs::hard_link(
        r.join(&format!("{ATTEMPT}/cli-transcript.txt")),
        r.join("outside-link.txt"),
    )
    .unwrap();
    let run = check(&r, "lazycodex.json", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(first_error(&run)["code"], "FILE_HARDLINKED");
    r.user_rules(r#"{"evidence":{"hardLinks":"allow"}}"#);
    assert_eq!(check(&r, "lazycodex.json", &[]).code, 0);
}

#[cfg(unix)]
#[test]
fn a_fifo_artifact_never_hangs_the_check() {
    let r = fixture_repo();
    let fifo = r.join(&format!("{ATTEMPT}/pipe"));
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .map(|s| s.success());
    if !matches!(ok, Ok(true)) {
        return;
    }
    let gate = std::fs::read_to_string(r.join("lazycodex.json"))
        .unwrap()
        .replace(
            &format!("{ATTEMPT}/cli-transcript.txt"),
            &format!("{ATTEMPT}/pipe"),
        );
    r.write("fifo.json", gate);
    let run = check(&r, "fifo.json", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(first_error(&run)["code"], "NOT_REGULAR_FILE");
}

#[cfg(unix)]
#[test]
fn permission_denied_is_unverifiable() {
    use std::os::unix::fs::PermissionsExt;
    let r = fixture_repo();
    let locked = r.join(ATTEMPT);
    std::fs::set_permissions(r.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false);
    let bin = crate::common::bin("evidence-gate");
    let mut cmd = if is_root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
        c
    } else {
        std::process::Command::new(&bin)
    };
    crate::common::isolate_home(&mut cmd);
    // Run as `nobody`: the user's rules file is looked up where nothing is.
    let out = cmd
        .args(["gate", "check", "lazycodex.json", "--json"])
        .env("XDG_CONFIG_HOME", "/nonexistent/evidence-gate-test-config")
        .current_dir(r.path())
        .output()
        .unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if is_root && stdout.is_empty() {
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["verdict"], "unverifiable");
    assert_eq!(v["ok"], false);
    let first = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["severity"] == "error")
        .unwrap();
    assert_eq!(first["code"], "IO_ERROR");
    assert_eq!(first["field"], "manualQa.artifactRefs[0].path");
}

#[cfg(unix)]
#[test]
fn documents_that_cannot_be_read_exit_2() {
    let r = fixture_repo();
    r.symlink("lazycodex.json", "linked-gate.json");
    r.mkdir("a-directory.json");
    for (file, code) in [
        ("missing.json", "FILE_MISSING"),
        ("linked-gate.json", "PATH_SYMLINK"),
        ("a-directory.json", "NOT_REGULAR_FILE"),
        ("/etc/hostname", "PATH_ABSOLUTE"),
        ("../outside.json", "PATH_TRAVERSAL"),
    ] {
        let run = check(&r, file, &[]);
        assert_eq!(run.code, 2, "{file}: {}", run.stdout);
        let v = run.json();
        assert_eq!(v["ok"], false);
        assert_eq!(v["verdict"], "unverifiable");
        assert_eq!(v["error"]["code"], code, "{file}");
        let text = r.run("evidence-gate", &["gate", "check", file], None);
        assert_eq!(text.code, 2);
        assert!(text.stdout.is_empty());
        assert!(
            text.stderr
                .starts_with(&format!("error: {code} cannot read the gate document")),
            "{}",
            text.stderr
        );
    }
    // `./x` and an absolute path inside the repository are accepted.
    assert_eq!(check(&r, "./lazycodex.json", &[]).code, 0);
    let abs = r.join("lazycodex.json");
    let run = crate::common::run_in(
        &std::fs::canonicalize(r.path()).unwrap(),
        "evidence-gate",
        &[
            "gate",
            "check",
            std::fs::canonicalize(&abs).unwrap().to_str().unwrap(),
        ],
        None,
        &[],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn standard_input_is_read_with_dash() {
    let r = fixture_repo();
    let gate = std::fs::read(r.join("lazycodex.json")).unwrap();
    let run = r.run(
        "evidence-gate",
        &["gate", "check", "-", "--json"],
        Some(&gate),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let run = r.run(
        "evidence-gate",
        &["gate", "check", "-", "--json"],
        Some(b"{\"a\":1,\"a\":2}"),
    );
    assert_eq!(run.code, 1);
    assert_eq!(first_error(&run)["code"], "GATE_JSON_INVALID");
    assert!(
        first_error(&run)["message"]
            .as_str()
            .unwrap()
            .contains("duplicate key")
    );
}

#[test]
fn invalid_rules_and_usage_errors_exit_2() {
    let r = fixture_repo();
    r.write(
        "bad.json",
        r#"{"gates":{"lazycodex":{"acceptors":{"codeReview":[]}}}}"#,
    );
    let run = check(&r, "lazycodex.json", &["--rules", "bad.json"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.json()["error"]["code"], "RULES_INVALID");
    assert_eq!(
        run.json()["error"]["details"]["pointer"],
        "/gates/lazycodex/acceptors/codeReview"
    );
    r.user_rules(r#"{"gate":{"surface":"nonesuch"}}"#);
    let run = check(&r, "lazycodex.json", &[]);
    assert_eq!(run.code, 2);
    assert_eq!(run.json()["error"]["code"], "RULES_INVALID");
    std::fs::remove_file(r.config.path().join("evidence-gate/rules.json")).unwrap();
    let run = check(&r, "lazycodex.json", &["--rules", "no-such-rules.json"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.json()["error"]["code"], "RULES_INVALID");
    let run = check(&r, "lazycodex.json", &["--surface", "nonesuch"]);
    assert_eq!(run.code, 2);
    assert!(
        run.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("known: lazycodex, omo-senpi, omx-strict, ultragoal")
    );
    let run = check(&r, "lazycodex.json", &["--surface", "common"]);
    assert_eq!(run.code, 2, "`common` is not a gate rule file");
    let run = r.run("evidence-gate", &["gate", "check"], None);
    assert_eq!(run.code, 2);
    let run = r.run(
        "evidence-gate",
        &["gate", "check", "lazycodex.json", "--profile", "omo"],
        None,
    );
    assert_eq!(run.code, 2);
}

#[test]
fn goal_id_without_a_plan_cannot_be_checked() {
    let r = fixture_repo();
    let run = r.run(
        "evidence-gate",
        &[
            "gate",
            "check",
            "lazycodex.json",
            "--goal-id",
            "G001-rate-limit",
            "--session-id",
            "demo",
        ],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("ULW_LOOP_PLAN_MISSING"),
        "{}",
        run.stderr
    );
    let run = check(&r, "lazycodex.json", &["--goal-id", "G001-rate-limit"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.json()["verdict"], "unverifiable");
    assert_eq!(
        run.json()["error"]["details"]["code"],
        "ULW_LOOP_PLAN_MISSING"
    );
}

#[test]
fn surface_resolution_env_repository_and_default() {
    let r = fixture_repo();
    // Default: lazycodex, which requires codeReview.
    let run = check(&r, "omo-senpi.json", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["rules"], "lazycodex");
    assert_eq!(first_error(&run)["code"], "GATE_SECTION_MISSING");
    let env = [("OMO_AGENT_TOOLKIT_SURFACE", "omo-senpi")];
    let run = r.run_env(
        "evidence-gate",
        &["gate", "check", "omo-senpi.json", "--json"],
        None,
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.json()["rules"], "omo-senpi");
    // An unknown environment value falls through to the user's setting.
    r.user_rules(r#"{"gate":{"surface":"omo-senpi"}}"#);
    let env = [("OMO_AGENT_TOOLKIT_SURFACE", "laxest")];
    let run = r.run_env(
        "evidence-gate",
        &["gate", "check", "omo-senpi.json", "--json"],
        None,
        &env,
    );
    assert_eq!(run.json()["rules"], "omo-senpi");
    // The flag wins over everything.
    let env = [("OMO_AGENT_TOOLKIT_SURFACE", "omo-senpi")];
    let run = r.run_env(
        "evidence-gate",
        &[
            "gate",
            "check",
            "omo-senpi.json",
            "--json",
            "--surface",
            "lazycodex",
        ],
        None,
        &env,
    );
    assert_eq!(run.json()["rules"], "lazycodex");
    assert_eq!(run.code, 1);
}

#[test]
fn gate_check_is_read_only() {
    let r = fixture_repo();
    r.write(
        ".evidence-gate/rules.json",
        r#"{"gates":{"common":{"unknownFields":"warn"}}}"#,
    );
    let before = r.snapshot();
    for (file, flags) in [
        ("lazycodex.json", &[][..]),
        ("hostile/many-errors.json", &[][..]),
        ("ultragoal.json", &["--profile", "ultragoal"][..]),
        ("missing.json", &[][..]),
    ] {
        check(&r, file, flags);
        let mut args = vec!["gate", "check", file];
        args.extend_from_slice(flags);
        r.run("evidence-gate", &args, None);
    }
    assert_eq!(before, r.snapshot(), "gate check wrote to the repository");
}
