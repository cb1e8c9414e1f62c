//! Full chain verification (docs/state-formats.md#ge-2), streaming line by line.

use std::io::{self, BufRead};

use serde_json::{Value, json};

use super::{ZERO_HASH, chain_fields, is_record, record_hash};
use crate::evidence::{Code, Finding, Severity};

/// Severity of unchained records after the chain start (a rules value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForeignSeverity {
    /// `LEDGER_FOREIGN_RECORD` fails verification.
    Error,
    /// It is reported as a warning.
    Warning,
}

/// One problem found in a ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainFinding {
    /// The finding (code, severity, message).
    pub finding: Finding,
    /// 1-based physical line number, when the finding is about a line.
    pub line: Option<u64>,
    /// `seq` of the record, when it has one.
    pub seq: Option<u64>,
}

/// What verification saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChainReport {
    /// Every finding, in file order.
    pub findings: Vec<ChainFinding>,
    /// Number of records.
    pub records: u64,
    /// Number of chained records.
    pub chained: u64,
    /// `seq` of the last chained record.
    pub last_seq: Option<u64>,
    /// `revision` of the last chained record.
    pub last_revision: Option<u64>,
    /// Hash of the last complete record.
    pub head: Option<String>,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Verifies every record of a ledger; `visit` sees each parsed record with its
/// line number (callers collect `files` arrays, kinds, completion entries).
pub fn verify_chain(
    r: &mut dyn BufRead,
    foreign: ForeignSeverity,
    visit: &mut dyn FnMut(u64, &Value),
) -> io::Result<ChainReport> {
    let mut rep = ChainReport::default();
    let mut line_no = 0u64;
    let mut prev_hash: Option<String> = None;
    let mut chain_started = false;
    let mut last_chained_seq: Option<u64> = None;
    let mut max_revision: Option<u64> = None;
    let mut legacy_before = 0u64;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        rep.bytes += n as u64;
        line_no += 1;
        let terminated = buf.last() == Some(&b'\n');
        let line = if terminated {
            &buf[..buf.len() - 1]
        } else {
            &buf[..]
        };
        if !is_record(line) {
            continue;
        }
        if !terminated {
            let parsed: Option<Value> = serde_json::from_slice(line).ok();
            let (code, msg) = if parsed.as_ref().is_some_and(Value::is_object) {
                (
                    Code::LedgerUnterminated,
                    "the last record is not terminated by a newline",
                )
            } else {
                (
                    Code::LedgerTornTail,
                    "bytes after the last newline are not a JSON object (torn write)",
                )
            };
            rep.findings.push(ChainFinding {
                finding: Finding::new(code, None, format!("line {line_no}: {msg}"))
                    .with_detail(json!({"line": line_no, "bytes": line.len()})),
                line: Some(line_no),
                seq: None,
            });
            if code == Code::LedgerTornTail {
                break;
            }
        }
        rep.records += 1;
        let hash = record_hash(line);
        let value: Option<Value> = serde_json::from_slice(line).ok().filter(Value::is_object);
        match &value {
            None => rep.findings.push(ChainFinding {
                finding: Finding::new(
                    Code::LedgerRecordInvalid,
                    None,
                    format!("line {line_no}: the record is not a JSON object"),
                )
                .with_detail(json!({"line": line_no})),
                line: Some(line_no),
                seq: None,
            }),
            Some(v) => {
                if let Some((seq, prev)) = chain_fields(v) {
                    rep.chained += 1;
                    if !chain_started && legacy_before > 0 {
                        rep.findings.push(ChainFinding {
                            finding: Finding::new(
                                Code::LedgerLegacyPrefix,
                                None,
                                format!("lines before {line_no}: {legacy_before} unchained legacy record(s) precede the chain start; the chain does not cover them"),
                            )
                            .with_detail(json!({"records": legacy_before, "firstChainedLine": line_no})),
                            line: None,
                            seq: None,
                        });
                    }
                    let expected_prev = prev_hash.as_deref().unwrap_or(ZERO_HASH);
                    if prev != expected_prev {
                        rep.findings.push(ChainFinding {
                            finding: Finding::new(
                                Code::LedgerChainBroken,
                                None,
                                format!("line {line_no} (seq {seq}): `prev` does not match the hash of the record before it"),
                            )
                            .with_detail(json!({"line": line_no, "seq": seq, "expected": expected_prev, "actual": prev})),
                            line: Some(line_no),
                            seq: Some(seq),
                        });
                    }
                    let want = last_chained_seq.map_or(1, |s| s + 1);
                    if seq != want {
                        rep.findings.push(ChainFinding {
                            finding: Finding::new(
                                Code::LedgerSeqGap,
                                None,
                                format!(
                                    "line {line_no}: seq {seq} follows {}; expected {want}",
                                    last_chained_seq
                                        .map_or("nothing".to_owned(), |s| s.to_string())
                                ),
                            )
                            .with_detail(json!({"line": line_no, "seq": seq, "expected": want})),
                            line: Some(line_no),
                            seq: Some(seq),
                        });
                    }
                    if let Some(rev) = v.get("revision").and_then(Value::as_u64) {
                        if max_revision.is_some_and(|m| rev < m) {
                            rep.findings.push(ChainFinding {
                                finding: Finding::new(
                                    Code::LedgerRevisionRegressed,
                                    None,
                                    format!("line {line_no} (seq {seq}): revision {rev} is lower than an earlier {}", max_revision.unwrap_or(0)),
                                )
                                .with_detail(json!({"line": line_no, "seq": seq, "revision": rev})),
                                line: Some(line_no),
                                seq: Some(seq),
                            });
                        }
                        max_revision = Some(max_revision.map_or(rev, |m| m.max(rev)));
                        rep.last_revision = Some(rev);
                    }
                    chain_started = true;
                    last_chained_seq = Some(seq);
                    rep.last_seq = Some(seq);
                } else if !chain_started {
                    legacy_before += 1;
                } else {
                    let sev = match foreign {
                        ForeignSeverity::Error => Severity::Error,
                        ForeignSeverity::Warning => Severity::Warning,
                    };
                    rep.findings.push(ChainFinding {
                        finding: Finding::new(
                            Code::LedgerForeignRecord,
                            None,
                            format!("line {line_no}: an unchained record follows the chain start (written by another tool?)"),
                        )
                        .with_severity(sev)
                        .with_detail(json!({"line": line_no})),
                        line: Some(line_no),
                        seq: None,
                    });
                }
                visit(line_no, v);
            }
        }
        prev_hash = Some(hash.clone());
        if terminated {
            rep.head = Some(hash);
        }
    }
    if rep.records > 0 && rep.chained == 0 {
        rep.findings.push(ChainFinding {
            finding: Finding::new(
                Code::LedgerNotChained,
                None,
                "the ledger has no hash-chained records (legacy ledger)",
            ),
            line: None,
            seq: None,
        });
    }
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::chain_records;
    use serde_json::Map;

    fn entries(n: usize) -> Vec<Map<String, Value>> {
        (0..n)
            .map(|i| serde_json::from_value(json!({"kind": "k", "i": i, "revision": i})).unwrap())
            .collect()
    }

    fn codes(bytes: &[u8]) -> Vec<(Code, Option<u64>)> {
        let rep = verify_chain(&mut &bytes[..], ForeignSeverity::Error, &mut |_, _| {}).unwrap();
        rep.findings
            .iter()
            .map(|f| (f.finding.code, f.line))
            .collect()
    }

    #[test]
    fn intact_chain_has_no_findings() {
        let (bytes, _) = chain_records(0, None, &entries(5));
        assert!(codes(&bytes).is_empty());
    }

    #[test]
    fn one_changed_byte_breaks_the_next_line() {
        let (mut bytes, _) = chain_records(0, None, &entries(5));
        let second_line = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        let i = second_line + 2;
        bytes[i] = if bytes[i] == b'k' { b'j' } else { b'k' };
        assert_eq!(codes(&bytes), vec![(Code::LedgerChainBroken, Some(3))]);
    }

    #[test]
    fn legacy_prefix_and_foreign_records() {
        let mut bytes = b"{\"legacy\":1}\n".to_vec();
        let h = record_hash(b"{\"legacy\":1}");
        let (chain, _) = chain_records(0, Some(&h), &entries(2));
        bytes.extend_from_slice(&chain);
        // The legacy prefix is reported as information, not a failure.
        assert_eq!(codes(&bytes), vec![(Code::LedgerLegacyPrefix, None)]);
        let rep = verify_chain(&mut &bytes[..], ForeignSeverity::Error, &mut |_, _| {}).unwrap();
        assert_eq!(rep.findings[0].finding.severity, Severity::Info);
        assert_eq!(
            rep.findings[0].finding.detail,
            Some(json!({"records": 1, "firstChainedLine": 2}))
        );
        bytes.extend_from_slice(b"{\"node\":true}\n");
        assert_eq!(
            codes(&bytes),
            vec![
                (Code::LedgerLegacyPrefix, None),
                (Code::LedgerForeignRecord, Some(4))
            ]
        );
        assert_eq!(codes(b"{\"a\":1}\n"), vec![(Code::LedgerNotChained, None)]);
        assert_eq!(
            codes(b"{\"a\":1}\n[1]\n{\"x"),
            vec![
                (Code::LedgerRecordInvalid, Some(2)),
                (Code::LedgerTornTail, Some(3)),
                (Code::LedgerNotChained, None)
            ]
        );
    }

    #[test]
    fn seq_gaps_and_revision_regressions() {
        let (a, recs) = chain_records(0, None, &entries(2));
        let (b, _) = chain_records(5, Some(&recs[1].hash), &entries(1));
        let mut bytes = a;
        bytes.extend_from_slice(&b);
        assert_eq!(
            codes(&bytes),
            vec![
                (Code::LedgerSeqGap, Some(3)),
                (Code::LedgerRevisionRegressed, Some(3))
            ]
        );
    }
}
