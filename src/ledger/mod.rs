//! The one hash-chain implementation shared by every ledger in the product
//! (the goal engine's `ledger.jsonl` and the hook gate ledger).
//!
//! A *record* is a maximal run of bytes terminated by `\n` that contains a
//! non-whitespace byte. A record is *chained* when it is a JSON object with an
//! integer `seq` ≥ 1 and a string `prev` of 64 lowercase hex digits. `prev` is
//! the SHA-256 of the exact bytes of the record before it (chained or not,
//! without its `\n`), 64 zeros for the first record; `seq` is the last chained
//! `seq` + 1 (docs/state-formats.md#ge-2).

mod tail;
mod verify;

use serde_json::{Map, Value};

pub(crate) use tail::{read_exact_at, read_tail};
pub(crate) use verify::ChainReport;
pub(crate) use verify::{Extract, verify_chain_split};
pub use verify::{ForeignSeverity, set_verify_threads, verify_chain};

use crate::digest::sha256_hex;

/// `prev` of the first record of a file.
pub(crate) const ZERO_HASH: &str =
    "0000000000000000000000000000000000000000000000000000000000000000";

/// The archived ledger's last-record digest a `plan_created.replaced` object
/// names: `previousHead.sha256` (`previousHead: {seq, sha256}`), or the bare
/// digest string earlier versions wrote.
pub(crate) fn previous_head_sha256(replaced: &Value) -> Option<&str> {
    match replaced.get("previousHead")? {
        Value::String(s) => Some(s),
        v => v.get("sha256")?.as_str(),
    }
}

/// Hash of a record's exact bytes (without the terminating newline).
pub fn record_hash(record: &[u8]) -> String {
    sha256_hex(record)
}

/// True when `bytes` contains a non-whitespace byte (i.e. is a record).
pub(crate) fn is_record(bytes: &[u8]) -> bool {
    bytes.iter().any(|b| !b.is_ascii_whitespace())
}

/// `(seq, prev)` of a chained record, if it is one.
pub(crate) fn chain_fields(value: &Value) -> Option<(u64, &str)> {
    let obj = value.as_object()?;
    let seq = obj.get("seq")?.as_u64().filter(|s| *s >= 1)?;
    let prev = obj
        .get("prev")?
        .as_str()
        .filter(|p| crate::digest::is_sha256_hex(p))?;
    Some((seq, prev))
}

/// One record produced by [`chain_records`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainedRecord {
    /// Its `seq`.
    pub seq: u64,
    /// Hash of its bytes (the next record's `prev`).
    pub hash: String,
}

/// Serialises entries as chained records that continue after `tail`:
/// `seq`/`prev` are removed from each entry and written last. Returns the
/// bytes to append in one write (each record terminated by `\n`) and the
/// records' seqs and hashes.
pub fn chain_records(
    last_seq: u64,
    last_hash: Option<&str>,
    entries: &[Map<String, Value>],
) -> (Vec<u8>, Vec<ChainedRecord>) {
    let mut out = Vec::new();
    let mut recs = Vec::with_capacity(entries.len());
    let mut prev = last_hash.unwrap_or(ZERO_HASH).to_owned();
    let mut seq = last_seq;
    for e in entries {
        seq += 1;
        let mut obj = e.clone();
        obj.shift_remove("seq");
        obj.shift_remove("prev");
        obj.insert("seq".into(), Value::from(seq));
        obj.insert("prev".into(), Value::String(prev.clone()));
        let line = serde_json::to_vec(&Value::Object(obj)).expect("JSON values serialise");
        let hash = record_hash(&line);
        out.extend_from_slice(&line);
        out.push(b'\n');
        recs.push(ChainedRecord {
            seq,
            hash: hash.clone(),
        });
        prev = hash;
    }
    (out, recs)
}

/// The exact length of the line [`chain_records`] writes for `entry`
/// at `seq`, counted without building it: the entry serialised compactly
/// with `"seq"` and `"prev"` (always 64 hex digits) appended last.
pub(crate) fn chained_len(entry: &Map<String, Value>, seq: u64) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len() as u64;
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    if entry.contains_key("seq") || entry.contains_key("prev") {
        let (bytes, _) = chain_records(seq - 1, Some(ZERO_HASH), std::slice::from_ref(entry));
        return bytes.len() as u64 - 1;
    }
    let mut n = Count(0);
    serde_json::to_writer(&mut n, entry).expect("JSON values serialise");
    // `{…}` + `,"seq":N,"prev":"<64>"`, without the comma for `{}`.
    let tail = format!(r#""seq":{seq},"prev":"{}""#, ZERO_HASH).len() as u64;
    n.0 + tail + u64::from(!entry.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chained_len_is_the_length_chain_records_writes() {
        let cases = [
            r#"{}"#,
            r#"{"kind":"a"}"#,
            r#"{"kind":"é ☃ \u0001","n":[1,2.5,null],"o":{"x":"\""}}"#,
            r#"{"seq":4,"kind":"a","prev":"zz"}"#,
        ];
        for text in cases {
            let e: Map<String, Value> = serde_json::from_str(text).unwrap();
            for seq in [1, 9, 10, 99_999, 100_000] {
                // `prev` in real chains is always 64 hex digits.
                let h = "f".repeat(64);
                let (exact, _) = chain_records(seq - 1, Some(&h), std::slice::from_ref(&e));
                assert_eq!(
                    chained_len(&e, seq),
                    exact.len() as u64 - 1,
                    "{text} @ {seq}"
                );
            }
        }
    }

    #[test]
    fn chain_links_records() {
        let e: Map<String, Value> =
            serde_json::from_str(r#"{"kind":"x","seq":9,"prev":"bad"}"#).unwrap();
        let (bytes, recs) = chain_records(0, None, &[e.clone(), e]);
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(recs[0].seq, 1);
        assert_eq!(recs[1].seq, 2);
        assert!(lines[0].ends_with(&format!(r#""seq":1,"prev":"{ZERO_HASH}"}}"#)));
        assert!(lines[1].contains(&record_hash(lines[0].as_bytes())));
        assert_eq!(recs[0].hash, record_hash(lines[0].as_bytes()));
    }
}
