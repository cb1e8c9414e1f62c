//! Reading the end of a ledger without reading the whole file.

use std::io::{self, Read, Seek, SeekFrom};

use serde_json::Value;

use super::{chain_fields, is_record, record_hash};

/// What the end of a ledger looks like.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tail {
    /// File length in bytes.
    pub len: u64,
    /// Bytes after the last `\n` (a torn or unterminated tail), if any record bytes.
    pub trailing: Vec<u8>,
    /// Offset of the last complete record.
    pub last_record_offset: Option<u64>,
    /// Hash of the last complete record (the next `prev`).
    pub last_record_hash: Option<String>,
    /// The last complete record, parsed (if it is JSON).
    pub last_record: Option<Value>,
    /// `seq` of the last chained record, when one was found in the scanned part.
    pub last_seq: Option<u64>,
    /// `revision` of that chained record.
    pub last_revision: Option<u64>,
    /// Whether the scan reached the start of the file looking for a chained record.
    pub scanned_to_start: bool,
}

/// Reads backwards (8 KiB, then 64 KiB chunks) until the last complete record and the
/// last chained record are known, or `max_scan` bytes have been read (then
/// `last_seq` may be unknown even though the file has chained records; the
/// caller falls back to its index or a full scan).
pub(crate) fn read_tail<R: Read + Seek>(r: &mut R, max_scan: u64) -> io::Result<Tail> {
    const CHUNK: u64 = 64 * 1024;
    // The first read is small: the last record is almost always chained.
    let mut size = 8 * 1024;
    let len = r.seek(SeekFrom::End(0))?;
    let mut tail = Tail {
        len,
        ..Tail::default()
    };
    let mut buf: Vec<u8> = Vec::new(); // bytes [pos, end_of_complete)
    let mut pos = len;
    let mut scanned = 0u64;
    // Bytes after the last newline.
    let mut end_complete: Option<u64> = None;
    loop {
        if pos == 0 || scanned >= max_scan.max(CHUNK) {
            break;
        }
        let start = pos.saturating_sub(size);
        size = CHUNK;
        let mut chunk = vec![0u8; (pos - start) as usize];
        r.seek(SeekFrom::Start(start))?;
        r.read_exact(&mut chunk)?;
        scanned += chunk.len() as u64;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        pos = start;
        if end_complete.is_none() {
            if let Some(i) = buf.iter().rposition(|&b| b == b'\n') {
                let trailing = &buf[i + 1..];
                if is_record(trailing) {
                    tail.trailing = trailing.to_vec();
                }
                end_complete = Some(pos + i as u64 + 1);
                buf.truncate(i + 1);
            } else if pos == 0 {
                if is_record(&buf) {
                    tail.trailing = buf.clone();
                }
                end_complete = Some(0);
                buf.clear();
            } else {
                continue;
            }
        }
        // Walk complete records backwards within buf (excluding a possibly
        // partial first line unless we are at the file start).
        if scan_records(&buf, pos, pos == 0, &mut tail) {
            break;
        }
    }
    tail.scanned_to_start = pos == 0;
    Ok(tail)
}

/// Returns true when the chained record has been found.
fn scan_records(buf: &[u8], base: u64, at_start: bool, tail: &mut Tail) -> bool {
    // buf ends with '\n' (or is empty). Split into lines.
    let mut end = buf.len();
    while end > 0 {
        let line_end = end - 1; // index of '\n'
        let start = match buf[..line_end].iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if at_start => 0,
            None => return false, // partial line: need more bytes
        };
        let line = &buf[start..line_end];
        if is_record(line) {
            let value: Option<Value> = serde_json::from_slice(line).ok();
            if tail.last_record_offset.is_none() {
                tail.last_record_offset = Some(base + start as u64);
                tail.last_record_hash = Some(record_hash(line));
                tail.last_record = value.clone();
            }
            if let Some(v) = &value
                && let Some((seq, _)) = chain_fields(v)
            {
                tail.last_seq = Some(seq);
                tail.last_revision = v.get("revision").and_then(Value::as_u64);
                return true;
            }
        }
        end = start;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::chain_records;
    use std::io::Cursor;

    /// Records longer than the first small read are found whole, however
    /// the reads split them.
    #[test]
    fn records_longer_than_the_first_read_are_read_whole() {
        for big in [100, 8 * 1024 - 40, 8 * 1024 + 7, 20_000, 70_000] {
            let mut e: serde_json::Map<String, Value> =
                serde_json::from_str(r#"{"kind":"a","revision":4}"#).unwrap();
            e.insert("pad".into(), Value::String("x".repeat(big)));
            let (mut bytes, recs) = chain_records(0, None, &[e.clone(), e]);
            let foreign = format!("{{\"kind\":\"node\",\"pad\":\"{}\"}}\n", "y".repeat(big));
            bytes.extend_from_slice(foreign.as_bytes());
            let t = read_tail(&mut Cursor::new(&bytes), 1 << 22).unwrap();
            assert_eq!(t.last_seq, Some(2), "{big}");
            assert_eq!(t.last_revision, Some(4), "{big}");
            assert_eq!(
                t.last_record_hash.as_deref(),
                Some(record_hash(&foreign.as_bytes()[..foreign.len() - 1]).as_str()),
                "{big}"
            );
            assert_eq!(
                t.last_record_offset,
                Some((bytes.len() - foreign.len()) as u64)
            );
            assert!(recs.len() == 2);
        }
    }

    #[test]
    fn finds_last_chained_record_behind_a_foreign_one() {
        let e: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"kind":"a","revision":3}"#).unwrap();
        let (mut bytes, recs) = chain_records(0, None, &[e.clone(), e]);
        bytes.extend_from_slice(b"{\"kind\":\"node\"}\n\n{\"torn");
        let t = read_tail(&mut Cursor::new(&bytes), 1 << 20).unwrap();
        assert_eq!(t.last_seq, Some(2));
        assert_eq!(t.last_revision, Some(3));
        assert_eq!(t.trailing, b"{\"torn");
        assert_eq!(
            t.last_record_hash.as_deref(),
            Some(record_hash(b"{\"kind\":\"node\"}").as_str())
        );
        assert_ne!(t.last_record_hash.as_deref(), Some(recs[1].hash.as_str()));
    }

    #[test]
    fn empty_and_legacy_files() {
        let t = read_tail(&mut Cursor::new(b""), 1 << 20).unwrap();
        assert_eq!(t.last_record_offset, None);
        let t = read_tail(&mut Cursor::new(b"{\"a\":1}\n{\"b\":2}\n"), 1 << 20).unwrap();
        assert_eq!(t.last_seq, None);
        assert_eq!(t.last_record_offset, Some(8));
        assert!(t.scanned_to_start);
    }

    #[test]
    fn long_file_reads_only_the_tail() {
        let e: serde_json::Map<String, Value> =
            serde_json::from_str(&format!(r#"{{"kind":"a","pad":"{}"}}"#, "x".repeat(500)))
                .unwrap();
        let entries = vec![e; 2000];
        let (bytes, recs) = chain_records(0, None, &entries);
        let t = read_tail(&mut Cursor::new(&bytes), 1 << 20).unwrap();
        assert_eq!(t.last_seq, Some(2000));
        assert_eq!(
            t.last_record_hash.as_deref(),
            Some(recs[1999].hash.as_str())
        );
        assert!(!t.scanned_to_start);
    }
}
