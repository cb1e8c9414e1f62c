//! Steering dedupe through the hashed key table `.ledger.keyhash`
//! (goal-engine.md §2.6, §5.7): a hit is believed only when the ledger
//! record it points to carries the key; a table or key file the agent
//! planted or damaged never turns a fresh key into a duplicate, and a
//! replay that slipped through an emptied table is caught by the audit.

use serde_json::Value;

use crate::ci_support::{audit, findings};
use crate::goals_support::*;

fn note(repo: &Repo, key: &str) -> Value {
    let r = steer(
        repo,
        &["--kind", "annotate_ledger", "--idempotency-key", key],
    );
    expect_ok(&r)
}

fn key_lines(repo: &Repo) -> Vec<Value> {
    std::fs::read_to_string(state(repo, ".ledger.keys"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn accepted_under(repo: &Repo, key: &str) -> usize {
    ledger(repo)
        .iter()
        .filter(|e| e["kind"] == "steering_accepted" && e["idempotencyKey"] == key)
        .count()
}

/// Appends `line` to `.ledger.keys` and makes `.ledger.idx` vouch for it,
/// as an agent editing the caches would.
fn plant_key_line(repo: &Repo, line: &Value) {
    let keys = state(repo, ".ledger.keys");
    let mut bytes = std::fs::read(&keys).unwrap();
    bytes.extend_from_slice(line.to_string().as_bytes());
    bytes.push(b'\n');
    std::fs::write(&keys, &bytes).unwrap();
    let idx = state(repo, ".ledger.idx");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&idx).unwrap()).unwrap();
    doc["keysBytes"] = bytes.len().into();
    std::fs::write(&idx, doc.to_string()).unwrap();
}

#[test]
fn a_planted_key_line_does_not_make_a_fresh_key_a_duplicate() {
    let repo = repo_with_plan("- a\n- b\n");
    note(&repo, "note-1");
    assert!(state(&repo, ".ledger.keyhash").is_file());
    // A legacy-shaped line (no digest) for a key never used, pointing at the
    // real entry of `note-1`: matched by kind and targets, it would dedupe.
    let mut planted = key_lines(&repo)[0].clone();
    planted["k"] = "k:fresh".into();
    planted["d"] = Value::Null;
    let planted_offset = planted["o"].clone();
    plant_key_line(&repo, &planted);
    let v = note(&repo, "fresh");
    assert_ne!(v["deduped"], true, "{v}");
    assert_eq!(accepted_under(&repo, "fresh"), 1);
    // The key index was rebuilt from the ledger: `fresh` now points at its
    // own entry.
    let fresh: Vec<Value> = key_lines(&repo)
        .into_iter()
        .filter(|l| l["k"] == "k:fresh")
        .collect();
    assert_eq!(fresh.len(), 1, "{fresh:?}");
    assert_ne!(fresh[0]["o"], planted_offset);
}

#[test]
fn replays_are_deduped_through_the_table_and_after_it_is_lost_or_damaged() {
    let repo = repo_with_plan("- a\n- b\n");
    for i in 0..5 {
        note(&repo, &format!("note-{i}"));
    }
    let v = note(&repo, "note-3");
    assert_eq!(v["deduped"], true, "{v}");
    // Lost: rebuilt from `.ledger.keys`.
    std::fs::remove_file(state(&repo, ".ledger.keyhash")).unwrap();
    let v = note(&repo, "note-1");
    assert_eq!(v["deduped"], true, "{v}");
    assert!(state(&repo, ".ledger.keyhash").is_file());
    // Garbage of the right size, and a symlink: rebuilt, never followed.
    let table = state(&repo, ".ledger.keyhash");
    let len = std::fs::metadata(&table).unwrap().len() as usize;
    std::fs::write(&table, vec![0xA5u8; len]).unwrap();
    let v = note(&repo, "note-4");
    assert_eq!(v["deduped"], true, "{v}");
    std::fs::remove_file(&table).unwrap();
    #[cfg(unix)]
    {
        let outside = repo.join("outside.bin");
        std::fs::write(&outside, b"not a table").unwrap();
        std::os::unix::fs::symlink(&outside, &table).unwrap();
        let v = note(&repo, "note-0");
        assert_eq!(v["deduped"], true, "{v}");
        assert_eq!(std::fs::read(&outside).unwrap(), b"not a table");
    }
    // A fresh key is still new.
    let v = note(&repo, "note-9");
    assert_ne!(v["deduped"], true, "{v}");
    for i in [0, 1, 3, 4, 9] {
        assert_eq!(accepted_under(&repo, &format!("note-{i}")), 1, "note-{i}");
    }
}

#[test]
fn a_replay_let_through_by_an_emptied_table_is_caught_by_the_audit() {
    let repo = repo_with_plan("- a\n- b\n");
    note(&repo, "note-1");
    let honest = audit(&repo, &[]);
    assert!(
        !honest
            .codes()
            .contains(&"STEERING_KEY_REACCEPTED".to_owned()),
        "{}",
        honest.stdout
    );
    // Keep the header (it still covers the key bytes), empty every slot.
    let table = state(&repo, ".ledger.keyhash");
    let mut bytes = std::fs::read(&table).unwrap();
    for b in &mut bytes[32..] {
        *b = 0;
    }
    std::fs::write(&table, &bytes).unwrap();
    note(&repo, "note-1");
    assert_eq!(accepted_under(&repo, "note-1"), 2);
    let out = audit(&repo, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let f = findings(&out);
    let hit: Vec<_> = f
        .iter()
        .filter(|x| x.0 == "STEERING_KEY_REACCEPTED")
        .collect();
    assert_eq!(hit.len(), 1, "{f:?}");
    assert_eq!(hit[0].3["key"], "k:note-1");
}
