//! The user-prompt witness (docs/threat-model.md#tm-3, docs/threat-model.md#i12): every prompt the
//! `user-prompt-submit` hook sees is recorded in the per-user state
//! directory, out of the agent's reach, as one JSON line
//! `{session, at, sha256, text, decisionIds}` of `prompts/prompts.jsonl`.
//! The text is the user's own words kept on the user's machine, cut to
//! [`MAX_TEXT`] bytes; the file rotates to `prompts.1.jsonl` past
//! [`MAX_FILE`] bytes (two generations are kept). The Stop hook reads it to
//! verify the plan's user decisions ([`crate::goals::decisions`]) and
//! appends a `user_decision_verified` record to the in-tree gate ledger, so
//! CI (which has no witness) can tell a verified decision from one the
//! agent typed.

use std::io::{self, Read};
use std::path::PathBuf;

use cap_std::fs::Dir;
use serde_json::{Map, Value, json};

use crate::goals::decisions::{self, UserDecision};
use crate::hooks::code::HookCode;
use crate::hooks::event::Decision;
use crate::hooks::gate_ledger::GateLedgerKind;
use crate::hooks::witness;
use crate::store::{LockError, LockOptions, MutationLock};
use crate::userstate::UserState;

/// The witness subdirectory.
pub(crate) const DIR: &str = "prompts";
/// The current generation.
pub(crate) const FILE: &str = "prompts.jsonl";
/// The previous generation.
pub(crate) const ROTATED: &str = "prompts.1.jsonl";
/// The decisions already carried to the gate ledger (one key a line).
pub(crate) const VERIFIED: &str = "verified.txt";
/// Bytes of prompt text kept per record.
pub(crate) const MAX_TEXT: usize = 64 * 1024;
/// Size at which the current generation rotates.
pub(crate) const MAX_FILE: u64 = 4 * 1024 * 1024;
/// Largest generation read (a generation may overshoot by one record).
const MAX_READ: u64 = MAX_FILE + 2 * MAX_TEXT as u64 + 4096;

/// One recorded user prompt.
#[derive(Debug, Clone)]
pub(crate) struct Prompt {
    /// When the hook saw it (RFC 3339, UTC, milliseconds).
    pub at: String,
    /// SHA-256 of the full prompt.
    pub sha256: String,
    /// The prompt text (possibly cut).
    pub text: String,
}

fn dir(us: &UserState) -> io::Result<Dir> {
    us.subdir(DIR)
}

/// The ambient path of the witness file (for messages).
pub(crate) fn display(us: &UserState) -> PathBuf {
    us.path().join(DIR).join(FILE)
}

/// Records one prompt of `session` seen at `at`: written at once, durable
/// once the returned sync is waited for.
fn record(
    us: &UserState,
    session: &str,
    at: &str,
    prompt: &str,
) -> io::Result<crate::store::SyncPending> {
    let d = dir(us)?;
    if let Ok(m) = d.symlink_metadata(FILE)
        && m.is_file()
        && m.len() > MAX_FILE
    {
        d.rename(FILE, &d, ROTATED)?;
    }
    let text = crate::hooks::host::encode::cap_bytes(prompt, MAX_TEXT);
    let line = json!({
        "session": session,
        "at": at,
        "sha256": crate::digest::sha256_hex(prompt.as_bytes()),
        "text": text,
        "decisionIds": decisions::ids_in(prompt),
    });
    let mut bytes = serde_json::to_vec(&line).expect("a JSON object serializes");
    bytes.push(b'\n');
    let (mut file, created) = crate::store::open_append(&d, FILE)?;
    crate::store::append_sync_behind(&d, &mut file, created, &bytes)
}

fn read_generation(d: &Dir, name: &str) -> io::Result<Vec<u8>> {
    use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
    let mut o = cap_std::fs::OpenOptions::new();
    o.read(true).follow(FollowSymlinks::No).nonblock(true);
    let f = match d.open_with(name, &o) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{name} is not a regular file"),
        ));
    }
    let mut buf = Vec::new();
    f.take(MAX_READ).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Every recorded prompt of `session`, oldest first (lines that do not
/// parse are skipped).
pub(crate) fn load(us: &UserState, session: &str) -> io::Result<Vec<Prompt>> {
    let d = dir(us)?;
    let mut out = Vec::new();
    for name in [ROTATED, FILE] {
        let bytes = read_generation(&d, name)?;
        for line in bytes.split(|b| *b == b'\n') {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            if let (Some(sess), Some(at), Some(sha), Some(text)) =
                (s("session"), s("at"), s("sha256"), s("text"))
                && sess == session
            {
                out.push(Prompt {
                    at,
                    sha256: sha,
                    text,
                });
            }
        }
    }
    Ok(out)
}

/// The first recorded prompt that verifies `d`: same session (the caller
/// loaded only that session's prompts), seen no later than the decision was
/// recorded, carrying its text or its id. A decision without a time is
/// never verified.
pub(crate) fn verifying<'a>(prompts: &'a [Prompt], d: &UserDecision) -> Option<&'a Prompt> {
    let at = d.at.as_deref()?;
    prompts
        .iter()
        .find(|p| p.at.as_str() <= at && decisions::prompt_carries(&p.text, d))
}

/// The key of a verified decision in [`VERIFIED`].
pub(crate) fn verified_key(d: &UserDecision) -> String {
    format!("{}\t{}", witness::goal_key(&d.goal_id), d.sha256())
}

/// Whether `key` was already carried to the gate ledger.
pub(crate) fn already_carried(us: &UserState, key: &str) -> io::Result<bool> {
    let bytes = read_generation(&dir(us)?, VERIFIED)?;
    Ok(bytes.split(|b| *b == b'\n').any(|l| l == key.as_bytes()))
}

/// Notes `key` as carried to the gate ledger.
pub(crate) fn note_carried(us: &UserState, key: &str) -> io::Result<()> {
    let d = dir(us)?;
    let (mut file, created) = crate::store::open_append(&d, VERIFIED)?;
    let mut line = key.as_bytes().to_vec();
    line.push(b'\n');
    crate::store::append_synced(&d, &mut file, created, &line)
}

/// The witness of one prompt on its way to the disk ([`witness`]). Clones
/// share it: the engine waits for it before it writes anything that could
/// cite the prompt ([`crate::goals::Engine::before_next_write`]), and the
/// hook before it answers ([`Pending::settle`]).
#[derive(Clone, Default)]
pub(super) struct Pending(std::sync::Arc<std::sync::Mutex<Progress>>);

#[derive(Default)]
enum Progress {
    #[default]
    Settled,
    Running(crate::store::SyncPending, String),
    Failed(String, String),
}

impl Pending {
    /// Waits for the sync (once; later calls return at once).
    pub(super) fn wait(&self) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Progress::Running(p, path) = std::mem::take(&mut *s) {
            *s = match p.wait() {
                Ok(()) => Progress::Settled,
                Err(e) => Progress::Failed(path, e.to_string()),
            };
        }
    }

    /// Waits for the sync and reports a failure as [`witness`] does.
    pub(super) fn settle(&self, c: &super::Ctx<'_>) {
        self.wait();
        let s = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        if let Progress::Failed(path, error) = s {
            unrecorded(c, path, error);
        }
    }
}

/// Records the prompt of a `user-prompt-submit` event; a failure writes
/// `HOOK_STATE_IO` (the prompt is not recorded, so a decision it carries
/// stays unverified: the fault fails closed on its own). The record is
/// written here and synced on a thread: the caller settles it before it
/// answers, and an engine that may cite the prompt waits for it first.
pub(super) fn witness(c: &super::Ctx<'_>, prompt: &str) -> Pending {
    let Some(session) = c.env.session_id.as_deref() else {
        return Pending::default();
    };
    let at = crate::time::rfc3339_ms(std::time::SystemTime::now());
    let result = c
        .hook_state()
        .map_err(|f| (f.path, f.error))
        .and_then(|hs| {
            let us = hs.user();
            let path = display(us).display().to_string();
            record(us, session, &at, prompt)
                .map(|p| (p, path.clone()))
                .map_err(|e| (path, e.to_string()))
        });
    match result {
        Ok((p, path)) => Pending(std::sync::Arc::new(std::sync::Mutex::new(
            Progress::Running(p, path),
        ))),
        Err((path, error)) => {
            unrecorded(c, path, error);
            Pending::default()
        }
    }
}

fn unrecorded(c: &super::Ctx<'_>, path: String, error: String) {
    c.diag.write(
        HookCode::HookStateIo,
        "context",
        "the user prompt could not be recorded in the per-user witness; a user decision it carries cannot be verified",
        Some(json!({"path": path, "error": error})),
    );
}

/// The Stop hook's user-decision check (docs/threat-model.md#i12): every user
/// decision of the plan must be carried by a recorded user prompt of this
/// session made before the decision was recorded. A verified decision not
/// yet carried to the in-tree gate ledger gets its `user_decision_verified`
/// record (decision id, goal, decision and prompt SHA-256) there; an
/// unverified one resumes the agent with `USER_DECISION_UNVERIFIED`.
pub(super) fn check(
    c: &super::Ctx<'_>,
    p: &crate::goals::Profile,
    all: &[UserDecision],
) -> Option<Decision> {
    if all.is_empty() {
        return None;
    }
    let hs = match c.hook_state() {
        Ok(hs) => hs,
        Err(f) => {
            return Some(unverified(
                c,
                p,
                all,
                &format!(
                    "the per-user witness {} is unusable ({}: {}); fix: {}",
                    f.path, f.what, f.error, f.fix
                ),
            ));
        }
    };
    let us = hs.user();
    let prompts = match c.env.session_id.as_deref() {
        Some(s) => match load(us, s) {
            Ok(v) => v,
            Err(e) => {
                return Some(unverified(
                    c,
                    p,
                    all,
                    &format!(
                        "the user-prompt witness {} could not be read ({e}); fix: run `evidence-gate doctor --fix`",
                        display(us).display()
                    ),
                ));
            }
        },
        None => Vec::new(),
    };
    let mut open = Vec::new();
    for d in all {
        match verifying(&prompts, d) {
            None => open.push(d.clone()),
            Some(prompt) => {
                if let Err(e) = carry(c, us, d, prompt) {
                    c.diag.write(
                        HookCode::HookStateIo,
                        "block",
                        "a verified user decision could not be recorded in the gate ledger",
                        Some(json!({"goal": d.goal_id, "error": e.to_string()})),
                    );
                    open.push(d.clone());
                }
            }
        }
    }
    if open.is_empty() {
        return None;
    }
    Some(unverified(
        c,
        p,
        &open,
        "no recorded user prompt of this session carries it",
    ))
}

fn unverified(
    c: &super::Ctx<'_>,
    p: &crate::goals::Profile,
    open: &[UserDecision],
    why: &str,
) -> Decision {
    let first = &open[0];
    c.diag.write(
        HookCode::UserDecisionUnverified,
        "block",
        "a user decision in the plan was not seen in a user prompt; the goal is unfinished",
        Some(json!({
            "goals": open.iter().map(|d| d.goal_id.as_str()).collect::<Vec<_>>(),
            "decisionIds": open.iter().map(UserDecision::id).collect::<Vec<_>>(),
        })),
    );
    let ids: Vec<String> = open
        .iter()
        .map(|d| format!("{} ({})", super::clip_chars(&d.goal_id, 80), d.id()))
        .collect();
    let reason = format!(
        "evidence-gate: USER_DECISION_UNVERIFIED — the user decision recorded for goal {} (\"{}\", id {}) is not the user's: {why}. Only the user decides (waivers, supersedes and unblocks with --user-decision). The goal is unfinished: finish it, or ask the user; once the user answers in a prompt that quotes the decision or its id, record it again with `{} steer … --user-decision \"<the user's words>\"`. Unverified: {}.",
        super::clip_chars(&first.goal_id, 80),
        super::clip_chars(&decisions::normalize(&first.text), 200),
        first.id(),
        p.command_prefix,
        ids.join(", ")
    );
    Decision::Block {
        reason: crate::hooks::host::encode::cap_bytes(&reason, c.hooks.max_reason_bytes),
    }
}

/// Appends `user_decision_verified` to the gate-ledger witness and its
/// in-tree mirror under the gate lock, once per decision.
fn carry(c: &super::Ctx<'_>, us: &UserState, d: &UserDecision, prompt: &Prompt) -> io::Result<()> {
    let key = verified_key(d);
    if already_carried(us, &key)? {
        return Ok(());
    }
    // The gate ledger's authoritative copy is the per-user witness; the
    // in-tree ledger is its mirror (docs/threat-model.md#tm-3). Appending to the
    // mirror alone would be dropped as forged by the next reconcile.
    let fault =
        |f: witness::StateFault| io::Error::other(format!("{}: {}: {}", f.path, f.what, f.error));
    let hs = c.hook_state().map_err(fault)?;
    let opts = LockOptions {
        timeout: std::time::Duration::from_millis(c.hooks.lock_wait_ms),
        command: "hook stop".into(),
    };
    let lock = match MutationLock::acquire(hs.dir(), witness::LOCK, &opts) {
        Ok(l) => l,
        Err(LockError::Io(e)) => return Err(e),
        Err(other) => return Err(io::Error::other(format!("the gate lock: {other:?}"))),
    };
    let mut entry = Map::new();
    entry.insert(
        "kind".into(),
        json!(GateLedgerKind::UserDecisionVerified.as_str()),
    );
    entry.insert(
        "ts".into(),
        json!(crate::time::rfc3339_ms(std::time::SystemTime::now())),
    );
    entry.insert("host".into(), json!(c.env.host.name()));
    entry.insert("session_id".into(), json!(c.env.session_id));
    entry.insert("goalId".into(), json!(d.goal_id));
    entry.insert("decisionId".into(), json!(d.id()));
    entry.insert("decisionSha256".into(), json!(d.sha256()));
    entry.insert("promptSha256".into(), json!(prompt.sha256));
    entry.insert("promptAt".into(), json!(prompt.at));
    entry.insert("waiver".into(), json!(d.waiver));
    let mut base = Map::new();
    base.insert("ts".into(), entry["ts"].clone());
    base.insert("host".into(), json!(c.env.host.name()));
    base.insert("session_id".into(), json!(c.env.session_id));
    let appended = hs
        .reconcile(c.root, &base)
        .and_then(|_| hs.append(c.root, entry));
    let _ = lock.release();
    appended.map_err(fault)?;
    note_carried(us, &key)
}
