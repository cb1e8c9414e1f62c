//! Decides a host hook event from its JSON payload with `hooks::handle`,
//! the same decision the `evidence-gate hook subagent-stop` command prints:
//! `cargo run --example hook_event`.
//!
//! A Codex `SubagentStop` payload whose worker claims "done" without an
//! evidence receipt is blocked. The workspace and the per-user state (`HOME`,
//! `XDG_STATE_HOME`, `XDG_CONFIG_HOME`) are temporary directories created
//! here: the embedder's [`Ambient`] decides what the library may see.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cap_std::fs::Dir;
use evidence_gate::ambient::Ambient;
use evidence_gate::hooks::diagnostics::Diagnostics;
use evidence_gate::hooks::event::HookEvent;
use evidence_gate::hooks::host::Host;
use evidence_gate::hooks::host::encode::Output;
use evidence_gate::hooks::{Env, HookCall, handle};
use serde_json::json;

/// The embedder's capability: a fixed working directory and environment.
struct Embedder {
    cwd: PathBuf,
    env: HashMap<String, OsString>,
}

#[allow(clippy::disallowed_methods)]
impl Ambient for Embedder {
    fn open_dir(&self, path: &Path) -> io::Result<Dir> {
        Dir::open_ambient_dir(self.cwd.join(path), cap_std::ambient_authority())
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(self.cwd.join(path))
    }
    fn current_dir(&self) -> io::Result<PathBuf> {
        Ok(self.cwd.clone())
    }
    fn var_os(&self, key: &str) -> Option<OsString> {
        self.env.get(key).cloned()
    }
    fn current_exe(&self) -> io::Result<PathBuf> {
        Err(io::Error::other("no executable in an embedding"))
    }
    fn terminate(&self, code: i32) -> ! {
        panic!("the library asked to end the process with {code}")
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(self.cwd.join(path))
    }
}

#[allow(clippy::disallowed_methods)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = tempfile::tempdir()?;
    std::fs::create_dir_all(workspace.path().join(".git"))?;
    std::fs::create_dir_all(workspace.path().join(".omo/evidence"))?;
    let home = tempfile::tempdir()?;
    let amb = Embedder {
        cwd: workspace.path().to_path_buf(),
        env: [
            ("HOME", home.path().to_path_buf()),
            ("XDG_STATE_HOME", home.path().to_path_buf()),
            ("XDG_CONFIG_HOME", home.path().join("config")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into_os_string()))
        .collect(),
    };

    let payload = json!({
        "session_id": "sess-1",
        "turn_id": "turn-1",
        "cwd": workspace.path(),
        "hook_event_name": "SubagentStop",
        "stop_hook_active": false,
        "agent_id": "agent-1",
        "agent_type": "lazycodex-worker-medium",
        "last_assistant_message": "Done, everything works.",
    });

    let start = Instant::now();
    let diag = Diagnostics::new(&amb, "subagent-stop", start);
    let env = Env {
        amb: &amb,
        diag: &diag,
        deadline: &(),
        start,
    };
    let mut call = HookCall::new(HookEvent::SubagentStop);
    call.host = Some(Host::Codex);
    let bytes = payload.to_string();
    let handled = handle(&call, &env, &mut bytes.as_bytes());

    if let Some(trace) = &handled.trace {
        println!("host {:?}, outcome {}", trace.host, trace.outcome);
    }
    match handled.output {
        Some(Output::Stdout(b)) => println!("{}", String::from_utf8_lossy(&b).trim_end()),
        Some(other) => println!("{other:?}"),
        // A worker's stop without a receipt is never allowed.
        None => return Err("the receiptless stop was allowed".into()),
    }
    Ok(())
}
