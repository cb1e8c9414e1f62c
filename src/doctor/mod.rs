//! `evidence-gate doctor` (docs/hook-contracts.md#h-7): checks the host wiring, the rules,
//! the hook state directory, the gate lock and recent diagnostics. It never
//! changes host configuration.

mod local;
mod roundtrip;
mod user_state;
mod wired;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::ambient::{self, Ambient};
use crate::hooks::host::Host;
use crate::init::wiring::Shape;
use crate::workspace::Workspace;

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// Fine.
    Ok,
    /// Worth a look; not a failure.
    Warn,
    /// Broken.
    Fail,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    /// Stable id (`hooks.wired.codex`).
    pub id: String,
    /// Outcome.
    pub status: Status,
    /// One line.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl Check {
    fn new(id: impl Into<String>, status: Status, message: impl Into<String>) -> Check {
        Check {
            id: id.into(),
            status,
            message: message.into(),
            hint: None,
        }
    }

    fn hint(mut self, hint: impl Into<String>) -> Check {
        self.hint = Some(hint.into());
        self
    }
}

/// `doctor` options.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    /// `--host`; `None` checks every host with a configuration directory.
    pub host: Option<Host>,
    /// `--rules FILE`.
    pub rules: Option<PathBuf>,
    /// `--fix`: create the per-user state, remove junk planted where hook
    /// state belongs, restore the gate-ledger mirror. Without it doctor
    /// creates nothing.
    pub fix: bool,
    /// `--only`: the events `init --only` wired; the others are not expected.
    pub only: Vec<String>,
}

/// Host/event cells backed by a `recorded-` fixture (docs/hook-contracts.md#h-2) and
/// proven by the real-host suite (`.ci/real-hosts`): Codex CLI 0.171.0,
/// Claude Code 2.1.332, Gemini CLI 0.61.0 (`fixtures/hosts/README.md`).
pub(crate) const RECORDED_CELLS: &[(&str, &str)] = &[
    ("codex", "subagent-stop"),
    ("codex", "stop"),
    ("codex", "user-prompt-submit"),
    ("codex", "pre-tool-use"),
    ("claude-code", "subagent-stop"),
    ("claude-code", "stop"),
    ("claude-code", "user-prompt-submit"),
    ("claude-code", "pre-tool-use-spawn"),
    ("gemini", "stop"),
    ("gemini", "user-prompt-submit"),
];

/// Where the configuration files are.
pub(crate) struct Places {
    pub workspace: PathBuf,
    pub home: Option<PathBuf>,
}

impl Places {
    fn has_dir(&self, amb: &dyn Ambient, rel: &str) -> bool {
        let hit = |base: &Path| amb.open_dir(&base.join(rel)).is_ok();
        hit(&self.workspace) || self.home.as_deref().is_some_and(hit)
    }
}

/// The per-user `hooks/` directory's path.
fn hooks_state_path(amb: &dyn Ambient, ws: &Workspace) -> Option<PathBuf> {
    Some(
        ws.user_state_path(amb)?
            .join(crate::hooks::witness::HOOKS_DIR),
    )
}

/// The per-user `hooks/` directory, when it exists (never created here).
fn hooks_state_dir(amb: &dyn Ambient, ws: &Workspace) -> Option<cap_std::fs::Dir> {
    amb.open_dir(&hooks_state_path(amb, ws)?).ok()
}

/// Runs every check; `Err` when doctor could not run at all (exit 2).
pub(crate) fn run(o: &Options, amb: &dyn Ambient) -> Result<Vec<Check>, String> {
    let workspace = amb
        .current_dir()
        .map_err(|e| format!("the current directory is unavailable: {e}"))?;
    let root = amb
        .open_dir(&workspace)
        .map_err(|e| format!("cannot open {}: {e}", workspace.display()))?;
    let places = Places {
        workspace,
        home: ambient::var(amb, "HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute()),
    };
    let mut checks = Vec::new();
    let rules = local::rules_valid(amb, &root, o.rules.as_deref(), &mut checks);
    let hosts: Vec<Host> = match o.host {
        Some(h) => vec![h],
        None => Host::NAMED
            .iter()
            .copied()
            .filter(|h| {
                let dir = match h {
                    Host::Codex => ".codex",
                    Host::ClaudeCode => ".claude",
                    Host::Gemini => ".gemini",
                    Host::Agy | Host::Common => ".agents",
                };
                places.has_dir(amb, dir)
            })
            .collect(),
    };
    if hosts.is_empty() {
        checks.push(
            Check::new(
                "hooks.wired",
                Status::Warn,
                "no host configuration directory found (.codex, .claude, .gemini, .agents)",
            )
            .hint("run `evidence-gate init --host <host> --write`"),
        );
    }
    let set = match &rules {
        Some((set, _, _)) => set.clone(),
        None => crate::rules::RuleSet::embedded().map_err(|e| e.to_string())?,
    };
    // doctor expects the default wiring of `init` (no opt-ins).
    let shape = Shape::from_rules(&set, "auto", false, false).map_err(|e| e.to_string())?;
    let gated = shape.gated_agents.clone();
    wired::check_hosts(amb, &places, &hosts, &shape, &o.only, &mut checks)?;
    let profile_dirs: Vec<String> = set
        .family::<crate::rules::profiles::Profiles>()
        .map(|p| p.0.values().map(|p| p.state_dir.clone()).collect())
        .unwrap_or_default();
    // The rules were judged above, check by check; the workspace only
    // names the root and its per-user state.
    let ws = Workspace::with_rules(amb, root, set, Some(&places.workspace));
    user_state::check(amb, &places.workspace, &ws, o.fix, &mut checks);
    let hooks_dir = hooks_state_dir(amb, &ws);
    local::state_writable(ws.dir(), hooks_dir.as_ref(), &profile_dirs, &mut checks);
    local::lock_works(
        hooks_dir.as_ref(),
        rules.as_ref().map(|(_, _, h)| h),
        &mut checks,
    );
    local::hosts_support(&hosts, &mut checks);
    local::hosts_records(&hosts, &mut checks);
    let hooks_path = hooks_state_path(amb, &ws);
    local::diagnostics_recent(
        hooks_dir.as_ref(),
        hooks_path.as_deref(),
        &gated,
        &mut checks,
    );
    Ok(checks)
}
