//! Helpers for the hook tests: a temporary repository, the hook binary run
//! with a clean host environment, payload builders and state readers.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::{Repo, Run, bin};

/// Environment variables of hosts and of our own switches that must not leak
/// from the developer's shell into a test.
const SCRUB: &[&str] = &[
    "CLAUDE_PROJECT_DIR",
    "GEMINI_PROJECT_DIR",
    "GEMINI_SESSION_ID",
    "EVIDENCE_GATE_HOOKS",
    "EVIDENCE_GATE_DEBUG",
    "EVIDENCE_GATE_TEST_FAULT",
    "EVIDENCE_GATE_IO_REPORT",
    "OMO_TEAM_ROLE",
    "OMAGY_TEAM_ROLE",
    "OMO_SPAWN_FANOUT_LIMIT",
    "OMO_AGENT_TOOLKIT_SURFACE",
];

pub const WORKER: &str = "lazycodex-worker-medium";
pub const RECEIPT_TEXT: &str =
    "Changed src/limiter.rs to cap login attempts; ran `cargo test limiter`: 12 passed, 0 failed.";

/// A repository (with `.git` and `.omo/evidence/`) plus a private per-user
/// state directory.
pub struct HookRepo {
    pub repo: Repo,
    pub state_home: tempfile::TempDir,
}

/// Where stdout goes.
pub enum Stdout {
    Piped,
    DevFull,
}

/// Where stdin comes from.
pub enum Stdin<'a> {
    Bytes(&'a [u8]),
    Dir(&'a Path),
}

impl HookRepo {
    pub fn new() -> HookRepo {
        let repo = Repo::new();
        repo.mkdir(".git");
        repo.mkdir(".omo/evidence");
        HookRepo {
            repo,
            state_home: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.repo.path()
    }

    /// Writes the user's rules file (`$XDG_CONFIG_HOME/evidence-gate/rules.json`),
    /// the place that may relax policy (threat-model.md I9).
    pub fn user_rules(&self, content: impl AsRef<[u8]>) {
        let dir = self.state_home.path().join("config/evidence-gate");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("rules.json"), content).unwrap();
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.repo.join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        self.repo.write(rel, content)
    }

    /// Marks the repository a trusted Codex project in `$HOME/.codex/config.toml`
    /// (HOME = `state_home`), as Codex requires before it loads project hooks.
    pub fn trust_codex_project(&self) {
        let repo = std::fs::canonicalize(self.repo.path()).unwrap();
        let dir = self.state_home.path().join(".codex");
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            repo.display()
        );
        text.push_str(&codex_hook_trust(&repo.join(".codex/hooks.json")));
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }

    pub(crate) fn command(&self, args: &[&str], env: &[(&str, &str)], as_nobody: bool) -> Command {
        let mut cmd = if as_nobody && is_root() {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
            c.arg(self.world_readable_bin());
            c
        } else {
            Command::new(bin("evidence-gate"))
        };
        cmd.args(args).current_dir(self.path());
        for k in SCRUB {
            cmd.env_remove(k);
        }
        cmd.env("XDG_STATE_HOME", self.state_home.path());
        cmd.env("HOME", self.state_home.path());
        for (k, v) in env {
            cmd.env(k, v);
        }
        // The user's rules file of this repository (`user_rules`) always.
        cmd.env("XDG_CONFIG_HOME", self.state_home.path().join("config"));
        cmd
    }

    /// The binary where an unprivileged user can run it (the build tree may
    /// lie below a directory only root can enter).
    fn world_readable_bin(&self) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.state_home.path().join("bin");
        let target = dir.join("evidence-gate");
        if !target.exists() {
            std::fs::create_dir_all(&dir).unwrap();
            for d in [self.state_home.path(), dir.as_path()] {
                std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            // The unprivileged user keeps its per-user state here too.
            std::fs::set_permissions(
                self.state_home.path(),
                std::fs::Permissions::from_mode(0o777),
            )
            .unwrap();
            if std::fs::hard_link(bin("evidence-gate"), &target).is_err() {
                std::fs::copy(bin("evidence-gate"), &target).unwrap();
            }
        }
        target
    }

    /// Runs `evidence-gate <args>` with `stdin`.
    pub fn run(&self, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Run {
        self.run_with(args, Stdin::Bytes(stdin), Stdout::Piped, env, false)
    }

    pub fn run_with(
        &self,
        args: &[&str],
        stdin: Stdin<'_>,
        stdout: Stdout,
        env: &[(&str, &str)],
        as_nobody: bool,
    ) -> Run {
        let mut cmd = self.command(args, env, as_nobody);
        match stdin {
            Stdin::Bytes(_) => cmd.stdin(Stdio::piped()),
            Stdin::Dir(d) => cmd.stdin(std::fs::File::open(d).unwrap()),
        };
        match stdout {
            Stdout::Piped => cmd.stdout(Stdio::piped()),
            Stdout::DevFull => cmd.stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            ),
        };
        cmd.stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn");
        if let Stdin::Bytes(bytes) = stdin {
            let mut si = child.stdin.take().unwrap();
            let _ = si.write_all(bytes);
        }
        let out = child.wait_with_output().expect("wait");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs the subagent-stop hook on a payload.
    pub fn stop(&self, payload: &Value) -> Run {
        self.stop_env(payload, &[])
    }

    pub fn stop_env(&self, payload: &Value, env: &[(&str, &str)]) -> Run {
        self.run(
            &["hook", "subagent-stop"],
            payload.to_string().as_bytes(),
            env,
        )
    }

    /// A Codex SubagentStop payload for a gated worker.
    pub fn codex(&self, message: Option<&str>) -> Value {
        json!({
            "session_id": "sess-1",
            "turn_id": "turn-1",
            "transcript_path": null,
            "agent_transcript_path": null,
            "cwd": self.path().to_str().unwrap(),
            "hook_event_name": "SubagentStop",
            "model": "gpt-5-codex",
            "permission_mode": "default",
            "stop_hook_active": false,
            "agent_id": "agent-1",
            "agent_type": WORKER,
            "last_assistant_message": message,
        })
    }

    /// A payload naming `rel` as the receipt.
    pub fn codex_receipt(&self, rel: &str) -> Value {
        self.codex(Some(&format!("Done.\nEVIDENCE_RECORDED: {rel}")))
    }

    /// The hooks' diagnostics: `hooks/diagnostics.jsonl` in the per-user
    /// state directory of this workspace (never the workspace).
    pub fn diagnostics(&self) -> Vec<Value> {
        read_jsonl(&self.diagnostics_path())
    }

    /// Where the hooks' diagnostics of this workspace are kept.
    pub fn diagnostics_path(&self) -> PathBuf {
        self.hook_state().join("diagnostics.jsonl")
    }

    pub fn diag_codes(&self) -> Vec<String> {
        self.diagnostics()
            .iter()
            .map(|d| d["code"].as_str().unwrap().to_owned())
            .collect()
    }

    pub fn ledger(&self) -> Vec<Value> {
        read_jsonl(&self.join(".omo/evidence-gate/ledger.jsonl"))
    }

    /// The hooks' per-user state directory of this workspace
    /// (threat-model.md §3): `<XDG_STATE_HOME>/evidence-gate/v1/<id>/hooks`.
    pub fn hook_state(&self) -> PathBuf {
        let canonical = std::fs::canonicalize(self.path()).unwrap();
        self.state_home
            .path()
            .join("evidence-gate/v1")
            .join(evidence_gate::internals::workspace_id(&canonical))
            .join("hooks")
    }

    /// The gate-ledger witness (the authoritative copy).
    pub fn witness(&self) -> Vec<Value> {
        read_jsonl(&self.hook_state().join("ledger.jsonl"))
    }

    /// Where the goal-loop hooks keep the side file `rel` =
    /// `<state dir>/<name>` (resume and spawn counters, stuck markers).
    pub fn side_path(&self, rel: &str) -> PathBuf {
        let (dir, name) = rel.rsplit_once('/').unwrap();
        let key = &evidence_gate::internals::sha256_hex(format!("{dir}/").as_bytes())[..16];
        self.hook_state().join("goal-loop").join(key).join(name)
    }

    pub fn read_side(&self, rel: &str) -> Option<Value> {
        let text = std::fs::read_to_string(self.side_path(rel)).ok()?;
        Some(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub fn write_side(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.side_path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    pub fn attempts(&self) -> Vec<Value> {
        let dir = self.hook_state().join("attempts");
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        entries
            .map(|e| serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap())
            .collect()
    }
}

/// The last record of an `EVIDENCE_GATE_IO_REPORT` file: what one hook
/// process read.
pub fn last_io_report(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

pub fn read_jsonl(p: &Path) -> Vec<Value> {
    let Ok(text) = std::fs::read_to_string(p) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// The block reason of a run (panics when the run did not block). Claude
/// Code's Stop/SubagentStop block is exit 2 with the plain reason on stderr
/// and nothing on stdout (a JSON block reaches Claude's model twice); every
/// other block is exit 0 with JSON `{decision, reason}`. Which host gets
/// which shape is pinned by `every_host_gets_its_own_block_shape`.
pub fn block_reason(run: &Run) -> String {
    if run.code == 2 {
        return claude_block_reason(run);
    }
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let v = run.json();
    assert_eq!(v["decision"], "block", "not a block: {}", run.stdout);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["decision", "reason"], "only allowed keys");
    v["reason"].as_str().unwrap().to_owned()
}

/// Claude Code's Stop/SubagentStop block: exit 2, nothing on stdout, the
/// reason plus one `\n` on stderr.
pub fn claude_block_reason(run: &Run) -> String {
    assert_eq!(
        run.code, 2,
        "not an exit-2 block: {}{}",
        run.stdout, run.stderr
    );
    assert_eq!(run.stdout, "", "an exit-2 block writes nothing on stdout");
    let r = run
        .stderr
        .strip_suffix('\n')
        .expect("the reason ends with one newline");
    assert!(!r.trim().is_empty());
    r.to_owned()
}

/// The reason and `systemMessage` of a block on a fault in the hook's own
/// state (threat-model.md I2).
pub fn halt_reason(run: &Run) -> (String, String) {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let v = run.json();
    assert_eq!(v["decision"], "block", "not a block: {}", run.stdout);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["decision", "reason", "systemMessage"],
        "{}",
        run.stdout
    );
    (
        v["reason"].as_str().unwrap().to_owned(),
        v["systemMessage"].as_str().unwrap().to_owned(),
    )
}

/// The reason of the Stop hook's hold on a plan its ledger does not vouch
/// for (threat-model.md I7): a halt whose `systemMessage` tells the user to
/// act.
pub fn tampered_reason(run: &Run) -> String {
    let (reason, message) = halt_reason(run);
    assert!(
        message.contains("_TAMPERED at ") && message.contains("the user must act"),
        "{message}"
    );
    reason
}

/// Asserts an allow: exit 0, nothing on stdout.
pub fn assert_allow(run: &Run) {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "", "an allow writes nothing (never `{{}}`)");
}

/// The finding codes listed in a block reason.
pub fn reason_codes(reason: &str) -> Vec<String> {
    reason
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split_once(':').map(|(c, _)| c.to_owned()))
        .filter(|c| c.chars().all(|ch| ch.is_ascii_uppercase() || ch == '_'))
        .collect()
}

/// Reads a fixture with `${FIXTURE_ROOT}` replaced by `root`.
pub fn fixture(rel: &str, root: &Path) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hosts")
        .join(rel);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text.replace("${FIXTURE_ROOT}", root.to_str().unwrap())).unwrap()
}

pub const R: &str = ".omo/evidence/receipt.md";

pub fn with_receipt() -> HookRepo {
    let h = HookRepo::new();
    h.write(R, RECEIPT_TEXT);
    h
}

/// Like [`blocked_with`] for a new agent, so that many cases in one test
/// stay below the attempt cap.
pub fn blocked_fresh(h: &HookRepo, payload: &serde_json::Value, code: &str) -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut p = payload.clone();
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    p["agent_id"] = json!(format!("agent-fresh-{n}"));
    blocked_with(h, &p, code)
}

pub fn blocked_with(h: &HookRepo, payload: &serde_json::Value, code: &str) -> String {
    let run = h.stop(payload);
    let reason = block_reason(&run);
    assert_eq!(reason_codes(&reason), [code], "{reason}");
    reason
}

pub fn chmod(p: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

// --- goal-loop hooks -------------------------------------------------------------

pub const ULW: &str = ".omo/ulw-loop";
pub const UG: &str = ".omagy/ultragoal";

impl HookRepo {
    /// Runs `evidence-gate hook <event> <args…>` on a payload.
    pub fn hook(&self, event: &str, args: &[&str], payload: &Value, env: &[(&str, &str)]) -> Run {
        let mut a = vec!["hook", event];
        a.extend_from_slice(args);
        self.run(&a, payload.to_string().as_bytes(), env)
    }

    /// A Codex payload of `event` for session `sid` plus `extra` keys.
    pub fn codex_event(&self, event: &str, sid: &str, extra: Value) -> Value {
        let mut v = json!({
            "session_id": sid,
            "turn_id": "turn-1",
            "transcript_path": null,
            "cwd": self.path().to_str().unwrap(),
            "hook_event_name": event,
            "model": "gpt-5-codex",
            "permission_mode": "default",
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    }

    /// A Codex main-agent Stop payload.
    pub fn codex_stop(&self, sid: &str) -> Value {
        self.codex_event(
            "Stop",
            sid,
            json!({"stop_hook_active": false, "last_assistant_message": "Done for now."}),
        )
    }

    /// Writes `goals.json` into `<dir>` (e.g. `.omo/ulw-loop/s1`).
    pub fn write_plan(&self, dir: &str, plan: &Value) {
        self.write(
            &format!("{dir}/goals.json"),
            serde_json::to_string_pretty(plan).unwrap(),
        );
    }

    /// The agent's hand edit of the plan at `rel`: every goal and
    /// criterion flipped to done, a completion record added, then `also`
    /// applied, written back in the engine's layout.
    pub fn flip_plan_to_complete(&self, rel: &str, also: impl FnOnce(&mut Value)) {
        let mut p: Value = self.read_json(rel).unwrap();
        crate::goals_support::flip_to_complete(&mut p);
        also(&mut p);
        let mut text = serde_json::to_string_pretty(&p).unwrap();
        text.push('\n');
        self.write(rel, text);
    }

    /// Reads a JSON state file, if present.
    pub fn read_json(&self, rel: &str) -> Option<Value> {
        let text = std::fs::read_to_string(self.join(rel)).ok()?;
        Some(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Names of the files in a directory (sorted; missing → empty).
    pub fn files_in(&self, rel: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.join(rel)) else {
            return Vec::new();
        };
        let mut v: Vec<String> = entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

/// A goal object: `(id, status, criteria [(id, status)])`.
pub fn goal(id: &str, status: &str, criteria: &[(&str, &str)]) -> Value {
    json!({
        "id": id,
        "title": format!("Title of {id}"),
        "objective": format!("Objective of {id}"),
        "status": status,
        "attempt": if status == "pending" { 0 } else { 1 },
        "successCriteria": criteria.iter().map(|(c, s)| json!({
            "id": c, "scenario": "s", "expectedEvidence": "e", "userModel": "happy", "status": s,
        })).collect::<Vec<_>>(),
    })
}

/// A plan document over `goals`, with `sessionId` and `activeGoalId`.
pub fn plan(session: Option<&str>, active: Option<&str>, goals: Vec<Value>) -> Value {
    json!({
        "version": 1,
        "profile": "ulw-loop",
        "sessionId": session,
        "activeGoalId": active,
        "updatedAt": "2026-11-30T10:00:00.000Z",
        "goals": goals,
    })
}

/// The context text of a prompt run (panics when the run gave none).
pub fn context_text(run: &Run) -> String {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let v = run.json();
    let h = &v["hookSpecificOutput"];
    assert_eq!(
        v.as_object().unwrap().len(),
        1,
        "only hookSpecificOutput: {v}"
    );
    let keys: Vec<&String> = h.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["hookEventName", "additionalContext"], "{v}");
    h["additionalContext"].as_str().unwrap().to_owned()
}

/// The deny reason of a tool run in the Codex/Claude shape (panics otherwise).
pub fn deny_reason(run: &Run) -> String {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let v = run.json();
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");
    let h = &v["hookSpecificOutput"];
    let keys: Vec<&String> = h.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "hookEventName",
            "permissionDecision",
            "permissionDecisionReason"
        ],
        "no additionalContext, no allow: {v}"
    );
    assert_eq!(h["hookEventName"], "PreToolUse");
    assert_eq!(h["permissionDecision"], "deny");
    h["permissionDecisionReason"].as_str().unwrap().to_owned()
}

/// The `[hooks.state]` tables trusting every handler of a Codex hooks file
/// as it is now, as `/hooks` records them (hash as Codex 0.171.0 computes
/// it: proven against recorded `hooks/list` output in the library tests).
pub fn codex_hook_trust(hooks_json: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(hooks_json) else {
        return String::new();
    };
    let doc: Value = serde_json::from_str(&text).unwrap();
    let mut out = String::new();
    for (event, groups) in doc["hooks"].as_object().into_iter().flatten() {
        for (gi, g) in groups.as_array().into_iter().flatten().enumerate() {
            for (hi, h) in g["hooks"].as_array().into_iter().flatten().enumerate() {
                let Some(hash) =
                    evidence_gate::internals::hook_trust_hash(event, g["matcher"].as_str(), h)
                else {
                    continue;
                };
                let label = evidence_gate::internals::event_label(event);
                out.push_str(&format!(
                    "[hooks.state.\"{}:{label}:{gi}:{hi}\"]\ntrusted_hash = \"{hash}\"\n",
                    hooks_json.display()
                ));
            }
        }
    }
    out
}
