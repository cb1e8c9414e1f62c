//! The per-session registry of active workflows (docs/engine.md#ge-9):
//! `<registryDir>/<sid>.json`, or `<registryDir>.json` unscoped, written
//! atomically under `<registryDir>/.lock`. Keys written by other workflow
//! tools are kept.

use cap_std::fs::Dir;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::goals::error::GoalError;
use crate::goals::state::{self, ReadOutcome};
use crate::store::{self, Durability, LockError, LockOptions, MutationLock};

/// One active or released workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Workflow name.
    pub workflow: String,
    /// Its role.
    pub role: String,
    /// Its state directory (evidence-gate registrations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_dir: Option<String>,
    /// When it was registered.
    pub registered_at: String,
    /// `evidence-gate` or `external`.
    pub registered_by: String,
    /// The workflow it took over from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_from: Option<String>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// When it left `active`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_at: Option<String>,
    /// `completed`, `handoff`, `released`, `archived` or `stale`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_reason: Option<String>,
    /// `workflow release --rationale`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_rationale: Option<String>,
    /// Keys written by other tools.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Entry {
    /// A new active entry.
    pub(crate) fn new(
        workflow: &str,
        role: &str,
        state_dir: Option<&str>,
        by: &str,
        now: &str,
    ) -> Entry {
        Entry {
            workflow: workflow.to_owned(),
            role: role.to_owned(),
            state_dir: state_dir.map(str::to_owned),
            registered_at: now.to_owned(),
            registered_by: by.to_owned(),
            handoff_from: None,
            note: None,
            released_at: None,
            release_reason: None,
            release_rationale: None,
            extra: Map::new(),
        }
    }

    /// `{workflow, registeredAt, stateDir?}` for overlap details.
    pub(crate) fn brief(&self) -> Value {
        let mut m = Map::new();
        m.insert("workflow".into(), Value::String(self.workflow.clone()));
        m.insert(
            "registeredAt".into(),
            Value::String(self.registered_at.clone()),
        );
        if let Some(d) = &self.state_dir {
            m.insert("stateDir".into(), Value::String(d.clone()));
        }
        Value::Object(m)
    }
}

/// The registry document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(title = "workflow registry (.omo/evidence-gate/workflows[/<sid>].json)")]
pub(crate) struct Registry {
    /// Format version (1).
    pub version: u32,
    /// The session (null: unscoped).
    pub session_id: Option<String>,
    /// Active workflows.
    #[serde(default)]
    pub active: Vec<Entry>,
    /// Released workflows, oldest first.
    #[serde(default)]
    pub history: Vec<Entry>,
    /// Keys written by other tools.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Registry {
    /// An empty registry for a session.
    pub(crate) fn empty(sid: Option<&str>) -> Registry {
        Registry {
            version: 1,
            session_id: sid.map(str::to_owned),
            active: Vec::new(),
            history: Vec::new(),
            extra: Map::new(),
        }
    }

    /// Moves the active entries `pick` selects to `history`.
    pub(crate) fn release_where(
        &mut self,
        mut pick: impl FnMut(&Entry) -> bool,
        reason: &str,
        rationale: Option<&str>,
        now: &str,
    ) -> Vec<Entry> {
        let (gone, kept): (Vec<Entry>, Vec<Entry>) = std::mem::take(&mut self.active)
            .into_iter()
            .partition(|e| pick(e));
        self.active = kept;
        let mut released = Vec::with_capacity(gone.len());
        for mut e in gone {
            e.released_at = Some(now.to_owned());
            e.release_reason = Some(reason.to_owned());
            e.release_rationale = rationale.map(str::to_owned);
            released.push(e.clone());
            self.history.push(e);
        }
        released
    }
}

/// JSON Schema of the registry.
pub(crate) fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Registry)).expect("schemas serialise")
}

/// Where a session's registry lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location {
    /// The registry directory (holds `.lock` and the scoped files).
    pub dir: String,
    /// The directory holding this session's file.
    pub file_dir: String,
    /// The file name.
    pub file_name: String,
    /// Sessions never share a file, unscoped runs share `<dir>.json`.
    pub sid: Option<String>,
}

/// The lock file in the registry directory.
pub(crate) const LOCK: &str = ".lock";

impl Location {
    /// The registry of `sid` under `registry_dir`.
    pub(crate) fn new(registry_dir: &str, sid: Option<&str>) -> Location {
        let dir = registry_dir.trim_end_matches('/').to_owned();
        match sid {
            Some(s) => Location {
                file_dir: dir.clone(),
                file_name: format!("{s}.json"),
                dir,
                sid: Some(s.to_owned()),
            },
            None => {
                let (parent, base) = dir.rsplit_once('/').unwrap_or((".", dir.as_str()));
                Location {
                    file_dir: parent.to_owned(),
                    file_name: format!("{base}.json"),
                    dir: dir.clone(),
                    sid: None,
                }
            }
        }
    }

    /// Repo-relative path of the file.
    pub(crate) fn display(&self) -> String {
        if self.file_dir == "." {
            self.file_name.clone()
        } else {
            format!("{}/{}", self.file_dir, self.file_name)
        }
    }

    fn open_file_dir(&self, root: &Dir, create: bool) -> Result<Option<Dir>, GoalError> {
        if self.file_dir == "." {
            return root
                .try_clone()
                .map(Some)
                .map_err(|e| GoalError::io(".", "open", &e));
        }
        state::open_chain(root, &self.file_dir, create)
    }

    /// Reads the registry (missing ⇒ empty). Never writes.
    pub(crate) fn load(&self, root: &Dir, max: u64) -> Result<Registry, GoalError> {
        let display = self.display();
        let Some(dir) = self.open_file_dir(root, false)? else {
            return Ok(Registry::empty(self.sid.as_deref()));
        };
        match state::read_file(&dir, &self.file_name, &display, max)? {
            None => Ok(Registry::empty(self.sid.as_deref())),
            Some(ReadOutcome::TooLarge { size }) => {
                Err(crate::goals::input::too_large(&display, size, max))
            }
            Some(ReadOutcome::Bytes(b)) => {
                // The registry only records which workflow owns which state
                // directory: say so, and how to get past a corrupt one.
                let corrupt = |e: String| {
                    let mut err = GoalError::io(&display, "parse", &std::io::Error::other(e));
                    err.message = format!(
                        "{} The workflow registry is corrupt: restore it from version control, or move it aside to start an empty one (it only records which workflow owns each session's state; the plans and ledgers are untouched).",
                        err.message
                    );
                    err
                };
                let v = crate::json::parse_strict(&b).map_err(|e| corrupt(e.to_string()))?;
                serde_json::from_value(v).map_err(|e| corrupt(e.to_string()))
            }
        }
    }

    /// Writes the registry atomically.
    pub(crate) fn save(&self, root: &Dir, reg: &Registry) -> Result<(), GoalError> {
        let display = self.display();
        let dir = self.open_file_dir(root, true)?.expect("created");
        let mut bytes = serde_json::to_vec_pretty(reg).expect("json");
        bytes.push(b'\n');
        store::atomic_replace(&dir, &self.file_name, &bytes, Durability::Synced)
            .map_err(|e| GoalError::io(&display, "write", &e))
    }

    /// Takes the registry lock (creating the directory).
    pub(crate) fn lock(
        &self,
        root: &Dir,
        timeout: std::time::Duration,
        command: &str,
    ) -> Result<MutationLock, GoalError> {
        let dir = state::open_chain(root, &self.dir, true)?.expect("created");
        let lock_path = format!("{}/{LOCK}", self.dir);
        let opts = LockOptions {
            timeout,
            command: command.to_owned(),
        };
        MutationLock::acquire(&dir, LOCK, &opts).map_err(|e| match e {
            LockError::Timeout { waited_ms, holder } => GoalError::new(
                crate::goals::ErrorKind::LockTimeout {
                    lock_path: lock_path.clone(),
                    waited_ms,
                    holder,
                },
                format!(
                    "Timed out after {waited_ms} ms waiting for the workflow registry lock {lock_path}. Retry."
                ),
            ),
            LockError::Unsafe { what } => GoalError::unsafe_lock(&lock_path, what),
            LockError::Io(e) => GoalError::io(&lock_path, "lock", &e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        let l = Location::new(".omo/evidence-gate/workflows", Some("s1"));
        assert_eq!(l.display(), ".omo/evidence-gate/workflows/s1.json");
        let u = Location::new(".omo/evidence-gate/workflows", None);
        assert_eq!(u.display(), ".omo/evidence-gate/workflows.json");
        assert_eq!(u.dir, ".omo/evidence-gate/workflows");
        let top = Location::new("workflows", None);
        assert_eq!(top.display(), "workflows.json");
    }

    #[test]
    fn unknown_keys_survive() {
        let text = r#"{"version":1,"sessionId":null,"active":[{"workflow":"ralph","role":"persistence_owner","registeredAt":"t","registeredBy":"external","pid":7}],"history":[],"tool":"x"}"#;
        let r: Registry = serde_json::from_str(text).unwrap();
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back["tool"], "x");
        assert_eq!(back["active"][0]["pid"], 7);
    }
}
