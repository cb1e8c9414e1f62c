//! `hooks::handle` as a library entry point: the same decision as the
//! binary, with no stdout, no process exit and no global panic hook; and
//! the command-line edge restores the panic hook it installs for a run.

#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use cap_std::fs::Dir;
use evidence_gate::ambient::Ambient;
use evidence_gate::hooks::diagnostics::Diagnostics;
use evidence_gate::hooks::event::HookEvent;
use evidence_gate::hooks::host::Host;
use evidence_gate::hooks::host::encode::Output;
use evidence_gate::hooks::{Env, HookCall, handle};
use serde_json::Value;

use crate::hooks_support::{HookRepo, block_reason, reason_codes};

/// An embedder's capability: a fixed working directory and environment.
struct Embedder {
    cwd: PathBuf,
    env: HashMap<String, OsString>,
}

impl Embedder {
    fn for_repo(h: &HookRepo) -> Embedder {
        let home = h.state_home.path();
        let env = [
            ("HOME", home.to_path_buf()),
            ("XDG_STATE_HOME", home.to_path_buf()),
            ("XDG_CONFIG_HOME", home.join("config")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into_os_string()))
        .collect();
        Embedder {
            cwd: h.path().to_path_buf(),
            env,
        }
    }
}

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
        Err(io::Error::other("no executable in a library test"))
    }
    fn terminate(&self, code: i32) -> ! {
        panic!("the library ended the process with {code}")
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(self.cwd.join(path))
    }
}

fn decide(h: &HookRepo, payload: &Value) -> Option<Output> {
    let amb = Embedder::for_repo(h);
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
    let trace = handled.trace.expect("a decoded payload has a trace");
    assert_eq!(trace.host, Host::Codex);
    assert_eq!(
        trace.outcome,
        if handled.output.is_some() {
            "block"
        } else {
            "allow"
        }
    );
    handled.output
}

fn stdout_of(out: Option<Output>) -> String {
    match out {
        Some(Output::Stdout(b)) => String::from_utf8(b).unwrap(),
        other => panic!("a Codex decision is JSON on stdout, got {other:?}"),
    }
}

#[test]
fn library_blocks_a_stop_without_a_receipt_as_the_binary_does() {
    let h = HookRepo::new();
    let payload = h.codex(Some("done"));
    let lib = stdout_of(decide(&h, &payload));
    let lib: Value = serde_json::from_str(lib.trim_end()).unwrap();
    assert_eq!(lib["decision"], "block");
    let codes = reason_codes(lib["reason"].as_str().unwrap());
    assert!(codes.contains(&"RECEIPT_MISSING".to_owned()), "{codes:?}");
    let bin = block_reason(&h.stop(&payload));
    assert_eq!(reason_codes(&bin), codes, "library and binary decide alike");
}

#[test]
fn library_allows_a_valid_receipt_and_writes_nothing() {
    let h = crate::hooks_support::with_receipt();
    let out = decide(&h, &h.codex_receipt(crate::hooks_support::R));
    assert_eq!(out, None, "an allow writes nothing");
}

#[test]
fn library_and_edge_leave_the_process_panic_hook_alone() {
    let h = HookRepo::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let previous = std::panic::take_hook();
    // Counts only this test's own panic: other tests run in parallel.
    std::panic::set_hook(Box::new(move |p| {
        if p.payload().downcast_ref::<&str>() == Some(&"after the runs") {
            seen.fetch_add(1, Ordering::SeqCst);
        }
    }));
    // The library decides without touching the hook.
    let _ = decide(&h, &h.codex(Some("done")));
    // The command-line edge installs its capture for the run and restores
    // the embedder's hook afterwards.
    let amb = Embedder::for_repo(&h);
    let payload = h.codex(Some("done")).to_string();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut io = evidence_gate::cli::Io {
        stdin: &mut payload.as_bytes(),
        stdout: &mut stdout,
        stderr: &mut stderr,
        stdin_is_terminal: false,
        stdout_is_terminal: false,
        stderr_is_terminal: false,
    };
    let argv = ["evidence-gate", "hook", "subagent-stop", "--host", "codex"]
        .map(OsString::from)
        .to_vec();
    let code = evidence_gate::cli::main(argv, &amb, &mut io);
    assert_eq!(code, 0);
    assert!(String::from_utf8_lossy(&stdout).contains("RECEIPT_MISSING"));
    let caught = std::panic::catch_unwind(|| panic!("after the runs"));
    std::panic::set_hook(previous);
    assert!(caught.is_err());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the embedder's panic hook saw the panic after both runs"
    );
}
