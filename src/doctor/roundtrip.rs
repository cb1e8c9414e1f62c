//! `shell.roundtrip.<host>`: runs a wired command the way the host does
//! (Codex: `$SHELL -lc`; Claude Code: `bash -c`; others: `sh -c`) on a
//! harmless payload, and expects exit 0 with empty stdout — a login profile
//! that prints to stdout breaks every JSON answer.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Check, Status};
use crate::ambient::{self, Ambient};
use crate::hooks::host::Host;

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

/// Runs one command; `cwd` is the workspace.
pub(super) fn check(amb: &dyn Ambient, host: Host, cmd: &str, cwd: &Path, checks: &mut Vec<Check>) {
    let id = format!("shell.roundtrip.{}", host.name());
    if cmd.contains("${") {
        checks.push(Check::new(
            id,
            Status::Warn,
            "the command uses a host variable (plugin root); not run here",
        ));
        return;
    }
    // An ungated agent type: the hook decodes, allows and writes nothing.
    let probe = json!({
        "hook_event_name": "SubagentStop", "session_id": "evidence-gate-doctor",
        "agent_id": "doctor-probe", "agent_type": "evidence-gate-doctor-probe",
        "cwd": cwd, "last_assistant_message": null,
    });
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
            checks.push(Check::new(
                id,
                Status::Fail,
                format!("`{sh}` could not be started: {e}"),
            ));
            return;
        }
    };
    if let Some(mut si) = child.stdin.take() {
        let _ = si.write_all(probe.to_string().as_bytes());
    }
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < LIMIT => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                checks.push(Check::new(
                    id,
                    Status::Fail,
                    format!("`{sh} {flag}` did not finish within {} s", LIMIT.as_secs()),
                ));
                return;
            }
        }
    }
    let out = match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => {
            checks.push(Check::new(id, Status::Fail, e.to_string()));
            return;
        }
    };
    let ms = start.elapsed().as_millis();
    checks.push(if out.status.success() && out.stdout.is_empty() {
        Check::new(id, Status::Ok, format!("`{sh} {flag}` ran the hook: exit 0, empty stdout, {ms} ms"))
    } else if !out.stdout.is_empty() {
        Check::new(id, Status::Fail, format!("the shell printed {} bytes to stdout; hosts read that as the hook's JSON answer", out.stdout.len()))
            .hint("remove output from the shell's login profile (or wire an absolute path without a shell)")
    } else {
        Check::new(id, Status::Fail, format!("the command exited {}", out.status))
    });
}

/// The version a binary reports (`<bin> --version`).
pub(super) fn version_of(path: &Path) -> Option<String> {
    let out = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    text.split_whitespace().last().map(str::to_owned)
}
