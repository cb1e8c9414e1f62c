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

/// Reads the `len` bytes at `start` into `buf`, replacing its content, without
/// zero-filling the buffer first (a profile of the binding walk showed the
/// zero-filling of each 64 KiB read; no change in wall time was measurable).
pub(crate) fn read_exact_at<R: Read + Seek>(
    r: &mut R,
    start: u64,
    len: usize,
    buf: &mut Vec<u8>,
) -> io::Result<()> {
    buf.clear();
    buf.reserve_exact(len);
    r.seek(SeekFrom::Start(start))?;
    if Read::by_ref(r).take(len as u64).read_to_end(buf)? < len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

#[cfg(test)]
thread_local! {
    /// Bytes [`read_tail`] copied again on this thread (the carried part of
    /// a line longer than a read).
    static CARRIED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Reads backwards (8 KiB, then 64 KiB chunks) until the last complete record and the
/// last chained record are known, or `max_scan` bytes have been read (then
/// `last_seq` may be unknown even though the file has chained records; the
/// caller falls back to its index or a full scan). Each byte is scanned
/// once: a read keeps only the partial line it begins with for the next.
pub(crate) fn read_tail<R: Read + Seek>(r: &mut R, max_scan: u64) -> io::Result<Tail> {
    const CHUNK: u64 = 64 * 1024;
    // The first read is small: the last record is almost always chained.
    let mut size = 8 * 1024;
    let len = r.seek(SeekFrom::End(0))?;
    let mut tail = Tail {
        len,
        ..Tail::default()
    };
    // The bytes from `pos` up to the first complete line already scanned
    // (or to the end of the complete records, before that is known).
    let mut carry: Vec<u8> = Vec::new();
    let mut pos = len;
    let mut scanned = 0u64;
    let mut end_complete = false;
    // Older records are decoded only when they may be chained.
    let chained = super::MayHold::chained();
    loop {
        if pos == 0 || scanned >= max_scan.max(CHUNK) {
            break;
        }
        // At least as much as the line carried over, within the budget: a
        // line longer than a chunk is read in doubling steps, its start
        // copied a few times, not once per chunk (quadratic in its length).
        let grow = (carry.len() as u64).min(max_scan.saturating_sub(scanned));
        let start = pos.saturating_sub(size.max(grow));
        size = CHUNK;
        let mut buf = Vec::new();
        read_exact_at(r, start, (pos - start) as usize, &mut buf)?;
        scanned += buf.len() as u64;
        #[cfg(test)]
        CARRIED.with(|c| c.set(c.get() + carry.len() as u64));
        buf.extend_from_slice(&carry);
        pos = start;
        if !end_complete {
            if let Some(i) = crate::scan::rfind_byte(b'\n', &buf) {
                let trailing = &buf[i + 1..];
                if is_record(trailing) {
                    tail.trailing = trailing.to_vec();
                }
                buf.truncate(i + 1);
            } else if pos == 0 {
                if is_record(&buf) {
                    tail.trailing = buf;
                }
                break;
            } else {
                carry = buf;
                continue;
            }
            end_complete = true;
        }
        // Walk complete records backwards within buf (excluding a possibly
        // partial first line unless we are at the file start).
        match scan_records(&buf, pos, pos == 0, &chained, &mut tail) {
            None => break,
            Some(partial) => {
                buf.truncate(partial);
                carry = buf;
            }
        }
    }
    tail.scanned_to_start = pos == 0;
    Ok(tail)
}

/// Scans the complete records of `buf` (which ends with `\n` or is empty)
/// newest first: `None` once the chained record has been found, else the
/// length of the partial line `buf` begins with (0 at the file's start).
fn scan_records(
    buf: &[u8],
    base: u64,
    at_start: bool,
    chained: &super::MayHold,
    tail: &mut Tail,
) -> Option<usize> {
    let mut end = buf.len();
    while end > 0 {
        let line_end = end - 1; // index of '\n'
        let start = match crate::scan::rfind_byte(b'\n', &buf[..line_end]) {
            Some(i) => i + 1,
            None if at_start => 0,
            None => return Some(end), // partial line: need more bytes
        };
        let line = &buf[start..line_end];
        if is_record(line) {
            let newest = tail.last_record_offset.is_none();
            // Older records are parsed only when they may be chained: a
            // Node tool's ledger is walked without building its records.
            let value: Option<Value> = if newest || chained.may_hold(line) {
                serde_json::from_slice(line).ok()
            } else {
                None
            };
            if newest {
                tail.last_record_offset = Some(base + start as u64);
                tail.last_record_hash = Some(record_hash(line));
                tail.last_record = value.clone();
            }
            if let Some(v) = &value
                && let Some((seq, _)) = chain_fields(v)
            {
                tail.last_seq = Some(seq);
                tail.last_revision = v.get("revision").and_then(Value::as_u64);
                return None;
            }
        }
        end = start;
    }
    Some(0)
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

    /// A record many chunks long is read whole, its start copied again only
    /// a few times (about 70 MB for this one with 64 KiB steps).
    #[test]
    fn a_long_last_record_is_read_in_doubling_steps() {
        let e: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"kind":"a","revision":5}"#).unwrap();
        let (mut bytes, _) = chain_records(0, None, &[e]);
        let foreign = format!(
            "{{\"kind\":\"node\",\"pad\":\"{}\"}}\n",
            "y".repeat(3 << 20)
        );
        bytes.extend_from_slice(foreign.as_bytes());
        CARRIED.with(|c| c.set(0));
        let t = read_tail(&mut Cursor::new(&bytes), u64::MAX).unwrap();
        assert_eq!(t.last_seq, Some(1));
        assert_eq!(t.last_revision, Some(5));
        assert_eq!(
            t.last_record_hash.as_deref(),
            Some(record_hash(&foreign.as_bytes()[..foreign.len() - 1]).as_str())
        );
        let carried = CARRIED.with(std::cell::Cell::get);
        assert!(carried <= 2 * foreign.len() as u64, "{carried}");
        // A budget still bounds what is read.
        let t = read_tail(&mut Cursor::new(&bytes), 256 * 1024).unwrap();
        assert_eq!(t.last_seq, None);
        assert!(!t.scanned_to_start);
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

    /// A key spelled with escapes is the same key: the pre-filter that
    /// skips parsing foreign lines must not hide such a chained record.
    #[test]
    fn a_chained_record_whose_key_is_escaped_is_found_behind_foreign_lines() {
        let e: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"kind":"a","revision":7}"#).unwrap();
        let (bytes, _) = chain_records(0, None, &[e]);
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("\"prev\""));
        let mut bytes = text.replace("\"prev\"", "\"pr\\u0065v\"").into_bytes();
        for i in 0..3000 {
            bytes.extend_from_slice(format!("{{\"kind\":\"node\",\"n\":{i}}}\n").as_bytes());
        }
        let t = read_tail(&mut Cursor::new(&bytes), 1 << 20).unwrap();
        assert_eq!(t.last_seq, Some(1));
        assert_eq!(t.last_revision, Some(7));
        assert!(t.last_record.is_some());
        // Without the escape the same record is found as well.
        let plain = String::from_utf8(bytes)
            .unwrap()
            .replace("\"pr\\u0065v\"", "\"prev\"");
        let t = read_tail(&mut Cursor::new(plain.as_bytes()), 1 << 20).unwrap();
        assert_eq!(t.last_seq, Some(1));
    }

    /// Records cut by every read boundary are each seen once and whole: the
    /// newest chained record is found at every distance behind foreign lines.
    #[test]
    fn the_chained_record_is_found_at_any_distance_within_the_scan() {
        let e: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"kind":"a","revision":2}"#).unwrap();
        for foreign in [0usize, 1, 40, 400, 1500, 5000] {
            let (mut bytes, _) = chain_records(0, None, &[e.clone(), e.clone()]);
            for i in 0..foreign {
                bytes.extend_from_slice(
                    format!("{{\"kind\":\"node\",\"message\":\"line {i} of the Node tool\"}}\n")
                        .as_bytes(),
                );
            }
            let t = read_tail(&mut Cursor::new(&bytes), 1 << 22).unwrap();
            assert_eq!(t.last_seq, Some(2), "{foreign}");
            let t = read_tail(&mut Cursor::new(&bytes), 64 * 1024).unwrap();
            let within = bytes.len() < 64 * 1024 + 8 * 1024;
            assert_eq!(t.last_seq.is_some(), within || foreign < 1000, "{foreign}");
        }
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
