//! The diagnostics file (docs/hook-contracts.md#h-1): one compact JSON object per line in
//! `<user state>/hooks/diagnostics.jsonl` of the workspace
//! (`$XDG_STATE_HOME/evidence-gate/v1/<workspace-id>/hooks/`, docs/threat-model.md
//! docs/hook-contracts.md#h-3), out of reach of the gated agent, which could otherwise delete the
//! record of a fail-open or plant records `doctor` reports. When `<root>` is
//! neither a repository nor has `.omo/`, is unknown, or its per-user state
//! directory is unusable, records go to the base per-user state directory
//! (`$XDG_STATE_HOME/evidence-gate/diagnostics.jsonl`) instead — never into
//! the workspace. Best effort: a failure here never changes a decision, and a
//! panic inside the writer is swallowed.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use serde_json::{Map, Value, json};

use super::code::HookCode;
use super::event::Envelope;
use super::host_id::{Host, HostSource};
use crate::ambient::Ambient;
use crate::rules::RuleSet;

/// File name of the diagnostics log.
pub const FILE: &str = crate::store::DIAGNOSTICS_FILE;
/// Rotated predecessor.
pub const ROTATED: &str = crate::store::DIAGNOSTICS_ROTATED;
/// The hooks' state directory, relative to the workspace root (the
/// gate-ledger mirror; diagnostics are no longer kept there).
pub const STATE_DIR: &str = crate::store::DIAGNOSTICS_DIR;
/// Where messages point users for the records: `doctor` reads them from the
/// per-user state directory.
pub const SEE: &str = "run `evidence-gate doctor` (diagnostics are in the per-user state directory, hooks/diagnostics.jsonl)";

const MAX_MESSAGE: usize = 500;
const MAX_DETAIL: usize = 2048;

/// Where records go.
enum Target {
    /// Not known yet (before the root was set) or unusable.
    None,
    /// `<root>` is this path; where its records go is worked out at the
    /// first record (most calls write none).
    Root(PathBuf),
    /// A workspace (its canonical root): `<user state>/hooks/` of that
    /// workspace, created at the first write; when unusable, the fallback
    /// directory.
    Workspace {
        /// The canonical workspace root.
        canonical: PathBuf,
        /// The base per-user state directory, unless it lies inside the
        /// workspace.
        fallback: Option<PathBuf>,
    },
    /// The base per-user state directory, created at the first write.
    User(PathBuf),
}

struct State {
    target: Target,
    host: Option<Host>,
    host_source: Option<HostSource>,
    session_id: Option<String>,
    agent_id: Option<String>,
    agent_type: Option<String>,
    turn_id: Option<String>,
    /// The rules in effect; their digest is computed when a record is written.
    rules: Option<Arc<RuleSet>>,
    profile: Option<String>,
    max_bytes: u64,
}

/// The diagnostics writer of one hook run; shared by the main path, the
/// watchdog and the panic path.
pub struct Diagnostics<'a> {
    amb: &'a dyn Ambient,
    event: String,
    start: Instant,
    state: Mutex<State>,
}

impl<'a> Diagnostics<'a> {
    /// A writer for one run of `event`, timed from `start`.
    pub fn new(amb: &'a dyn Ambient, event: &str, start: Instant) -> Diagnostics<'a> {
        Diagnostics {
            amb,
            event: event.to_owned(),
            start,
            state: Mutex::new(State {
                target: Target::None,
                host: None,
                host_source: None,
                session_id: None,
                agent_id: None,
                agent_type: None,
                turn_id: None,
                rules: None,
                profile: None,
                max_bytes: 1024 * 1024,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets `<root>` (payload `cwd` or the process working directory): a
    /// repository or a directory with `.omo/` keeps its diagnostics in its
    /// per-user state directory; anything else uses the base per-user state
    /// directory.
    pub fn set_root(&self, root: &Path) {
        self.lock().target = Target::Root(root.to_owned());
    }

    /// Where the records of `<root>` at `path` go.
    fn resolve(&self, path: &Path) -> Target {
        let Ok(dir) = self.amb.open_dir(path) else {
            return self.base_target(None);
        };
        let workspace = dir.exists(".omo") || dir.exists(".git");
        let canonical = self.amb.canonicalize(path).ok();
        match canonical {
            Some(canonical) if workspace => {
                let fallback = user_state_path(self.amb).filter(|b| !b.starts_with(&canonical));
                Target::Workspace {
                    canonical,
                    fallback,
                }
            }
            canonical => self.base_target(canonical.as_deref()),
        }
    }

    /// The base per-user state directory, unless it lies inside `root`.
    fn base_target(&self, root: Option<&Path>) -> Target {
        user_state_path(self.amb)
            .filter(|b| root.is_none_or(|r| !b.starts_with(r)))
            .map_or(Target::None, Target::User)
    }

    /// Records the host decision.
    pub fn set_host(&self, host: Host, source: HostSource) {
        let mut s = self.lock();
        s.host = Some(host);
        s.host_source = Some(source);
    }

    /// Records the payload identifiers.
    pub fn set_identity(&self, env: &Envelope) {
        let mut s = self.lock();
        s.host = Some(env.host);
        s.host_source = Some(env.host_source);
        s.session_id = env.session_id.clone();
        s.turn_id = env.turn_id.clone();
        if let Some(a) = &env.agent {
            s.agent_id = a.id.clone();
            s.agent_type = a.kind.clone();
        }
    }

    /// Records the goal-engine profile in effect (goal-loop hooks).
    pub fn set_profile(&self, name: Option<&str>) {
        self.lock().profile = name.map(str::to_owned);
    }

    /// Records the rules in effect (their digest goes into each record).
    pub fn set_rules(&self, rules: &Arc<RuleSet>, max_bytes: u64) {
        let mut s = self.lock();
        s.rules = Some(Arc::clone(rules));
        s.max_bytes = max_bytes;
    }

    /// Appends one record. Never fails and never panics.
    pub fn write(&self, code: HookCode, outcome: &str, message: &str, detail: Option<Value>) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            self.write_inner(code, outcome, message, detail);
        }));
    }

    fn write_inner(&self, code: HookCode, outcome: &str, message: &str, detail: Option<Value>) {
        let mut s = self.lock();
        if let Target::Root(path) = &s.target {
            s.target = self.resolve(&path.clone());
        }
        let open_user = |path: &Path| {
            self.amb.create_dir_all(path).ok()?;
            self.amb.open_dir(path).ok()
        };
        let dir = match &s.target {
            Target::None | Target::Root(_) => None,
            Target::User(path) => open_user(path),
            Target::Workspace {
                canonical,
                fallback,
            } => crate::userstate::UserState::open(self.amb, canonical)
                .ok()
                .and_then(|u| u.subdir(crate::userstate::HOOKS_DIR).ok())
                .or_else(|| fallback.as_deref().and_then(open_user)),
        };
        let Some(dir) = dir else {
            return;
        };
        let record = self.record(&s, code, outcome, message, detail);
        let max = s.max_bytes;
        drop(s);
        let line = serde_json::to_vec(&Value::Object(record)).expect("records serialise");
        crate::store::append_diagnostic(&dir, &line, max);
    }

    fn record(
        &self,
        s: &State,
        code: HookCode,
        outcome: &str,
        message: &str,
        detail: Option<Value>,
    ) -> Map<String, Value> {
        let detail = detail.map(|d| {
            if serde_json::to_vec(&d).map_or(true, |b| b.len() > MAX_DETAIL) {
                json!({"truncated": true})
            } else {
                d
            }
        });
        let mut m = Map::new();
        m.insert("v".into(), json!(1));
        m.insert(
            "ts".into(),
            json!(crate::time::rfc3339_ms(SystemTime::now())),
        );
        m.insert("code".into(), json!(code.name()));
        m.insert("level".into(), json!(code.level()));
        m.insert("event".into(), json!(self.event));
        m.insert("host".into(), json!(s.host.map(Host::name)));
        m.insert(
            "host_source".into(),
            json!(s.host_source.map(HostSource::name)),
        );
        m.insert("profile".into(), json!(s.profile));
        m.insert("session_id".into(), json!(s.session_id));
        m.insert("agent_id".into(), json!(s.agent_id));
        m.insert("agent_type".into(), json!(s.agent_type));
        m.insert("turn_id".into(), json!(s.turn_id));
        m.insert("outcome".into(), json!(outcome));
        m.insert(
            "message".into(),
            json!(crate::text::cap_bytes(message, MAX_MESSAGE)),
        );
        m.insert("detail".into(), detail.unwrap_or(Value::Null));
        m.insert(
            "elapsed_us".into(),
            json!(self.start.elapsed().as_micros() as u64),
        );
        m.insert(
            "rules_digest".into(),
            json!(s.rules.as_ref().map(|r| r.digest())),
        );
        m.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
        m.insert("pid".into(), json!(std::process::id()));
        m
    }
}

/// The per-user state directory (`$XDG_STATE_HOME/evidence-gate`, else
/// `~/.local/state/evidence-gate`; the platform directories elsewhere).
pub fn user_state_path(amb: &dyn Ambient) -> Option<PathBuf> {
    crate::userstate::base_path(amb)
}
