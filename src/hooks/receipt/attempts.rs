//! The attempt counter (docs/hook-contracts.md#h-3), keyed by session and agent.

use std::io::{self, Read};
use std::time::{Duration, SystemTime};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, OpenOptions};
use serde_json::{Value, json};

use crate::digest::sha256_hex;
use crate::evidence::Finding;
use crate::store::{self, Durability};

/// Directory of counters inside the hooks' state directory.
pub const DIR: &str = "attempts";

/// `<s>--<a>--<h>.json`: the ids reduced to `[A-Za-z0-9._-]` and cut to 40
/// characters, plus 12 hex digits of SHA-256(session NUL agent) that keep
/// apart ids reducing to the same text.
pub fn file_name(session_id: Option<&str>, agent_id: Option<&str>) -> String {
    let reduce = |s: Option<&str>| {
        let r: String = s
            .unwrap_or("-")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            .take(40)
            .collect();
        let r = r.trim_start_matches('.').to_owned();
        if r.is_empty() { "-".to_owned() } else { r }
    };
    let mut raw = session_id.unwrap_or("").as_bytes().to_vec();
    raw.push(0);
    raw.extend_from_slice(agent_id.unwrap_or("").as_bytes());
    let h = &sha256_hex(&raw)[..12];
    format!("{}--{}--{h}.json", reduce(session_id), reduce(agent_id))
}

/// Blocks already issued; unreadable, foreign or expired counters are 0.
pub fn read(state: &Dir, name: &str, ttl: Duration) -> u64 {
    let Ok(dir) = state.open_dir(DIR) else {
        return 0;
    };
    let mut opts = OpenOptions::new();
    opts.read(true).follow(FollowSymlinks::No).nonblock(true);
    let Ok(mut f) = dir.open_with(name, &opts) else {
        return 0;
    };
    let mut buf = Vec::new();
    if Read::by_ref(&mut f)
        .take(64 * 1024)
        .read_to_end(&mut buf)
        .is_err()
    {
        return 0;
    }
    let Ok(v) = serde_json::from_slice::<Value>(&buf) else {
        return 0;
    };
    let fresh = v
        .get("updated_at")
        .and_then(Value::as_str)
        .and_then(crate::time::parse_rfc3339)
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age <= ttl);
    if v.get("v") != Some(&json!(1)) || !fresh {
        return 0;
    }
    v.get("count").and_then(Value::as_u64).unwrap_or(0)
}

/// Identity written into the counter.
pub struct Owner<'a> {
    /// Session id.
    pub session_id: Option<&'a str>,
    /// Agent id.
    pub agent_id: Option<&'a str>,
    /// Agent type.
    pub agent_type: Option<&'a str>,
}

/// Writes the counter durably (a block is emitted only after this).
pub fn write(
    state: &Dir,
    name: &str,
    owner: &Owner<'_>,
    count: u64,
    findings: &[Finding],
) -> io::Result<()> {
    let rel = crate::sandbox::RelPath::parse(DIR, crate::sandbox::PathLimits::default())
        .expect("constant");
    let dir = store::create_dirs(state, &rel)?;
    let codes: Vec<&str> = findings.iter().map(|f| f.code.name()).collect();
    let v = json!({
        "v": 1,
        "session_id": owner.session_id,
        "agent_id": owner.agent_id,
        "agent_type": owner.agent_type,
        "count": count,
        "last_findings": codes,
        "updated_at": crate::time::rfc3339_ms(SystemTime::now()),
    });
    store::atomic_replace(&dir, name, v.to_string().as_bytes(), Durability::Synced)
}

/// Deletes the counter; a missing one is fine.
pub fn clear(state: &Dir, name: &str) -> io::Result<()> {
    let dir = match state.open_dir(DIR) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    match dir.remove_file(name) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_confined_and_distinct() {
        let a = file_name(Some("../../etc"), Some("a/b"));
        assert!(!a.contains('/'));
        assert!(a.starts_with("etc--ab--"));
        assert_ne!(file_name(Some("a/b"), None), file_name(Some("ab"), None));
        assert!(file_name(None, None).starts_with("---"));
        assert_eq!(
            file_name(Some(&"x".repeat(100)), Some("y")).len(),
            40 + 2 + 1 + 2 + 12 + 5
        );
    }
}
