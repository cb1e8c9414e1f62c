//! `shell.roundtrip.<host>`: runs a wired command the way the host does
//! (Codex: `$SHELL -lc`; Claude Code: `bash -c`; others: `sh -c`) on a
//! harmless payload per subcommand, and expects exit 0 with empty stdout — a login profile
//! that prints to stdout breaks every JSON answer.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Check, Status};
use crate::ambient::{self, Ambient};
use crate::hooks::event::HookEvent;
use crate::hooks::host::Host;
use crate::init::wiring::Row;

const LIMIT: Duration = Duration::from_secs(15);

/// The shell a host runs hook commands with.
fn shell(amb: &dyn Ambient, host: Host) -> (String, &'static str) {
    match host {
        Host::Codex => (
            ambient::var(amb, "SHELL")
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "/bin/sh".into()),
            "-lc",
        ),
        Host::ClaudeCode => ("bash".into(), "-c"),
        Host::Gemini | Host::Agy | Host::Common => ("sh".into(), "-c"),
    }
}

/// A harmless payload for `event`: each allows before touching any state
/// (an ungated agent type; a stop inside a subagent; a plain prompt; a tool
/// no guard watches).
fn probe(event: HookEvent, cwd: &Path) -> serde_json::Value {
    let base = json!({"session_id": "evidence-gate-doctor", "cwd": cwd});
    let mut v = base;
    let extra = match event {
        HookEvent::SubagentStop => json!({
            "hook_event_name": "SubagentStop", "agent_id": "doctor-probe",
            "agent_type": "evidence-gate-doctor-probe", "last_assistant_message": null,
        }),
        HookEvent::Stop => json!({
            "agent_id": "doctor-probe", "agent_type": "evidence-gate-doctor-probe",
            "stop_hook_active": true,
        }),
        HookEvent::UserPromptSubmit => json!({"prompt": "evidence-gate doctor probe"}),
        HookEvent::PreToolUse | HookEvent::PreToolUseSpawn => {
            json!({"tool_name": "evidence-gate-doctor-probe", "tool_input": {}})
        }
    };
    if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    v
}

/// Runs one wired command on its probe; `cwd` is the workspace. Returns the
/// check and the wall time in milliseconds.
pub(super) fn check(
    amb: &dyn Ambient,
    host: Host,
    row: &Row,
    cmd: &str,
    cwd: &Path,
) -> (Check, u128) {
    let id = format!("shell.roundtrip.{}", host.name());
    let what = format!("`hook {}`", row.event.name());
    if cmd.contains("${") {
        return (
            Check::new(
                id,
                Status::Warn,
                format!("{what} uses a host variable (plugin root); not run here"),
            ),
            0,
        );
    }
    let (sh, flag) = shell(amb, host);
    let start = Instant::now();
    let child = Command::new(&sh)
        .args([flag, cmd])
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return (
                Check::new(
                    id,
                    Status::Fail,
                    format!("`{sh}` could not be started: {e}"),
                ),
                0,
            );
        }
    };
    if let Some(mut si) = child.stdin.take() {
        let _ = si.write_all(probe(row.event, cwd).to_string().as_bytes());
    }
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < LIMIT => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return (
                    Check::new(
                        id,
                        Status::Fail,
                        format!(
                            "{what}: `{sh} {flag}` did not finish within {} s",
                            LIMIT.as_secs()
                        ),
                    ),
                    LIMIT.as_millis(),
                );
            }
        }
    }
    let out = match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => return (Check::new(id, Status::Fail, e.to_string()), 0),
    };
    let ms = start.elapsed().as_millis();
    let c = if out.status.success() && out.stdout.is_empty() {
        Check::new(id, Status::Ok, String::new())
    } else if !out.stdout.is_empty() {
        Check::new(id, Status::Fail, format!("{what}: the shell printed {} bytes to stdout; hosts read that as the hook's JSON answer", out.stdout.len()))
            .hint("remove output from the shell's login profile (or wire an absolute path without a shell)")
    } else {
        Check::new(
            id,
            Status::Fail,
            format!("{what}: the command exited {}", out.status),
        )
    };
    (c, ms)
}

/// The version a binary reports (`<bin> --version`). It runs under the
/// name `evidence-gate`: a multi-call link (`evidence-gate-hook-stop`) would
/// otherwise read `--version` as a hook flag, answer nothing and log
/// `HOOK_USAGE`.
pub(super) fn version_of(path: &Path) -> Option<String> {
    let mut cmd = Command::new(path);
    #[cfg(unix)]
    std::os::unix::process::CommandExt::arg0(&mut cmd, "evidence-gate");
    let out = cmd
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    text.split_whitespace().last().map(str::to_owned)
}
