//! `.ledger.keyhash`: an open-addressing hash table over `.ledger.keys`, so a
//! steering dedupe lookup reads a few slots and one key line instead of the
//! whole key history (docs/state-formats.md#ge-2, docs/engine.md#ge-11).
//!
//! Layout (little endian): a 32-byte header — magic `EGKHASH1`, the slot
//! count (a power of two), the number of used slots, and the `.ledger.keys`
//! size the table covers — then `slots` slots of 16 bytes: a tag (the first
//! 8 bytes of SHA-256 of the namespaced key with the low bit set; 0 marks an
//! empty slot) and the byte offset of the key's line in `.ledger.keys`.
//! Linear probing; the table is kept at most half full and rebuilt twice as
//! large (from `.ledger.keys`) when it would pass that.
//!
//! The table is a cache the gated agent can write. It is never trusted on
//! its own: a slot only names a candidate line, the line must carry the key
//! it was looked up by, and the ledger record the line points to (`o`, `s`)
//! must be an accepted steering entry that yields exactly that line. A
//! candidate that fails any of these makes the lookup report
//! [`Lookup::Inconsistent`], and the caller rebuilds the key index from the
//! ledger before deciding. A table whose header does not cover exactly the
//! key bytes the ledger index vouches for is [`Lookup::Stale`] and rebuilt
//! from `.ledger.keys` before use. Both happen only inside the mutation
//! lock. A miss is not provable from a cache the agent can write: a slot
//! removed from the table lets a replayed key through as new, which the
//! repository audit reports (`STEERING_KEY_REACCEPTED`).

use std::io::{self, Read, Seek, SeekFrom, Write};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, File, OpenOptions};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::journal::{self, KeyLine};

/// The table's file name in the state directory.
pub(crate) const FILE: &str = ".ledger.keyhash";

const MAGIC: &[u8; 8] = b"EGKHASH1";
const HEADER: u64 = 32;
const SLOT: u64 = 16;
const MIN_SLOTS: u64 = 1024;
/// Longest key line read for a candidate (lines are small; a longer one is
/// not one the engine wrote).
const MAX_LINE: u64 = 256 * 1024;
/// Bytes read at a time for a candidate line (an engine-written key line
/// is a few hundred bytes).
const LINE_READ: usize = 2048;
/// Slots read per probe step.
const PROBE_CHUNK: u64 = 32;

/// The outcome of looking a key up.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lookup {
    /// The first verified key line under the key (lowest offset in
    /// `.ledger.keys`), or `None` when the table has no entry for it.
    Found(Option<Value>),
    /// The table is missing or covers other `.ledger.keys` bytes than the
    /// ledger index names: rebuild it from `.ledger.keys` and look again.
    Stale,
    /// The table, `.ledger.keys` or the ledger disagree: rebuild from the
    /// ledger and look again.
    Inconsistent,
}

/// The tag of a namespaced key (never 0).
pub(crate) fn tag(key: &str) -> u64 {
    let d = Sha256::digest(key.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b) | 1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    slots: u64,
    used: u64,
    keys_bytes: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER as usize] {
        let mut h = [0u8; HEADER as usize];
        h[..8].copy_from_slice(MAGIC);
        h[8..16].copy_from_slice(&self.slots.to_le_bytes());
        h[16..24].copy_from_slice(&self.used.to_le_bytes());
        h[24..32].copy_from_slice(&self.keys_bytes.to_le_bytes());
        h
    }

    fn decode(b: &[u8; HEADER as usize], file_len: u64) -> Option<Header> {
        if &b[..8] != MAGIC {
            return None;
        }
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let h = Header {
            slots: word(8),
            used: word(16),
            keys_bytes: word(24),
        };
        let ok = h.slots.is_power_of_two()
            && h.slots >= MIN_SLOTS
            && h.used * 2 <= h.slots
            && h.slots
                .checked_mul(SLOT)
                .and_then(|s| s.checked_add(HEADER))
                == Some(file_len);
        ok.then_some(h)
    }
}

fn open_nofollow(dir: &Dir, name: &str, write: bool) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(write).follow(FollowSymlinks::No);
    let f = dir.open_with(name, &opts)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

fn read_header(f: &mut File) -> io::Result<Option<Header>> {
    let len = f.metadata()?.len();
    if len < HEADER {
        return Ok(None);
    }
    let mut b = [0u8; HEADER as usize];
    f.seek(SeekFrom::Start(0))?;
    f.read_exact(&mut b)?;
    Ok(Header::decode(&b, len))
}

/// Slots for `entries` keys: a power of two at least twice as many.
fn slots_for(entries: u64) -> u64 {
    (entries.saturating_mul(2))
        .max(MIN_SLOTS)
        .next_power_of_two()
}

/// Builds a table in memory from `(tag, line offset)` pairs.
fn build(entries: &[(u64, u64)], keys_bytes: u64) -> Vec<u8> {
    let slots = slots_for(entries.len() as u64 + 1);
    let mut table = vec![0u8; (HEADER + slots * SLOT) as usize];
    let mask = slots - 1;
    for &(t, off) in entries {
        let mut i = t & mask;
        loop {
            let at = (HEADER + i * SLOT) as usize;
            if table[at..at + 8] == [0; 8] {
                table[at..at + 8].copy_from_slice(&t.to_le_bytes());
                table[at + 8..at + 16].copy_from_slice(&off.to_le_bytes());
                break;
            }
            i = (i + 1) & mask;
        }
    }
    let h = Header {
        slots,
        used: entries.len() as u64,
        keys_bytes,
    };
    table[..HEADER as usize].copy_from_slice(&h.encode());
    table
}

#[derive(Deserialize)]
struct KeyOnly<'a> {
    #[serde(borrow)]
    k: std::borrow::Cow<'a, str>,
}

/// `(tag, offset)` of every line of `keys` (the bytes of `.ledger.keys`)
/// starting at `base`. A line without a string `k` is skipped.
fn entries_of(keys: &[u8], base: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut off = 0usize;
    for line in keys.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        if let Ok(k) = serde_json::from_slice::<KeyOnly<'_>>(body) {
            out.push((tag(&k.k), base + off as u64));
        }
        off += line.len();
    }
    out
}

/// Rebuilds the table from the first `keys_bytes` bytes of `.ledger.keys`
/// (atomic replace, no fsync: losing it costs one rebuild).
pub(crate) fn rebuild_from_keys(dir: &Dir, keys_bytes: u64) -> io::Result<()> {
    let mut keys = Vec::with_capacity(keys_bytes as usize);
    if keys_bytes > 0 {
        let f = open_nofollow(dir, super::state::KEYS, false)?;
        f.take(keys_bytes).read_to_end(&mut keys)?;
        if keys.len() as u64 != keys_bytes {
            return Err(io::Error::other(".ledger.keys is shorter than its index"));
        }
    }
    write_table(dir, &build(&entries_of(&keys, 0), keys_bytes))
}

/// Writes a table for exactly these key lines (a rebuild that just wrote
/// `.ledger.keys` from them).
pub(crate) fn rebuild_from_lines(dir: &Dir, lines: &[KeyLine]) -> io::Result<()> {
    let mut entries = Vec::with_capacity(lines.len());
    let mut off = 0u64;
    for l in lines {
        let text = serde_json::to_string(&l.0).expect("json");
        if let Some(k) = l.0.get("k").and_then(Value::as_str) {
            entries.push((tag(k), off));
        }
        off += text.len() as u64 + 1;
    }
    write_table(dir, &build(&entries, off))
}

fn write_table(dir: &Dir, bytes: &[u8]) -> io::Result<()> {
    crate::store::atomic_replace(dir, FILE, bytes, crate::store::Durability::Cache)
}

/// Adds the lines appended to `.ledger.keys` (`appended`, which started at
/// `old_bytes`) to the table. A table that does not cover exactly
/// `old_bytes`, or would pass half full, is rebuilt from `.ledger.keys`.
pub(crate) fn append(dir: &Dir, old_bytes: u64, appended: &[u8]) -> io::Result<()> {
    let new_bytes = old_bytes + appended.len() as u64;
    let mut f = match open_nofollow(dir, FILE, true) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return rebuild_from_keys(dir, new_bytes);
        }
        Err(e) => return Err(e),
    };
    let Some(mut h) = read_header(&mut f)? else {
        return rebuild_from_keys(dir, new_bytes);
    };
    let entries = entries_of(appended, old_bytes);
    if h.keys_bytes != old_bytes || (h.used + entries.len() as u64) * 2 > h.slots {
        return rebuild_from_keys(dir, new_bytes);
    }
    let mask = h.slots - 1;
    for (t, off) in entries {
        let mut i = t & mask;
        loop {
            let at = HEADER + i * SLOT;
            let mut s = [0u8; 8];
            f.seek(SeekFrom::Start(at))?;
            f.read_exact(&mut s)?;
            if s == [0; 8] {
                let mut slot = [0u8; SLOT as usize];
                slot[..8].copy_from_slice(&t.to_le_bytes());
                slot[8..].copy_from_slice(&off.to_le_bytes());
                f.seek(SeekFrom::Start(at))?;
                f.write_all(&slot)?;
                break;
            }
            i = (i + 1) & mask;
        }
        h.used += 1;
    }
    h.keys_bytes = new_bytes;
    // Slots first, header last: a crash in between leaves a header that
    // covers fewer key bytes than the ledger index, so the table is rebuilt.
    f.seek(SeekFrom::Start(0))?;
    f.write_all(&h.encode())
}

/// Reads the line of `.ledger.keys` at `off` (without its `\n`), reading no
/// further than its end (give or take one buffer): a lookup reads one short
/// line, not the key history after it.
fn line_at(keys: &mut File, off: u64, keys_bytes: u64) -> io::Result<Option<Vec<u8>>> {
    if off >= keys_bytes {
        return Ok(None);
    }
    keys.seek(SeekFrom::Start(off))?;
    let limit = (keys_bytes - off).min(MAX_LINE);
    let mut reader = io::BufReader::with_capacity(LINE_READ, Read::by_ref(keys).take(limit));
    let mut buf = Vec::new();
    io::BufRead::read_until(&mut reader, b'\n', &mut buf)?;
    if buf.pop() != Some(b'\n') {
        return Ok(None);
    }
    Ok(Some(buf))
}

/// Checks a candidate key line against the ledger record it names: the
/// record at `o` must be an accepted steering entry whose index lines
/// include this exact line.
fn vouched(ledger: &mut File, line: &Value, ledger_len: u64, max_record: u64) -> io::Result<bool> {
    let Some(off) = line.get("o").and_then(Value::as_u64) else {
        return Ok(false);
    };
    if off >= ledger_len {
        return Ok(false);
    }
    let Some(rec) = journal::record_at(ledger, off, max_record)? else {
        return Ok(false);
    };
    if off + rec.len() as u64 >= ledger_len {
        return Ok(false);
    }
    let Ok(entry) = serde_json::from_slice::<Value>(&rec) else {
        return Ok(false);
    };
    Ok(journal::keys_of(&entry, Some(off))
        .iter()
        .any(|k| &k.0 == line))
}

/// Where a lookup reads.
pub(crate) struct Sources<'a> {
    /// The state directory.
    pub dir: &'a Dir,
    /// `.ledger.keys` bytes the ledger index vouches for.
    pub keys_bytes: u64,
    /// Ledger bytes of complete records.
    pub ledger_len: u64,
    /// Largest ledger record read.
    pub max_record: u64,
}

/// Offsets of the slots tagged like `key`, up to the first empty slot.
fn probe(table: &mut File, h: &Header, key: &str) -> io::Result<Vec<u64>> {
    let t = tag(key);
    let mask = h.slots - 1;
    let mut candidates = Vec::new();
    let mut i = t & mask;
    let mut seen = 0u64;
    while seen < h.slots {
        let n = PROBE_CHUNK.min(h.slots - i);
        let mut chunk = vec![0u8; (n * SLOT) as usize];
        table.seek(SeekFrom::Start(HEADER + i * SLOT))?;
        table.read_exact(&mut chunk)?;
        for s in chunk.chunks_exact(SLOT as usize) {
            let st = u64::from_le_bytes(s[..8].try_into().expect("8"));
            if st == 0 {
                return Ok(candidates);
            }
            if st == t {
                candidates.push(u64::from_le_bytes(s[8..].try_into().expect("8")));
            }
            seen += 1;
            if seen >= h.slots {
                break;
            }
        }
        i = (i + n) & mask;
    }
    Ok(candidates)
}

/// Looks `key` up: probes the table, reads each candidate line, and checks
/// every line carrying the key against its ledger record.
pub(crate) fn lookup(src: &Sources<'_>, key: &str) -> io::Result<Lookup> {
    if src.keys_bytes == 0 {
        return Ok(Lookup::Found(None));
    }
    let mut table = match open_nofollow(src.dir, FILE, false) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Lookup::Stale),
        Err(e) => return Err(e),
    };
    let Some(h) = read_header(&mut table)? else {
        return Ok(Lookup::Stale);
    };
    if h.keys_bytes != src.keys_bytes {
        return Ok(Lookup::Stale);
    }
    let mut candidates = probe(&mut table, &h, key)?;
    if candidates.is_empty() {
        return Ok(Lookup::Found(None));
    }
    candidates.sort_unstable();
    candidates.dedup();
    let Ok(mut keys) = open_nofollow(src.dir, super::state::KEYS, false) else {
        return Ok(Lookup::Inconsistent);
    };
    let mut ledger = match open_nofollow(src.dir, super::state::LEDGER, false) {
        Ok(f) => Some(f),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    for off in candidates {
        let Some(bytes) = line_at(&mut keys, off, src.keys_bytes)? else {
            return Ok(Lookup::Inconsistent);
        };
        let Ok(line) = serde_json::from_slice::<Value>(&bytes) else {
            return Ok(Lookup::Inconsistent);
        };
        match line.get("k").and_then(Value::as_str) {
            // A tag collision with another key: not this key's entry.
            Some(k) if k != key => continue,
            Some(_) => {}
            None => return Ok(Lookup::Inconsistent),
        }
        let Some(ledger) = ledger.as_mut() else {
            return Ok(Lookup::Inconsistent);
        };
        if !vouched(ledger, &line, src.ledger_len, src.max_record)? {
            return Ok(Lookup::Inconsistent);
        }
        return Ok(Lookup::Found(Some(line)));
    }
    Ok(Lookup::Found(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary state directory (kept while the first is alive).
    #[allow(clippy::disallowed_methods)] // a test's temporary directory
    fn temp_dir() -> (tempfile::TempDir, Dir) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        (tmp, dir)
    }

    #[test]
    fn a_candidate_line_is_read_without_the_history_after_it() {
        let (_tmp, d) = temp_dir();
        let mut text = Vec::new();
        let mut offsets = Vec::new();
        for i in 0..2000 {
            offsets.push(text.len() as u64);
            text.extend_from_slice(format!("{{\"k\":\"k:{i}\",\"s\":{i}}}\n").as_bytes());
        }
        // A last line without its newline: not a line.
        let partial = text.len() as u64;
        text.extend_from_slice(b"{\"k\":\"k:cut\"");
        d.write("keys", &text).unwrap();
        let mut f = d.open("keys").unwrap();
        let all = text.len() as u64;
        for &i in &[0usize, 1, 999, 1999] {
            let line = line_at(&mut f, offsets[i], all).unwrap().unwrap();
            assert_eq!(line, format!("{{\"k\":\"k:{i}\",\"s\":{i}}}").into_bytes());
            // Read up to one buffer past the line's start, never to the end
            // of the file (before, a lookup read all of it: up to 256 KiB).
            let pos = f.stream_position().unwrap();
            assert!(
                pos <= offsets[i] + LINE_READ as u64,
                "read to {pos} for a line at {}",
                offsets[i]
            );
        }
        assert_eq!(line_at(&mut f, partial, all).unwrap(), None);
        // The bytes the index vouches for end before the last line's newline.
        assert_eq!(
            line_at(&mut f, offsets[1999], all - 2 - (all - partial)).unwrap(),
            None
        );
        assert_eq!(line_at(&mut f, all, all).unwrap(), None);

        // A line longer than one buffer (the agent can write this file) is
        // read whole across buffers; one longer than the limit is not a line.
        for (len, whole) in [(LINE_READ * 5 + 7, true), (MAX_LINE as usize + 1, false)] {
            let long = format!("{{\"k\":\"k:long\",\"x\":\"{}\"}}", "a".repeat(len));
            let text = format!("{long}\n{{\"k\":\"k:next\"}}\n");
            d.write("long", text.as_bytes()).unwrap();
            let mut f = d.open("long").unwrap();
            let got = line_at(&mut f, 0, text.len() as u64).unwrap();
            assert_eq!(got, whole.then(|| long.clone().into_bytes()), "{len}");
        }
    }

    #[test]
    fn header_round_trips_and_rejects_bad_sizes() {
        let h = Header {
            slots: 1024,
            used: 3,
            keys_bytes: 99,
        };
        let b = h.encode();
        assert_eq!(Header::decode(&b, HEADER + 1024 * SLOT), Some(h));
        assert_eq!(Header::decode(&b, HEADER + 1023 * SLOT), None);
        let over = Header {
            slots: 1024,
            used: 513,
            keys_bytes: 0,
        };
        assert_eq!(Header::decode(&over.encode(), HEADER + 1024 * SLOT), None);
    }

    #[test]
    fn tags_are_never_zero_and_build_places_every_entry() {
        let entries: Vec<(u64, u64)> = (0..3000u64)
            .map(|i| (tag(&format!("k:{i}")), i * 10))
            .collect();
        assert!(entries.iter().all(|(t, _)| *t != 0));
        let table = build(&entries, 30_000);
        let used = table[HEADER as usize..]
            .chunks_exact(SLOT as usize)
            .filter(|s| s[..8] != [0; 8])
            .count();
        assert_eq!(used, 3000);
        let h = Header::decode(
            table[..HEADER as usize].try_into().unwrap(),
            table.len() as u64,
        )
        .unwrap();
        assert_eq!(h.used, 3000);
        assert!(h.slots >= 6000);
    }

    #[test]
    fn appends_grow_the_table_and_every_key_stays_reachable() {
        let (_tmp, dir) = temp_dir();
        let mut keys = Vec::new();
        let mut offsets = Vec::new();
        // 700 keys in batches of 7: past half of the first 1,024 slots.
        for batch in 0..100 {
            let old = keys.len() as u64;
            let mut appended = Vec::new();
            for j in 0..7 {
                offsets.push(old + appended.len() as u64);
                let line = format!("{{\"k\":\"k:n{}\",\"d\":null}}\n", batch * 7 + j);
                appended.extend_from_slice(line.as_bytes());
            }
            keys.extend_from_slice(&appended);
            dir.write(super::super::state::KEYS, &keys).unwrap();
            append(&dir, old, &appended).unwrap();
        }
        let mut f = open_nofollow(&dir, FILE, false).unwrap();
        let h = read_header(&mut f).unwrap().unwrap();
        assert_eq!(h.used, 700);
        assert_eq!(h.keys_bytes, keys.len() as u64);
        assert!(h.slots >= 2048, "{h:?}");
        for (i, off) in offsets.iter().enumerate() {
            assert_eq!(probe(&mut f, &h, &format!("k:n{i}")).unwrap(), vec![*off]);
        }
        assert!(probe(&mut f, &h, "k:absent").unwrap().is_empty());
        // A table that does not cover the key bytes it is told about is
        // rebuilt from `.ledger.keys` (here: its first 30 bytes, one line).
        append(&dir, 10, &keys[10..30]).unwrap();
        let mut f = open_nofollow(&dir, FILE, false).unwrap();
        let h = read_header(&mut f).unwrap().unwrap();
        assert_eq!((h.used, h.keys_bytes), (1, 30));
    }

    #[test]
    fn entries_of_offsets_follow_the_lines() {
        let keys = b"{\"k\":\"k:a\",\"d\":null}\nnot json\n{\"k\":\"p:b\"}\n";
        let e = entries_of(keys, 100);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0], (tag("k:a"), 100));
        assert_eq!(e[1], (tag("p:b"), 100 + 21 + 9));
    }
}
