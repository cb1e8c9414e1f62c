//! The hook gate ledger `.omo/evidence-gate/ledger.jsonl` (docs/hook-contracts.md#h-3):
//! hash-chained with [`crate::ledger`], continued from its tail (never a
//! whole-file read), appended with one synced write under the gate lock.

use std::io;

use cap_std::fs::Dir;
use serde_json::{Map, Value};

use crate::ledger::{chain_records, read_tail, record_hash};
use crate::store;

/// File name inside the hooks' state directory.
pub const FILE: &str = "ledger.jsonl";

crate::wire::wire_enum!(
    /// The `kind` of a gate-ledger entry: the one list the hooks write and
    /// the audit (`verify-evidence`) reads, so that no kind can be written
    /// under a spelling the audit does not recognise.
    pub(crate) GateLedgerKind {
        ReceiptAccepted = "receipt_accepted",
        ReceiptWaived = "receipt_waived",
        ReceiptOverride = "receipt_override",
        GateLedgerRewound = "gate_ledger_rewound",
        GateLedgerForged = "gate_ledger_forged",
        UserDecisionVerified = "user_decision_verified",
    }
);

/// How far back the tail scan may read to find the last chained record.
const MAX_SCAN: u64 = 256 * 1024;

/// Appends one entry (the caller holds the gate lock). Returns its `seq`.
pub(crate) fn append(state: &Dir, entry: Map<String, Value>) -> io::Result<u64> {
    append_bytes(state, entry).map(|(seq, _)| seq)
}

/// [`append`], also returning the exact bytes written (the witness's mirror
/// receives the same bytes).
pub(crate) fn append_bytes(state: &Dir, entry: Map<String, Value>) -> io::Result<(u64, Vec<u8>)> {
    let (mut file, created) = store::open_append(state, FILE)?;
    let tail = read_tail(&mut file, MAX_SCAN)?;
    let mut bytes = Vec::new();
    let mut last_hash = tail.last_record_hash.clone();
    if !tail.trailing.is_empty() {
        // A torn trailing write becomes its own (invalid) line, so that
        // `verify-evidence` reports it and our record stays parseable.
        bytes.push(b'\n');
        last_hash = Some(record_hash(&tail.trailing));
    }
    let (records, chained) = chain_records(
        tail.last_seq.unwrap_or(0),
        last_hash.as_deref(),
        std::slice::from_ref(&entry),
    );
    bytes.extend_from_slice(&records);
    store::append_synced(state, &mut file, created, &bytes)?;
    Ok((chained[0].seq, bytes))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::ledger::{ForeignSeverity, verify_chain};

    #[test]
    fn every_kind_round_trips() {
        for &k in GateLedgerKind::ALL {
            assert_eq!(GateLedgerKind::parse(k.as_str()), Some(k));
        }
        let names: std::collections::HashSet<_> = GateLedgerKind::names().into_iter().collect();
        assert_eq!(names.len(), GateLedgerKind::ALL.len());
        assert_eq!(GateLedgerKind::parse("receipt_accept"), None);
    }

    #[test]
    fn appends_chain_and_survive_a_torn_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let e: Map<String, Value> = serde_json::from_str(r#"{"kind":"receipt_accepted"}"#).unwrap();
        assert_eq!(append(&dir, e.clone()).unwrap(), 1);
        assert_eq!(append(&dir, e.clone()).unwrap(), 2);
        let bytes = dir.read(FILE).unwrap();
        let rep = verify_chain(&mut &bytes[..], ForeignSeverity::Error, &mut |_, _| {}).unwrap();
        assert!(rep.findings.is_empty(), "{:?}", rep.findings);
        assert_eq!(rep.last_seq, Some(2));
        let mut torn = bytes.clone();
        torn.extend_from_slice(b"{\"kind\":\"torn");
        dir.write(FILE, &torn).unwrap();
        assert_eq!(append(&dir, e).unwrap(), 3);
        let text = String::from_utf8(dir.read(FILE).unwrap()).unwrap();
        assert!(text.ends_with("}\n"));
        assert_eq!(text.lines().count(), 4);
    }
}
