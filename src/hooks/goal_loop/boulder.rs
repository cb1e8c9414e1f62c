//! Other continuation owners (docs/hook-contracts.md#h-4): the start-work continuation
//! ("boulder") keeps a session going by itself. Its state lives in the
//! workspace, where the agent can write it, so a claim found here never
//! silences a resume (docs/threat-model.md#i5); the Stop hook only reports it
//! (`STOP_DEFER_UNVERIFIED`). Any read or parse problem means "no claim".

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Ctx;
use crate::hooks::{io_report, transcript};
use crate::rules::goal_loop::{DeferKind, DeferOwner};
use crate::sandbox::{PathLimits, RelPath, open};

/// The file of the first continuation owner that claims this session.
pub(super) fn claimant(c: &Ctx<'_>) -> Option<String> {
    let sid = c.env.session_id.as_deref()?;
    c.policy
        .stop()
        .defer_owners
        .iter()
        .find(|o| match o.kind {
            DeferKind::Boulder => boulder(c, o, sid),
        })
        .map(|o| o.file.clone())
}

fn boulder(c: &Ctx<'_>, o: &DeferOwner, sid: &str) -> bool {
    let Ok(rel) = RelPath::parse(&o.file, PathLimits::default()) else {
        return false;
    };
    let Ok((file, meta)) = open::open_leaf(c.root, &rel) else {
        return false;
    };
    if !meta.is_file() || meta.len() > o.max_bytes {
        return false;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    if file.take(o.max_bytes).read_to_end(&mut bytes).is_err() {
        return false;
    }
    let Ok(doc @ Value::Object(_)) = serde_json::from_slice::<Value>(&bytes) else {
        return false;
    };
    works(&doc).into_iter().any(|e| entry_claims(c, o, e, sid))
}

/// The works a boulder file records: the values of its `works` object, or —
/// the flat legacy shape without `works` — the document itself, one work
/// (as the Node hook reads it, docs/differences.md#r-8).
fn works(doc: &Value) -> Vec<&Value> {
    match doc.get("works") {
        Some(Value::Object(works)) => works.values().collect(),
        Some(Value::Array(works)) => works.iter().collect(),
        Some(_) => Vec::new(),
        None => vec![doc],
    }
}

fn entry_claims(c: &Ctx<'_>, o: &DeferOwner, e: &Value, sid: &str) -> bool {
    let status = e.get("status").and_then(Value::as_str);
    if !matches!(status, Some("active" | "paused")) {
        return false;
    }
    let claims_session = e
        .get("session_ids")
        .and_then(Value::as_array)
        .is_some_and(|ids| {
            ids.iter().filter_map(Value::as_str).any(|id| {
                o.session_prefixes
                    .iter()
                    .any(|p| id.strip_prefix(p.as_str()) == Some(sid))
            })
        });
    if !claims_session {
        return false;
    }
    let Some(plan) = e
        .get("active_plan")
        .and_then(Value::as_str)
        .filter(|p| !p.trim().is_empty())
    else {
        return false;
    };
    let worktree = e
        .get("worktree_path")
        .and_then(Value::as_str)
        .filter(|w| !w.trim().is_empty());
    candidates(plan, worktree, &c.env.cwd)
        .iter()
        .find_map(|p| read_head(c, p, o.plan_scan_bytes))
        .is_some_and(|head| has_checklist_line(&head))
}

/// The active plan's possible locations: absolute as given, else relative to
/// the worktree, then to `cwd`.
fn candidates(plan: &str, worktree: Option<&str>, cwd: &Path) -> Vec<PathBuf> {
    let p = Path::new(plan);
    if p.is_absolute() {
        return vec![p.to_path_buf()];
    }
    let mut out = Vec::new();
    if let Some(w) = worktree {
        let w = Path::new(w);
        out.push(if w.is_absolute() {
            w.join(p)
        } else {
            cwd.join(w).join(p)
        });
    }
    out.push(cwd.join(p));
    out
}

fn read_head(c: &Ctx<'_>, path: &Path, max: u64) -> Option<Vec<u8>> {
    let (file, _) = transcript::open_transcript(c.amb, path)?;
    let mut buf = Vec::new();
    file.take(max).read_to_end(&mut buf).ok()?;
    io_report::note_read("boulder-plan", path, buf.len() as u64);
    Some(buf)
}

/// A markdown task-list item, checked or not (even an all-checked plan
/// counts: the owner decides when it is finished).
fn has_checklist_line(head: &[u8]) -> bool {
    head.split(|b| *b == b'\n').any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        line.starts_with(b"- [ ] ") || line.starts_with(b"- [x] ") || line.starts_with(b"- [X] ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_file_is_one_work_and_works_is_a_map_of_them() {
        let flat = serde_json::json!({"status": "active", "session_ids": ["codex:s"], "active_plan": "p.md"});
        assert_eq!(works(&flat), [&flat]);
        let map =
            serde_json::json!({"works": {"a": {"status": "active"}, "b": {"status": "done"}}});
        assert_eq!(works(&map).len(), 2);
        // A map of works without the `works` key is one work that lacks
        // every field, so it claims nothing.
        let keyed = serde_json::json!({"w1": {"status": "active"}});
        assert_eq!(works(&keyed), [&keyed]);
        assert!(works(&serde_json::json!({"works": []})).is_empty());
    }

    #[test]
    fn checklist_lines_and_locations() {
        assert!(has_checklist_line(b"# Plan\n- [x] done\n"));
        assert!(has_checklist_line(b"- [ ] first\r\n"));
        assert!(!has_checklist_line(b"- [ ]no space\n * [ ] star\n"));
        let cwd = Path::new("/repo");
        assert_eq!(
            candidates("p.md", Some("/wt"), cwd),
            [PathBuf::from("/wt/p.md"), PathBuf::from("/repo/p.md")]
        );
        assert_eq!(
            candidates("/abs.md", Some("/wt"), cwd),
            [PathBuf::from("/abs.md")]
        );
    }
}
