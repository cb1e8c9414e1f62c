//! Checks of the workspace: rules, state directory, lock, support matrix and
//! recent diagnostics.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, SystemTime};

use cap_std::fs::Dir;
use serde_json::Value;

use super::{Check, RECORDED_CELLS, Status};
use crate::ambient::Ambient;
use crate::finding::{Code, Finding};
use crate::hooks::diagnostics::{FILE as DIAG_FILE, STATE_DIR};
use crate::hooks::event::HookEvent;
use crate::hooks::host::{Host, decode::wire_events};
use crate::hooks::subagent_stop::{self, Policy};
use crate::hooks::{HookCode, code::DiagClass};
use crate::rules::RuleSet;
use crate::rules::hooks::{HooksRules, SubagentStopRules, is_anchored};
use crate::sandbox::{PathLimits, RelPath};
use crate::store::{self, Durability, LockOptions, MutationLock};
use crate::workspace::{self, OnError, RepoRules, WorkspaceError, WorkspaceOptions};

/// `rules.valid`: embedded, repository override and `--rules` load, the
/// policy compiles and the directive renders within limits on maximal inputs.
pub(super) fn rules_valid(
    amb: &dyn Ambient,
    root: &Dir,
    rules_file: Option<&Path>,
    checks: &mut Vec<Check>,
) -> Option<(RuleSet, SubagentStopRules, HooksRules)> {
    let id = "rules.valid";
    let opts = WorkspaceOptions {
        rules_file,
        user_config: true,
        repo_rules: RepoRules::Tighten,
        on_error: OnError::Fail,
        root_path: None,
    };
    let loaded = workspace::load_rules(amb, Some(root), &opts).and_then(|l| {
        l.rules
            .validate()
            .map_err(WorkspaceError::Rules)
            .map(|()| l.rules)
    });
    let set = match loaded {
        Ok(s) => s,
        Err(e @ (WorkspaceError::RulesFile { .. } | WorkspaceError::UserConfig(_))) => {
            checks.push(Check::new(id, Status::Fail, e.to_string()));
            return None;
        }
        Err(e @ WorkspaceError::Rules(_)) => {
            checks.push(Check::new(id, Status::Fail, e.to_string()).hint(
                "hooks continue on the embedded defaults (HOOK_RULES_INVALID) until this is fixed",
            ));
            return None;
        }
    };
    let policy = match Policy::compile(&set) {
        Ok(p) => p,
        Err(e) => {
            checks.push(Check::new(id, Status::Fail, e));
            return None;
        }
    };
    if let Err(e) = crate::hooks::goal_loop::Policy::compile_eager(&set) {
        checks.push(Check::new(id, Status::Fail, e));
        return None;
    }
    let hooks: HooksRules = set.family().ok()?;
    let findings: Vec<Finding> = (0..8)
        .map(|_| Finding::new(Code::ReceiptPayloadInvalid, None, "m".repeat(400)))
        .collect();
    let long = "w".repeat(20_000);
    let reason = subagent_stop::render_reason(
        &policy,
        hooks.max_reason_bytes,
        &"a".repeat(200),
        Some(&long),
        10,
        &findings,
    );
    if reason.len() > hooks.max_reason_bytes {
        checks.push(Check::new(
            id,
            Status::Fail,
            "the block reason exceeds hooks.max_reason_bytes",
        ));
        return None;
    }
    for r in set.relaxations() {
        checks.push(
            Check::new(
                "rules.relaxation",
                Status::Warn,
                format!(
                    "RULES_RELAXATION_IGNORED {}: {} ({}) was ignored: {}",
                    crate::rules::REPO_OVERRIDE,
                    r.pointer,
                    r.direction,
                    r.why
                ),
            )
            .hint("a repository override may only tighten; relax the key in the user's rules file ($XDG_CONFIG_HOME/evidence-gate/rules.json) or the wiring's --rules"),
        );
    }
    let rules = policy.rules.clone();
    if is_anchored(&rules.gated_agents) {
        checks.push(Check::new(
            id,
            Status::Ok,
            format!(
                "rules load ({}); block reason ≤ {} bytes on maximal input",
                set.sources().join(" + "),
                hooks.max_reason_bytes
            ),
        ));
    } else {
        checks.push(
            Check::new(
                id,
                Status::Warn,
                "subagent_stop.gated_agents is not anchored at both ends",
            )
            .hint("write it as ^…$ so that `x-lazycodex-worker-low-y` is not gated by accident"),
        );
    }
    Some((set, rules, hooks))
}

/// `state.writable`: create, fsync, rename and delete a temp file in the
/// hook state directories that exist (the per-user `hooks/`, the in-tree
/// mirror's directory, goal state directories). Doctor never creates one
/// here (`--fix` does, in `state.user`).
pub(super) fn state_writable(
    root: &Dir,
    hooks: Option<&Dir>,
    profile_dirs: &[String],
    checks: &mut Vec<Check>,
) {
    let id = "state.writable";
    let probe = |dir: &Dir| -> std::io::Result<()> {
        store::atomic_replace(dir, ".doctor-probe", b"probe", Durability::Synced)?;
        dir.remove_file(".doctor-probe")
    };
    let mut checked = Vec::new();
    let result = (|| -> Result<(), String> {
        if let Some(h) = hooks {
            probe(h).map_err(|e| format!("the per-user hooks/ state: {e}"))?;
            checked.push("the per-user hooks/ state".to_owned());
        }
        let mut dirs = vec![STATE_DIR.to_owned()];
        dirs.extend(profile_dirs.iter().cloned());
        for d in &dirs {
            match crate::goals::state::open_chain(root, d, false) {
                Ok(Some(dir)) => {
                    probe(&dir).map_err(|e| format!("{d}/: {e}"))?;
                    checked.push(format!("{d}/"));
                }
                Ok(None) => {}
                Err(e) => return Err(format!("{d}/: {}", e.message)),
            }
        }
        Ok(())
    })();
    checks.push(match result {
        Ok(()) if checked.is_empty() => Check::new(
            id,
            Status::Ok,
            "no hook state directory exists yet (the first hook call creates them)",
        ),
        Ok(()) => Check::new(
            id,
            Status::Ok,
            format!("{} accept create, fsync, rename and delete", checked.join(", ")),
        ),
        Err(e) => Check::new(id, Status::Fail, e)
            .hint("hooks block every gated call whose state they cannot record (HOOK_STATE_IO); fix the permissions or run `evidence-gate doctor --fix`"),
    });
}

/// `lock.works`: the gate lock in the per-user `hooks/` state is taken
/// within `hooks.lock_wait_ms`, and a second handle's try-lock fails while
/// it is held.
pub(super) fn lock_works(
    hooks_dir: Option<&Dir>,
    hooks: Option<&HooksRules>,
    checks: &mut Vec<Check>,
) {
    let id = "lock.works";
    let Some(dir) = hooks_dir else {
        checks.push(Check::new(
            id,
            Status::Ok,
            "the per-user hook state does not exist yet; the gate lock is checked once it does",
        ));
        return;
    };
    let wait = hooks.map_or(500, |h| h.lock_wait_ms);
    let name = crate::hooks::witness::LOCK;
    let outcome = (|| -> Result<(), String> {
        let opts = LockOptions {
            timeout: Duration::from_millis(wait),
            command: "doctor".into(),
        };
        let lock = MutationLock::acquire(dir, name, &opts)
            .map_err(|e| format!("not taken within {wait} ms: {e}"))?;
        let second = dir.open(name).map_err(|e| e.to_string())?.into_std();
        let exclusive = matches!(second.try_lock(), Err(std::fs::TryLockError::WouldBlock));
        drop(second);
        lock.release().map_err(|e| e.to_string())?;
        if exclusive {
            Ok(())
        } else {
            Err("a second handle could take the lock while it was held".into())
        }
    })();
    checks.push(match outcome {
        Ok(()) => Check::new(
            id,
            Status::Ok,
            format!("the per-user hooks/{name} is exclusive"),
        ),
        Err(e) => Check::new(id, Status::Fail, e).hint("run `evidence-gate doctor --fix`"),
    });
}

/// `hosts.support`: supported (recorded fixture) versus experimental cells.
pub(super) fn hosts_support(hosts: &[Host], checks: &mut Vec<Check>) {
    let mut supported = Vec::new();
    let mut experimental = Vec::new();
    for h in hosts {
        for e in HookEvent::ALL {
            if wire_events(*e, *h).is_none() {
                continue;
            }
            let cell = format!("{}/{}", h.name(), e.name());
            if RECORDED_CELLS.contains(&(h.name(), e.name())) {
                supported.push(cell);
            } else {
                experimental.push(cell);
            }
        }
    }
    let message = format!(
        "supported: {}; experimental (synth fixtures only): {}",
        list(&supported),
        list(&experimental)
    );
    let status = if experimental.is_empty() {
        Status::Ok
    } else {
        Status::Warn
    };
    let mut c = Check::new("hosts.support", status, message);
    if !experimental.is_empty() {
        c = c.hint("no recorded host payload backs these cells yet (fixtures/hosts/README.md)");
    }
    checks.push(c);
}

/// `hosts.records`: for which hosts a compaction record shape is pinned by a
/// recorded capture (docs/threat-model.md#i5); for the others the context-pressure
/// escape is off (fail closed).
pub(super) fn hosts_records(hosts: &[Host], checks: &mut Vec<Check>) {
    let (on, off): (Vec<Host>, Vec<Host>) = hosts
        .iter()
        .partition(|h| crate::hooks::host_records::escape_enabled(**h));
    let names = |v: &[Host]| list(&v.iter().map(|h| h.name().to_owned()).collect::<Vec<_>>());
    let message = format!(
        "context-pressure escape on (host compaction record pinned): {}; off (no recorded compaction record, fail closed): {}",
        names(&on),
        names(&off)
    );
    let mut c = Check::new(
        "hosts.records",
        if off.is_empty() {
            Status::Ok
        } else {
            Status::Warn
        },
        message,
    );
    if !off.is_empty() {
        c = c.hint("a worker under context pressure there is held to its receipt until the attempt cap releases it (recorded as an override); a recorded compaction capture turns the escape on (fixtures/hosts/README.md)");
    }
    checks.push(c);
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// `diagnostics.recent`: code counts of the last 24 h, from the last 256 KiB
/// of `hooks/diagnostics.jsonl` in the workspace's per-user state directory
/// (`hooks_dir`; never the workspace, where the agent could delete or plant
/// records); warns on a panic or a fail-open stop of a gated agent.
pub(super) fn diagnostics_recent(
    hooks_dir: Option<&Dir>,
    hooks_path: Option<&Path>,
    gated: &str,
    checks: &mut Vec<Check>,
) {
    let id = "diagnostics.recent";
    let rel = RelPath::parse(DIAG_FILE, PathLimits::default()).expect("constant");
    let Some(Ok((mut file, meta))) = hooks_dir.map(|d| crate::sandbox::open::open_leaf(d, &rel))
    else {
        checks.push(Check::new(id, Status::Ok, "no diagnostics recorded"));
        return;
    };
    let start = meta.len().saturating_sub(256 * 1024);
    let mut buf = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err() || file.read_to_end(&mut buf).is_err() {
        checks.push(Check::new(
            id,
            Status::Warn,
            "the diagnostics file could not be read",
        ));
        return;
    }
    let since = SystemTime::now() - Duration::from_secs(24 * 3600);
    let gated = regex::Regex::new(gated).ok();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut alarming = 0u64;
    for line in buf.split(|b| *b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let recent = v
            .get("ts")
            .and_then(Value::as_str)
            .and_then(crate::time::parse_rfc3339)
            .is_some_and(|t| t >= since);
        let Some(code) = v.get("code").and_then(Value::as_str).filter(|_| recent) else {
            continue;
        };
        *counts.entry(code.to_owned()).or_default() += 1;
        let plumbing = HookCode::ALL
            .iter()
            .find(|c| c.name() == code)
            .is_some_and(|c| c.class() == DiagClass::Plumbing);
        let gated_agent = v.get("event").and_then(Value::as_str) == Some("subagent-stop")
            && v.get("agent_type")
                .and_then(Value::as_str)
                .is_some_and(|t| gated.as_ref().is_some_and(|g| g.is_match(t)));
        if code == "HOOK_PANIC" || (plumbing && gated_agent) {
            alarming += 1;
        }
    }
    let summary = if counts.is_empty() {
        "no diagnostics in the last 24 h".to_owned()
    } else {
        counts
            .iter()
            .map(|(c, n)| format!("{c}×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    checks.push(if alarming > 0 {
        Check::new(
            id,
            Status::Warn,
            format!("{summary} ({alarming} panics or fail-open stops of gated workers)"),
        )
        .hint(format!(
            "read {}: each fail-open let a worker stop unchecked",
            hooks_path.map_or_else(
                || format!("hooks/{DIAG_FILE} in the per-user state directory"),
                |p| p.join(DIAG_FILE).display().to_string()
            )
        ))
    } else {
        Check::new(id, Status::Ok, summary)
    });
}
