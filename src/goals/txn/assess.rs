//! The recovery check's comparison of a plan with its ledger (docs/engine.md
//! docs/state-formats.md#ge-2), shared by mutations, `status` and `repair --check`.

use cap_std::fs::Dir;
use serde_json::{Map, Value};

use crate::goals::journal::{self, Head, LedgerKind};
use crate::goals::plan::Plan;
use crate::goals::state;

/// Plan/ledger agreement (docs/state-formats.md#ge-2, reported by `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consistency {
    /// Plan revision equals the ledger's and nothing is missing.
    Ok,
    /// The ledger can be completed from the plan's `lastMutation` (or has a torn tail).
    Recoverable,
    /// Unrecoverable divergence.
    Mismatch,
}

impl Consistency {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Consistency::Ok => "ok",
            Consistency::Recoverable => "recoverable",
            Consistency::Mismatch => "mismatch",
        }
    }
}

/// The comparison of a plan with its ledger.
#[derive(Debug, Clone)]
pub struct Assessment {
    /// The verdict.
    pub consistency: Consistency,
    /// Entries of `lastMutation` that never reached the ledger.
    pub missing: Vec<Map<String, Value>>,
    /// Plan revision.
    pub plan_revision: u64,
    /// Revision of the last chained ledger record.
    pub ledger_revision: u64,
    /// Last chained seq.
    pub last_seq: u64,
}

/// Compares plan and ledger. `landed(revision, from_seq, want)` counts the
/// `lastMutation` entries present in the ledger (a backwards read of the
/// records since `from_seq`, which may stop once `want` are found).
pub(crate) fn assess(
    plan: Option<&Plan>,
    head: &Head,
    torn: bool,
    landed: &mut dyn FnMut(u64, u64, usize) -> usize,
) -> Assessment {
    let rp = plan.map_or(0, Plan::revision);
    let rl = head.last_revision;
    let mut out = Assessment {
        consistency: Consistency::Ok,
        missing: Vec::new(),
        plan_revision: rp,
        ledger_revision: rl,
        last_seq: head.last_seq,
    };
    let lm = plan.and_then(Plan::last_mutation);
    let missing_of = |entries: &Vec<Value>, k: usize| -> Vec<Map<String, Value>> {
        entries
            .iter()
            .skip(k)
            .filter_map(|e| e.as_object().cloned())
            .collect()
    };
    if rp == rl {
        // The seq arithmetic of docs/state-formats.md#ge-2 (`Ls < fromSeq + n - 1`) misses a cut
        // made after a repair entry shifted the seqs, so the landed entries
        // are counted whenever the plan's last mutation is the current one.
        if let Some((lrev, from, entries)) = lm
            && lrev == rp
            && !entries.is_empty()
        {
            let k = landed(rp, from, entries.len());
            if k < entries.len() {
                out.consistency = Consistency::Recoverable;
                out.missing = missing_of(entries, k);
            }
        }
    } else if let Some((lrev, from, entries)) = lm
        && rp == rl + 1
        && lrev == rp
    {
        let k = landed(rp, from, entries.len());
        out.consistency = Consistency::Recoverable;
        out.missing = missing_of(entries, k);
    } else {
        out.consistency = Consistency::Mismatch;
    }
    if torn && out.consistency == Consistency::Ok {
        out.consistency = Consistency::Recoverable;
    }
    out
}

/// Counts records with `seq ≥ from_seq` and `revision == rev`, reading the
/// ledger backwards, and stops once `want` are found: ledger-only appends
/// (steering annotations, hook records) share the plan's revision, so
/// without the stop every command after many annotations would read all of
/// them. Records of that revision after the mutation's entries are only
/// written once those entries landed (the recovery check completes them
/// first), so the early count answers as the full one would. The recovery
/// check's own `ledger_repaired` markers (they carry
/// `repair.recoveredCount`) share the revision but are not entries of
/// `lastMutation`; the entry `repair --accept-plan` commits is, so it counts.
pub(crate) fn count_landed(dir: &Dir, head: &Head, rev: u64, from_seq: u64, want: usize) -> usize {
    count_landed_in(dir, state::LEDGER, head, rev, from_seq, want, u64::MAX)
}

/// [`count_landed`] in the ledger file `name`, reading at most the
/// `budget` bytes before the head's end (records further back count as not
/// landed).
pub(crate) fn count_landed_in(
    dir: &Dir,
    name: &str,
    head: &Head,
    rev: u64,
    from_seq: u64,
    want: usize,
    budget: u64,
) -> usize {
    let Ok(Some((mut file, _))) = state::open_file(dir, name, name) else {
        return 0;
    };
    let mut n = 0;
    let _ = journal::read_back_within(&mut file, head.len, budget, |_, line| {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return true;
        };
        let Some((seq, _)) = crate::ledger::chain_fields(&v) else {
            return true;
        };
        if seq < from_seq {
            return false;
        }
        if v.get("revision").and_then(Value::as_u64) == Some(rev) && !is_recovery_marker(&v) {
            n += 1;
        }
        n < want
    });
    n
}

/// Whether a ledger record is a marker the recovery check appended itself
/// (`ledger_repaired` with `repair.recoveredCount`), as opposed to an entry
/// of a plan's `lastMutation` such as the one `repair --accept-plan` writes.
pub(crate) fn is_recovery_marker(v: &Value) -> bool {
    v.get("kind").and_then(Value::as_str) == Some(LedgerKind::LedgerRepaired.as_str())
        && v.pointer("/repair/recoveredCount").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(rev: u64, lm: Option<(u64, u64, usize)>) -> Plan {
        let mut doc = json!({"version": 1, "goals": [], "revision": rev});
        if let Some((r, from, n)) = lm {
            let entries: Vec<Value> = (0..n).map(|i| json!({"kind": "k", "i": i})).collect();
            doc["lastMutation"] = json!({"revision": r, "fromSeq": from, "entries": entries});
        }
        Plan::from_doc(doc.as_object().unwrap().clone())
    }

    fn head(seq: u64, rev: u64) -> Head {
        Head {
            last_seq: seq,
            last_revision: rev,
            ..Head::default()
        }
    }

    #[test]
    fn verdicts() {
        let none = &mut |_: u64, _: u64, _: usize| 0;
        assert_eq!(
            assess(None, &Head::default(), false, none).consistency,
            Consistency::Ok
        );
        let p = plan(3, Some((3, 5, 2)));
        let all = &mut |_: u64, _: u64, _: usize| 2;
        assert_eq!(
            assess(Some(&p), &head(6, 3), false, all).consistency,
            Consistency::Ok
        );
        let one = &mut |_: u64, _: u64, _: usize| 1;
        let a = assess(Some(&p), &head(5, 3), false, one);
        assert_eq!(a.consistency, Consistency::Recoverable);
        assert_eq!(a.missing.len(), 1);
        assert_eq!(a.missing[0]["i"], 1);
        let a = assess(Some(&p), &head(4, 2), false, none);
        assert_eq!(a.consistency, Consistency::Recoverable);
        assert_eq!(a.missing.len(), 2);
        assert_eq!(
            assess(Some(&p), &head(4, 1), false, none).consistency,
            Consistency::Mismatch
        );
        assert_eq!(
            assess(Some(&plan(2, None)), &head(4, 1), false, none).consistency,
            Consistency::Mismatch
        );
        assert_eq!(
            assess(
                Some(&plan(1, Some((1, 1, 1)))),
                &Head::default(),
                false,
                none
            )
            .consistency,
            Consistency::Recoverable
        );
        assert_eq!(
            assess(Some(&plan(0, None)), &Head::default(), true, none).consistency,
            Consistency::Recoverable,
            "a torn tail alone is recoverable"
        );
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod landed_tests {
    use super::*;
    use serde_json::json;

    fn entry(kind: &str, rev: u64) -> Map<String, Value> {
        json!({"kind": kind, "revision": rev})
            .as_object()
            .unwrap()
            .clone()
    }

    /// Annotations after a mutation share its revision: the count stops at
    /// the number wanted instead of reading every one of them, and still
    /// tells a missing mutation from a landed one.
    #[test]
    fn count_stops_once_the_wanted_entries_are_found() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let mut entries = vec![entry("plan_created", 1), entry("a", 2), entry("b", 2)];
        entries.extend((0..1000).map(|_| entry("steering_annotated", 2)));
        let (bytes, _) = crate::ledger::chain_records(0, None, &entries);
        dir.write(state::LEDGER, &bytes).unwrap();
        let head = Head {
            len: bytes.len() as u64,
            last_seq: entries.len() as u64,
            last_revision: 2,
            ..Head::default()
        };
        assert_eq!(count_landed(&dir, &head, 2, 2, 2), 2);
        assert_eq!(count_landed(&dir, &head, 2, 2, usize::MAX), 1002);
        // A mutation whose entries never landed (revision 3 from seq 1004).
        assert_eq!(count_landed(&dir, &head, 3, 1004, 2), 0);
    }
}
