//! Reuse protection (docs/hook-contracts.md#h-3, docs/threat-model.md#i4): accepting a receipt
//! claims its *normalized* digest by exclusive create of
//! `receipts/<sha256>.json`, holding the `(session, agent)` it was accepted
//! for; the same normalized digest is accepted again only for the same
//! session and agent with the same turn (or a turn id absent on either side:
//! a re-fire of the same stop).
//!
//! The normalized digest ([`Normalized`]) folds what a copier would change
//! to look new without saying anything new: whitespace runs and line endings
//! (CRLF, CR, tabs, an added space), NUL and invisible format characters. A
//! payload's digest is taken over its canonical JSON (keys sorted, no
//! insignificant whitespace) without its `agent` binding, so re-binding a
//! copied payload to another agent does not make it new either.

use std::io::{self, Read};
use std::time::SystemTime;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, OpenOptions};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::evidence::{Code, Finding};
use crate::store::Durability;

/// Directory of claims inside the hooks' state directory.
pub const DIR: &str = "receipts";

/// Who accepted a receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimant {
    /// Session id.
    pub session_id: Option<String>,
    /// Agent id.
    pub agent_id: Option<String>,
    /// Agent type.
    pub agent_type: Option<String>,
    /// Turn id.
    pub turn_id: Option<String>,
}

impl Claimant {
    /// The claimant recorded in a claim file or a gate-ledger entry
    /// (`session_id`, `agent_id`, `agent_type`, `turn_id`).
    pub fn of(record: &Value) -> Claimant {
        let s = |k: &str| record.get(k).and_then(Value::as_str).map(str::to_owned);
        Claimant {
            session_id: s("session_id"),
            agent_id: s("agent_id"),
            agent_type: s("agent_type"),
            turn_id: s("turn_id"),
        }
    }

    /// Accepting the same digest again is a re-fire of the same stop, not
    /// reuse, for the same session and agent when the turns are equal or
    /// either is unknown (docs/hook-contracts.md#h-3). The one statement of that rule.
    pub fn same_stop(&self, other: &Claimant) -> bool {
        self.session_id == other.session_id
            && self.agent_id == other.agent_id
            && (self.turn_id.is_none() || other.turn_id.is_none() || self.turn_id == other.turn_id)
    }
}

/// The normalized digest of a text receipt, fed chunk by chunk.
#[derive(Debug, Default)]
pub struct Normalized {
    fold: crate::text::FoldStream,
    hasher: Sha256,
}

impl Normalized {
    /// A new digest.
    pub fn new() -> Normalized {
        Normalized::default()
    }

    /// Feeds raw file bytes.
    pub fn update(&mut self, chunk: &[u8]) {
        let hasher = &mut self.hasher;
        self.fold.update(chunk, &mut |b| hasher.update(b));
    }

    /// The lowercase hex digest of the folded text.
    pub fn finish(self) -> String {
        let Normalized { fold, mut hasher } = self;
        fold.finish(&mut |b| hasher.update(b));
        crate::digest::hex(&hasher.finalize())
    }
}

/// The normalized digest of a text.
pub fn normalized_text(bytes: &[u8]) -> String {
    let mut n = Normalized::new();
    n.update(bytes);
    n.finish()
}

/// The normalized digest of an evidence payload: its canonical JSON (object
/// keys sorted, no whitespace between tokens) without the top-level `agent`
/// binding, folded like a text.
pub fn normalized_payload(doc: &Value) -> String {
    let mut out = String::new();
    match doc {
        Value::Object(m) => {
            let mut m = m.clone();
            m.remove("agent");
            canonical(&Value::Object(m), &mut out);
        }
        other => canonical(other, &mut out),
    }
    normalized_text(out.as_bytes())
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn name(sha256: &str) -> String {
    format!("{sha256}.json")
}

/// Looks the digest up (one open by name). `Ok(Some(finding))` when it was
/// accepted for someone else.
pub fn check(state: &Dir, sha256: &str, path: &str, me: &Claimant) -> io::Result<Option<Finding>> {
    let dir = match state.open_dir(DIR) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let Some(prior) = read_claim(&dir, sha256)? else {
        return Ok(None);
    };
    let field = |k: &str| prior.get(k).and_then(Value::as_str).map(str::to_owned);
    if Claimant::of(&prior).same_stop(me) {
        return Ok(None);
    }
    let who = field("agent_type").unwrap_or_else(|| "another agent".into());
    let when = field("accepted_at").unwrap_or_else(|| "an earlier stop".into());
    Ok(Some(
        Finding::new(
            Code::ReceiptReused,
            Some(path),
            format!(
                "this receipt's content was already accepted for {who} at {when}; a receipt describes its own task"
            ),
        )
        .with_detail(json!({"sha256": sha256, "earlier_agent_type": field("agent_type"), "accepted_at": field("accepted_at")})),
    ))
}

/// The claim recorded for `sha256`, if one exists and is a JSON object. A
/// claim that is not (torn by a crash of an older build, or emptied) claims
/// nothing: reuse protection then rests on the next claim, which replaces it.
fn read_claim(dir: &Dir, sha256: &str) -> io::Result<Option<Value>> {
    let mut opts = OpenOptions::new();
    opts.read(true).follow(FollowSymlinks::No).nonblock(true);
    let mut f = match dir.open_with(name(sha256), &opts) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut buf = Vec::new();
    Read::by_ref(&mut f).take(64 * 1024).read_to_end(&mut buf)?;
    Ok(serde_json::from_slice::<Value>(&buf)
        .ok()
        .filter(Value::is_object))
}

/// Claims the digest: published whole (never torn) and synced. An existing
/// claim (a re-fire of the same stop) is left as it is; one that claims
/// nothing is replaced.
pub fn claim(state: &Dir, sha256: &str, path: &str, me: &Claimant) -> io::Result<()> {
    let rel = crate::sandbox::RelPath::parse(DIR, crate::sandbox::PathLimits::default())
        .expect("constant");
    let dir = crate::store::create_dirs(state, &rel)?;
    let record = json!({
        "session_id": me.session_id,
        "agent_id": me.agent_id,
        "agent_type": me.agent_type,
        "turn_id": me.turn_id,
        "path": path,
        "accepted_at": crate::time::rfc3339_ms(SystemTime::now()),
    });
    let bytes = record.to_string();
    if crate::store::create_exclusive(&dir, &name(sha256), bytes.as_bytes())?
        || read_claim(&dir, sha256)?.is_some()
    {
        return Ok(());
    }
    crate::store::atomic_replace(&dir, &name(sha256), bytes.as_bytes(), Durability::Synced)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn who(agent: &str, turn: Option<&str>) -> Claimant {
        Claimant {
            session_id: Some("s".into()),
            agent_id: Some(agent.into()),
            agent_type: Some("lazycodex-worker-low".into()),
            turn_id: turn.map(str::to_owned),
        }
    }

    #[test]
    fn copies_that_only_change_spacing_share_the_normalized_digest() {
        let a = normalized_text(b"Changed src/a.rs; ran cargo test: 12 passed.\n");
        for copy in [
            &b"Changed src/a.rs;  ran cargo test: 12 passed.\n"[..],
            b"Changed src/a.rs; ran cargo test: 12 passed.\r\n",
            b"  Changed\tsrc/a.rs;\r\nran cargo test: 12 passed.",
            b"Changed src/a.rs;\xe2\x80\x8b ran cargo test: 12 passed.\0\n",
        ] {
            assert_eq!(
                normalized_text(copy),
                a,
                "{}",
                String::from_utf8_lossy(copy)
            );
        }
        assert_ne!(
            normalized_text(b"Changed src/b.rs; ran cargo test: 12 passed.\n"),
            a,
            "different words are a different receipt"
        );
        let p: Value = serde_json::from_str(
            r#"{"evidence":1,"summary":"Did it.","agent":{"id":"a1"},"deliverables":[{"path":"x"}]}"#,
        )
        .unwrap();
        let q: Value = serde_json::from_str(
            "{ \"deliverables\" : [ {\"path\":\"x\"} ],\r\n \"agent\":{\"id\":\"b2\"},\"summary\":\"Did  it.\",\"evidence\":1}",
        )
        .unwrap();
        assert_eq!(normalized_payload(&p), normalized_payload(&q));
        let r: Value = serde_json::from_str(
            r#"{"evidence":1,"summary":"Did it.","deliverables":[{"path":"y"}]}"#,
        )
        .unwrap();
        assert_ne!(normalized_payload(&p), normalized_payload(&r));
    }

    #[test]
    fn same_agent_passes_other_agent_or_turn_is_reuse() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let sha = "ab".repeat(32);
        assert!(
            check(&dir, &sha, "p", &who("a", Some("t1")))
                .unwrap()
                .is_none()
        );
        claim(&dir, &sha, "p", &who("a", Some("t1"))).unwrap();
        claim(&dir, &sha, "p", &who("a", Some("t1"))).unwrap();
        assert!(
            check(&dir, &sha, "p", &who("a", Some("t1")))
                .unwrap()
                .is_none()
        );
        assert!(check(&dir, &sha, "p", &who("a", None)).unwrap().is_none());
        let f = check(&dir, &sha, "p", &who("a", Some("t2")))
            .unwrap()
            .unwrap();
        assert_eq!(f.code, Code::ReceiptReused);
        let f = check(&dir, &sha, "p", &who("b", Some("t1")))
            .unwrap()
            .unwrap();
        assert!(f.message.contains("lazycodex-worker-low"));
    }
}
