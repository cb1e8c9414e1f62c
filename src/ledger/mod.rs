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

/// A test on a record's bytes that never says no to a record with the
/// member `name` (letters only): the name appears in quotes, or the record
/// has a `\u` escape, the only JSON escape that spells a letter and so the
/// only other way to write the name. A record it says no to lacks the member
/// without being decoded (anywhere in it, so at its top level too).
pub(crate) struct MayHold {
    quoted: crate::scan::Finder,
    escape: crate::scan::Finder,
}

impl MayHold {
    /// The test for the member `name`.
    pub(crate) fn new(name: &str) -> MayHold {
        debug_assert!(name.bytes().all(|b| b.is_ascii_alphabetic()));
        MayHold {
            quoted: crate::scan::Finder::new(format!("\"{name}\"").as_bytes()),
            escape: crate::scan::Finder::new(b"\\u"),
        }
    }

    /// Whether `line` may have the member.
    pub(crate) fn may_hold(&self, line: &[u8]) -> bool {
        self.quoted.find(line).is_some() || self.escape.find(line).is_some()
    }

    /// [`MayHold::new`] for `prev`, which every chained record has
    /// ([`chain_fields`]).
    pub(crate) fn chained() -> MayHold {
        MayHold::new("prev")
    }
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
    /// Its length in bytes, without the terminating newline.
    pub len: usize,
}

/// Serialises entries as chained records that continue after `tail`:
/// `seq`/`prev` are removed from each entry and written last. Returns the
/// bytes to append in one write (each record terminated by `\n`) and the
/// records' seqs, hashes and lengths.
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
        let start = out.len();
        write_chained(&mut out, e, seq, &prev).expect("writing to memory does not fail");
        let hash = record_hash(&out[start..]);
        recs.push(ChainedRecord {
            seq,
            hash: hash.clone(),
            len: out.len() - start,
        });
        out.push(b'\n');
        prev = hash;
    }
    (out, recs)
}

/// Writes `entry` as the chained record `seq` after `prev`, without its
/// newline: the entry serialised compactly with any `seq` and `prev` of its
/// own left out and the chain's `"seq"` and `"prev"` written last. The bytes
/// are those of `serde_json::to_vec` of the entry with `seq` and `prev`
/// removed and inserted again at its end, written without copying it.
fn write_chained<W: std::io::Write>(
    out: &mut W,
    entry: &Map<String, Value>,
    seq: u64,
    prev: &str,
) -> std::io::Result<()> {
    out.write_all(b"{")?;
    for (k, v) in entry.iter().filter(|(k, _)| *k != "seq" && *k != "prev") {
        serde_json::to_writer(&mut *out, k)?;
        out.write_all(b":")?;
        serde_json::to_writer(&mut *out, v)?;
        out.write_all(b",")?;
    }
    write!(out, "\"seq\":{seq},\"prev\":")?;
    serde_json::to_writer(&mut *out, prev)?;
    out.write_all(b"}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member spelt with any of its letters escaped, in either case of
    /// hex, is never missed; a record without the member and without an
    /// escape is told apart without decoding it.
    #[test]
    fn may_hold_never_misses_a_member() {
        for name in ["prev", "seq", "steering"] {
            let test = MayHold::new(name);
            let letters: Vec<char> = name.chars().collect();
            for mask in 0u32..(1 << letters.len()) {
                let spelt: String = letters
                    .iter()
                    .enumerate()
                    .map(|(i, c)| match (mask >> i & 1, i % 2) {
                        (0, _) => c.to_string(),
                        (_, 0) => format!("\\u{:04x}", *c as u32),
                        _ => format!("\\u{:04X}", *c as u32),
                    })
                    .collect();
                let line = format!(r#"{{"kind":"x","{spelt}":1}}"#);
                let v: Value = serde_json::from_str(&line).unwrap();
                assert!(v.get(name).is_some(), "{line}");
                assert!(test.may_hold(line.as_bytes()), "{line}");
            }
            for line in [
                format!(r#"{{"{name}ious":1,"note":"{name} in text"}}"#),
                r#"{"kind":"evidence_captured","pad":"a\nb \"q\""}"#.to_owned(),
            ] {
                let v: Value = serde_json::from_str(&line).unwrap();
                assert!(v.get(name).is_none(), "{line}");
                assert!(!test.may_hold(line.as_bytes()), "{line}");
            }
        }
    }

    /// The record as the chain wrote it before it was written in one pass:
    /// the entry copied, `seq` and `prev` removed and inserted again last,
    /// serialised compactly.
    fn copied_line(e: &Map<String, Value>, seq: u64, prev: &str) -> Vec<u8> {
        let mut obj = e.clone();
        obj.shift_remove("seq");
        obj.shift_remove("prev");
        obj.insert("seq".into(), Value::from(seq));
        obj.insert("prev".into(), Value::String(prev.to_owned()));
        serde_json::to_vec(&Value::Object(obj)).unwrap()
    }

    /// Records written in one pass are byte for byte the copied and
    /// serialised entries they replaced, with the same hashes and lengths:
    /// escapes in keys and values, `seq`/`prev` anywhere in the entry,
    /// nested values, every kind of number, an empty entry.
    #[test]
    fn records_written_in_one_pass_are_the_copied_entries_serialised() {
        let cases = [
            r#"{}"#,
            r#"{"seq":1}"#,
            r#"{"prev":"x","seq":2}"#,
            r#"{"kind":"a","seq":4,"b":1,"prev":"zz","c":[1,{"seq":5}]}"#,
            r#"{"k\"ey":"v\u0000\n\t\u2028 é ☃","n":[-1,2.5,1e300,18446744073709551615,-9223372036854775808,0.1],"o":{"x":"\""}}"#,
            r#"{"deep":[[[[{"a":[null,true,false,""]}]]]],"u":"\ud83d\ude00"}"#,
        ];
        let entries: Vec<Map<String, Value>> = cases
            .iter()
            .map(|t| serde_json::from_str(t).unwrap())
            .collect();
        for start in [0, 9, 99_999] {
            let h = "a".repeat(64);
            let (bytes, recs) = chain_records(start, Some(&h), &entries);
            let mut expected = Vec::new();
            let mut prev = h.clone();
            for (i, e) in entries.iter().enumerate() {
                let line = copied_line(e, start + 1 + i as u64, &prev);
                assert_eq!(recs[i].hash, record_hash(&line), "{}", cases[i]);
                assert_eq!(recs[i].len, line.len(), "{}", cases[i]);
                prev = record_hash(&line);
                expected.extend_from_slice(&line);
                expected.push(b'\n');
            }
            assert_eq!(
                String::from_utf8(bytes).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }

    use proptest::prelude::*;

    proptest! {
        /// The same for arbitrary JSON objects.
        #[test]
        fn any_object_is_chained_as_copied_and_serialised(
            text in proptest::collection::vec(
                (prop_oneof![Just("seq".to_owned()), Just("prev".to_owned()), Just("kind".to_owned()), "[a-z]{1,3}", "\\PC{0,4}"],
                 prop_oneof![
                     any::<i64>().prop_map(Value::from),
                     any::<u64>().prop_map(Value::from),
                     any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
                     "\\PC{0,8}".prop_map(Value::from),
                     any::<bool>().prop_map(Value::from),
                     Just(Value::Null),
                 ]),
                0..8,
            ),
            seq in 0u64..1_000_000,
        ) {
            let e: Map<String, Value> = text.into_iter().collect();
            let (bytes, recs) = chain_records(seq, None, std::slice::from_ref(&e));
            let line = copied_line(&e, seq + 1, ZERO_HASH);
            prop_assert_eq!(&bytes[..bytes.len() - 1], &line[..]);
            prop_assert_eq!(&recs[0].hash, &record_hash(&line));
            prop_assert_eq!(recs[0].len, line.len());
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
