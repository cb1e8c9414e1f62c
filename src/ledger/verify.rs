//! Full chain verification (docs/state-formats.md#ge-2), streaming line by line.

use std::collections::BTreeMap;
use std::io::{self, BufRead};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};

use serde_json::{Value, json};

use super::{ZERO_HASH, chain_fields, is_record, record_hash};
use crate::finding::{Code, Finding, Severity};
use crate::json::{Members, object_members};

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

/// Threads [`verify_chain`] uses for hashing and parsing records: 0 (the
/// default) means the machine's available parallelism. Set once by a
/// binary (`EVIDENCE_GATE_AUDIT_THREADS`), so a benchmark can time the same
/// code on one thread.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Sets the number of threads [`verify_chain`] uses (0: all cores).
pub fn set_verify_threads(n: usize) {
    THREADS.store(n, Ordering::Relaxed);
}

fn verify_threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(8),
        n => n,
    }
}

/// Bytes of whole lines handed to a worker at a time.
const BLOCK: usize = 1024 * 1024;

/// One physical line, hashed and parsed off the sequential path, with what
/// the caller's `extract` read of it there.
struct Prepared<T> {
    /// Bytes consumed, with the `\n`.
    n: u64,
    terminated: bool,
    /// Bytes of the line without the `\n`.
    len: usize,
    /// The line holds a non-whitespace byte.
    record: bool,
    /// Hash of the line, 64 hex digits (records only; zeros otherwise).
    /// Kept inline: a string made on a worker and freed on the caller's
    /// thread would be reused there from a cold cache line.
    hash: Hex64,
    /// The line parsed as a JSON object (records only).
    object: bool,
    /// The parsed object, when the caller's `extract` asked to keep it (or
    /// it is the block's first object): dropped on the worker otherwise,
    /// while it is still in that core's cache.
    value: Option<Value>,
    /// Its chain fields and `revision`, read where it was parsed: the
    /// caller's thread links them without walking the tree another thread
    /// built (each lookup there was a cache miss).
    fields: Fields,
    /// The caller's `extract` of the parsed record.
    extra: Option<T>,
}

/// A SHA-256 as 64 lowercase hex digits.
type Hex64 = [u8; 64];

/// `hex` (64 hex digits, as [`record_hash`] and [`chain_fields`] give) as a
/// string.
fn hex_str(hex: &Hex64) -> &str {
    // (ASCII: every byte is a hex digit.)
    std::str::from_utf8(hex).unwrap_or_default()
}

/// [`record_hash`] of `line`, inline.
fn line_hash(line: &[u8]) -> Hex64 {
    let mut hex = [0u8; 64];
    hex.copy_from_slice(record_hash(line).as_bytes());
    hex
}

/// A record's [`chain_fields`] (`seq` and the 64-hex `prev`) and its
/// `revision` as an unsigned integer.
#[derive(Default)]
struct Fields {
    chain: Option<(u64, Hex64)>,
    revision: Option<u64>,
}

impl Fields {
    fn of(v: &Value) -> Fields {
        Fields {
            chain: chain_fields(v).map(|(seq, prev)| {
                let mut hex = [0u8; 64];
                // `chain_fields` accepts only 64 hex digits.
                hex.copy_from_slice(prev.as_bytes());
                (seq, hex)
            }),
            revision: v.get("revision").and_then(Value::as_u64),
        }
    }
}

/// The members [`Fields::of`] reads.
const CHAIN_MEMBERS: [&str; 3] = ["seq", "prev", "revision"];

/// The top-level members a worker builds of each record: the chain's and
/// those `extract` names (`None`: every member).
fn members_to_build<'a>(extract: &Extract<'a, impl Sized>) -> Option<Vec<&'a str>> {
    let mut keys: Vec<&str> = extract.members?.to_vec();
    for k in CHAIN_MEMBERS {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    Some(keys)
}

/// `line` parsed as a JSON object: its members named in `members` (all
/// when `None`), and whether the tree holds all of them.
fn parse_object(line: &[u8], members: Option<&[&str]>) -> Option<(Value, bool)> {
    match members {
        None => serde_json::from_slice::<Value>(line)
            .ok()
            .filter(Value::is_object)
            .map(|v| (v, true)),
        Some(keys) => match object_members(line, keys) {
            Members::Chosen(m) => Some((Value::Object(m), false)),
            Members::Whole(m) => Some((Value::Object(m), true)),
            Members::NotObject => None,
        },
    }
}

fn prepare<T>(
    block: &[u8],
    extract: &Extract<'_, T>,
    members: Option<&[&str]>,
) -> Vec<Prepared<T>> {
    let mut first = true;
    block
        .split_inclusive(|&b| b == b'\n')
        .map(|raw| {
            let terminated = raw.last() == Some(&b'\n');
            let line = if terminated {
                &raw[..raw.len() - 1]
            } else {
                raw
            };
            let record = is_record(line);
            let (hash, parsed) = if record {
                (line_hash(line), parse_object(line, members))
            } else {
                ([0u8; 64], None)
            };
            let object = parsed.is_some();
            let fields = parsed
                .as_ref()
                .map(|(v, _)| Fields::of(v))
                .unwrap_or_default();
            let (extra, keep) = match parsed.as_ref() {
                Some((v, _)) => {
                    let (t, keep) = (extract.read)(v);
                    (Some(t), keep)
                }
                None => (None, false),
            };
            // The block's first object is kept whatever `extract` says, so
            // that the ledger's first object always is. A kept tree is the
            // whole record: one built of some members is parsed again.
            let value = parsed
                .filter(|_| keep || std::mem::take(&mut first))
                .map(|(v, whole)| {
                    if whole {
                        v
                    } else {
                        // `object_members` read this line as an object, so
                        // the `Value` parse does too.
                        serde_json::from_slice::<Value>(line).unwrap_or(v)
                    }
                });
            Prepared {
                n: raw.len() as u64,
                terminated,
                len: line.len(),
                record,
                hash,
                object,
                value,
                fields,
                extra,
            }
        })
        .collect()
}

/// Reads whole lines into `block` until it holds at least [`BLOCK`] bytes
/// or the input ends; `false` at the end of the input. The input is taken
/// in the reader's buffers, not line by line: the bytes after the last
/// newline read are left in `carry` and begin the next block (a line longer
/// than a block is read to its end).
fn fill(r: &mut dyn BufRead, block: &mut Vec<u8>, carry: &mut Vec<u8>) -> io::Result<bool> {
    block.append(carry);
    while block.len() < BLOCK {
        let buf = match r.fill_buf() {
            Ok(buf) => buf,
            // As `read_until` does: a read interrupted by a signal is retried.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            // The end: whatever is left, a torn or unterminated line included.
            return Ok(!block.is_empty());
        }
        // (A reader over a slice hands out all of it at once.)
        let n = buf.len().min(BLOCK - block.len());
        block.extend_from_slice(&buf[..n]);
        r.consume(n);
    }
    match crate::scan::rfind_byte(b'\n', block) {
        Some(last) => carry.extend_from_slice(&block[last + 1..]),
        None => {
            r.read_until(b'\n', block)?;
            return Ok(true);
        }
    }
    block.truncate(block.len() - carry.len());
    Ok(true)
}

/// Verifies every record of a ledger; `visit` sees each parsed record with its
/// line number (callers collect `files` arrays, kinds, completion entries).
///
/// Hashing and parsing, the bulk of the work, run on worker threads over
/// blocks of whole lines; linking the chain and `visit` stay sequential, in
/// file order, on the caller's thread, so findings and visits are the same
/// whatever the number of threads.
pub fn verify_chain(
    r: &mut dyn BufRead,
    foreign: ForeignSeverity,
    visit: &mut dyn FnMut(u64, &Value),
) -> io::Result<ChainReport> {
    verify_chain_split(r, foreign, &Extract::WHOLE, &mut |line, v, ()| {
        visit(line, v)
    })
}

/// What a split visit reads of a record where it was parsed
/// ([`verify_chain_split`]).
pub(crate) struct Extract<'a, T> {
    /// The top-level members `read` looks at (`None`: any). Only these, and
    /// the chain's own, are built of a record for `read`; a record whose
    /// tree `fold` needs is parsed whole.
    pub members: Option<&'a [&'a str]>,
    /// What `fold` needs of a record, and whether it needs the record's
    /// tree too.
    pub read: &'a (dyn Fn(&Value) -> (T, bool) + Sync + 'a),
}

impl Extract<'static, ()> {
    /// Every record's whole tree, kept for the visit ([`verify_chain`]).
    pub(crate) const WHOLE: Extract<'static, ()> = Extract {
        members: None,
        read: &|_| ((), true),
    };
    /// Nothing but the chain's members: for a caller that needs only the
    /// chain's verdict.
    pub(crate) const CHAIN: Extract<'static, ()> = Extract {
        members: Some(&[]),
        read: &|_| ((), false),
    };
}

/// The tree `fold` sees for a record `extract` did not keep.
static NOT_KEPT: Value = Value::Null;

/// [`verify_chain`] whose visit is split in two: `extract` runs where a
/// record is parsed (on a worker) and says whether `fold` needs the
/// record's tree; `fold` sees the record's line, its tree (`Value::Null`
/// unless `extract` kept it; the ledger's first object is always kept) and
/// what `extract` made of it, in file order on the caller's thread. A caller
/// that reads many fields of every record reads them in `extract`, where the
/// tree is in the cache, and the tree is freed there too.
pub(crate) fn verify_chain_split<T: Send>(
    r: &mut dyn BufRead,
    foreign: ForeignSeverity,
    extract: &Extract<'_, T>,
    fold: &mut dyn FnMut(u64, &Value, T),
) -> io::Result<ChainReport> {
    verify_chain_with(r, foreign, extract, fold, verify_threads())
}

/// [`verify_chain_split`] on `threads` threads (fewer than 2: on the
/// caller's).
fn verify_chain_with<T: Send>(
    r: &mut dyn BufRead,
    foreign: ForeignSeverity,
    extract: &Extract<'_, T>,
    visit: &mut dyn FnMut(u64, &Value, T),
    threads: usize,
) -> io::Result<ChainReport> {
    let mut link = Link::new(foreign);
    let members = members_to_build(extract);
    let members = members.as_deref();
    if threads < 2 {
        let mut block = Vec::with_capacity(BLOCK + 64 * 1024);
        let mut carry = Vec::new();
        loop {
            block.clear();
            if !fill(r, &mut block, &mut carry)? {
                break;
            }
            for mut p in prepare(&block, extract, members) {
                if !link.line(&mut p, visit) {
                    return Ok(link.finish());
                }
            }
        }
        return Ok(link.finish());
    }
    let (work_tx, work_rx) = mpsc::channel::<(u64, Vec<u8>)>();
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<Done<T>>();
    // Blocks the workers have parsed go back to the caller, which reads the
    // next ones into them: a fresh 1 MiB block each time was fresh pages
    // the caller's thread faulted in and zeroed before copying into them.
    let (spent_tx, spent_rx) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let mut free = Vec::with_capacity(threads);
        for worker in 0..threads {
            let done_tx = done_tx.clone();
            let spent_tx = spent_tx.clone();
            let work_rx = &work_rx;
            // Each worker frees the lines it parsed once the caller has
            // linked them: freeing was half of the caller's sequential work,
            // and memory goes back to the allocator arena it came from.
            let (free_tx, free_rx) = mpsc::channel::<Vec<Prepared<T>>>();
            free.push(free_tx);
            scope.spawn(move || {
                loop {
                    while let Ok(lines) = free_rx.try_recv() {
                        drop(lines);
                    }
                    // The lock is held only while taking the next block.
                    let job = match work_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok((id, block)) = job else { break };
                    let lines = prepare(&block, extract, members);
                    let _ = spent_tx.send(block);
                    if done_tx.send(Done { id, worker, lines }).is_err() {
                        break;
                    }
                }
                // The caller drops its senders when it is done.
                for lines in free_rx {
                    drop(lines);
                }
            });
        }
        drop(done_tx);
        drop(spent_tx);
        let result = feed(r, &work_tx, &done_rx, &spent_rx, &free, &mut link, visit);
        // Dropping the senders ends the workers; blocks still queued are
        // prepared and discarded.
        drop(work_tx);
        drop(free);
        result
    })?;
    Ok(link.finish())
}

/// A block of prepared lines, from worker `worker`.
struct Done<T> {
    id: u64,
    worker: usize,
    lines: Vec<Prepared<T>>,
}

/// The caller's side of the parallel scan: keeps up to two blocks per
/// worker in flight, links the prepared lines in file order.
fn feed<T>(
    r: &mut dyn BufRead,
    work: &mpsc::Sender<(u64, Vec<u8>)>,
    done: &mpsc::Receiver<Done<T>>,
    spent: &mpsc::Receiver<Vec<u8>>,
    free: &[mpsc::Sender<Vec<Prepared<T>>>],
    link: &mut Link,
    visit: &mut dyn FnMut(u64, &Value, T),
) -> io::Result<()> {
    let threads = free.len() as u64;
    let mut sent = 0u64;
    let mut next = 0u64;
    let mut ready: BTreeMap<u64, Done<T>> = BTreeMap::new();
    let mut input_done = false;
    let mut carry = Vec::new();
    loop {
        while !input_done && sent - next < 2 * threads {
            let mut block = match spent.try_recv() {
                Ok(mut b) => {
                    b.clear();
                    b
                }
                Err(_) => Vec::with_capacity(BLOCK + 64 * 1024),
            };
            if fill(r, &mut block, &mut carry)? {
                if work.send((sent, block)).is_err() {
                    return Err(io::Error::other("a ledger verification worker stopped"));
                }
                sent += 1;
            } else {
                input_done = true;
            }
        }
        if next == sent {
            return Ok(());
        }
        let mut block = loop {
            if let Some(d) = ready.remove(&next) {
                break d;
            }
            match done.recv() {
                Ok(d) => {
                    ready.insert(d.id, d);
                }
                // A worker panicked: the scope re-raises it.
                Err(_) => return Err(io::Error::other("a ledger verification worker stopped")),
            }
        };
        next += 1;
        for p in &mut block.lines {
            if !link.line(p, visit) {
                return Ok(());
            }
        }
        // A worker that has stopped leaves the lines to be freed here.
        if let Some(tx) = free.get(block.worker) {
            let _ = tx.send(block.lines);
        }
    }
}

/// The sequential half of verification: the chain link between records.
struct Link {
    rep: ChainReport,
    foreign: ForeignSeverity,
    line_no: u64,
    prev_hash: Option<Hex64>,
    /// Hash of the last terminated record ([`ChainReport::head`]).
    head: Option<Hex64>,
    chain_started: bool,
    last_chained_seq: Option<u64>,
    max_revision: Option<u64>,
    legacy_before: u64,
}

impl Link {
    fn new(foreign: ForeignSeverity) -> Link {
        Link {
            rep: ChainReport::default(),
            foreign,
            line_no: 0,
            prev_hash: None,
            head: None,
            chain_started: false,
            last_chained_seq: None,
            max_revision: None,
            legacy_before: 0,
        }
    }

    /// Links one line; `false` when verification stops (a torn tail).
    fn line<T>(&mut self, p: &mut Prepared<T>, visit: &mut dyn FnMut(u64, &Value, T)) -> bool {
        let rep = &mut self.rep;
        rep.bytes += p.n;
        self.line_no += 1;
        let line_no = self.line_no;
        if !p.record {
            return true;
        }
        if !p.terminated {
            let (code, msg) = if p.object {
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
                    .with_detail(json!({"line": line_no, "bytes": p.len})),
                line: Some(line_no),
                seq: None,
            });
            if code == Code::LedgerTornTail {
                return false;
            }
        }
        rep.records += 1;
        let hash = p.hash;
        match p.object.then(|| p.value.as_ref().unwrap_or(&NOT_KEPT)) {
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
                if let Some((seq, prev)) = &p.fields.chain {
                    let seq = *seq;
                    let prev = hex_str(prev);
                    rep.chained += 1;
                    if !self.chain_started && self.legacy_before > 0 {
                        let legacy_before = self.legacy_before;
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
                    let expected_prev = self.prev_hash.as_ref().map_or(ZERO_HASH, hex_str);
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
                    let last_chained_seq = self.last_chained_seq;
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
                    if let Some(rev) = p.fields.revision {
                        let max_revision = self.max_revision;
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
                        self.max_revision = Some(max_revision.map_or(rev, |m| m.max(rev)));
                        rep.last_revision = Some(rev);
                    }
                    self.chain_started = true;
                    self.last_chained_seq = Some(seq);
                    rep.last_seq = Some(seq);
                } else if !self.chain_started {
                    self.legacy_before += 1;
                } else {
                    let sev = match self.foreign {
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
                if let Some(extra) = p.extra.take() {
                    visit(line_no, v, extra);
                }
            }
        }
        if p.terminated {
            self.head = Some(hash);
        }
        self.prev_hash = Some(hash);
        true
    }

    fn finish(mut self) -> ChainReport {
        let rep = &mut self.rep;
        rep.head = self.head.as_ref().map(|h| hex_str(h).to_owned());
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
        self.rep
    }
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
    fn threads_do_not_change_findings_or_visits() {
        // Several blocks of records with every kind of damage spread over
        // them, ending in a torn tail.
        let pad = "p".repeat(300);
        let many: Vec<Map<String, Value>> = (0..12_000)
            .map(|i| {
                serde_json::from_value(
                    json!({"kind": "k", "i": i, "revision": i % 5000, "pad": pad}),
                )
                .unwrap()
            })
            .collect();
        let (mut bytes, _) = chain_records(0, None, &many);
        assert!(bytes.len() > 3 * BLOCK);
        let mut cut = |at: usize, with: &[u8]| {
            let line_start = bytes[..at].iter().rposition(|&b| b == b'\n').unwrap() + 1;
            bytes.splice(line_start..line_start, with.iter().copied());
        };
        cut(BLOCK / 2, b"{\"foreign\":true}\n");
        cut(BLOCK + 17, b"[1,2]\n\n   \n");
        cut(2 * BLOCK + 5, b"not json\n");
        let i = 3 * BLOCK / 2;
        bytes[i] = if bytes[i] == b'p' { b'q' } else { b'p' };
        bytes.extend_from_slice(b"{\"torn");
        let run = |threads, members: Option<&[&str]>| {
            let mut seen = Vec::new();
            let rep = verify_chain_with(
                &mut &bytes[..],
                ForeignSeverity::Warning,
                &Extract {
                    members,
                    read: &|v| (v.get("i").and_then(Value::as_u64), true),
                },
                &mut |line, v, i| seen.push((line, v.clone(), i)),
                threads,
            )
            .unwrap();
            (rep, seen)
        };
        let (one, one_seen) = run(1, None);
        assert!(one.findings.len() >= 5, "{:?}", one.findings);
        for threads in [1, 2, 3, 8] {
            for members in [None, Some(&["i"][..]), Some(&["seq", "i", "pad"][..])] {
                let (many, many_seen) = run(threads, members);
                assert_eq!(many, one, "{threads} threads, {members:?}");
                assert_eq!(many_seen, one_seen, "{threads} threads, {members:?}");
            }
        }
    }

    /// A split visit sees every record's facts in order whatever the threads;
    /// the tree of a record `extract` did not keep is `Null`, but the
    /// ledger's first object is always there.
    #[test]
    fn a_split_visit_keeps_the_trees_it_asks_for_and_the_first() {
        let pad = "p".repeat(300);
        let many: Vec<Map<String, Value>> = (0..9_000)
            .map(|i| serde_json::from_value(json!({"kind": "k", "i": i, "pad": pad})).unwrap())
            .collect();
        let (chained, _) = chain_records(0, None, &many);
        // A first block of lines that are no objects, so that the ledger's
        // first object is not the first line.
        let mut bytes = b"[1]\n".repeat(BLOCK / 4 + 1);
        bytes.extend_from_slice(&chained);
        let run = |threads| {
            let mut seen = Vec::new();
            let rep = verify_chain_with(
                &mut &bytes[..],
                ForeignSeverity::Warning,
                &Extract {
                    members: Some(&["i"]),
                    read: &|v| {
                        // Only the members asked for, and the chain's, are built.
                        assert!(v.get("pad").is_none() && v.get("kind").is_none());
                        assert!(v.get("seq").is_some() && v.get("prev").is_some());
                        let i = v.get("i").and_then(Value::as_u64).unwrap();
                        (i, i % 1000 == 7)
                    },
                },
                &mut |line, v, i| {
                    // A kept tree is the whole record.
                    assert!(v.is_null() || v.get("pad").is_some());
                    seen.push((line, i, v.get("i").and_then(Value::as_u64)))
                },
                threads,
            )
            .unwrap();
            (rep, seen)
        };
        let (one, one_seen) = run(1);
        assert_eq!(one_seen.len(), 9_000);
        // The first object, and every kept one, carries its tree.
        assert_eq!(one_seen[0].2, Some(0));
        for (_, i, tree) in &one_seen {
            if i % 1000 == 7 {
                assert_eq!(*tree, Some(*i));
            } else if let Some(t) = tree {
                assert_eq!(t, i);
            }
        }
        assert!(one_seen.iter().filter(|s| s.2.is_none()).count() > 8_000);
        for threads in [2, 3] {
            let (many, many_seen) = run(threads);
            assert_eq!(many, one, "{threads} threads");
            assert_eq!(
                many_seen.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(),
                one_seen.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>()
            );
            assert_eq!(many_seen[0].2, Some(0));
        }
    }

    /// A reader whose every third `fill_buf` is interrupted by a signal.
    struct Interrupting<R> {
        inner: R,
        calls: usize,
    }

    impl<R: BufRead> std::io::Read for Interrupting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.inner.read(buf)
        }
    }

    impl<R: BufRead> BufRead for Interrupting<R> {
        fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
            self.calls += 1;
            if self.calls.is_multiple_of(3) {
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            self.inner.fill_buf()
        }
        fn consume(&mut self, n: usize) {
            self.inner.consume(n)
        }
    }

    /// `fill` hands out the input whole, in blocks of whole lines (the last
    /// may end without a newline), whatever the reader's buffer and however
    /// long the lines, one several blocks long included; a read interrupted
    /// by a signal is retried.
    #[test]
    fn blocks_are_whole_lines_of_the_input() {
        let mut state = 7u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..12 {
            let mut input = Vec::new();
            while input.len() < 3 * BLOCK {
                let len = match next() % 10 {
                    0 => (next() % (3 * BLOCK as u64)) as usize,
                    1 => 0,
                    _ => (next() % 900) as usize,
                };
                input.extend(std::iter::repeat_n(b'x', len));
                input.push(b'\n');
            }
            if case % 2 == 1 {
                input.extend_from_slice(b"{\"torn");
            }
            for capacity in [7, 4096, 256 * 1024] {
                let mut slice = &input[..];
                let mut buffered = std::io::BufReader::with_capacity(capacity, &input[..]);
                let mut interrupted = Interrupting {
                    inner: std::io::BufReader::with_capacity(capacity, &input[..]),
                    calls: 0,
                };
                let readers: [&mut dyn BufRead; 3] = [&mut slice, &mut buffered, &mut interrupted];
                for r in readers {
                    let (mut out, mut carry, mut blocks) = (Vec::new(), Vec::new(), Vec::new());
                    loop {
                        let mut block = Vec::new();
                        if !fill(r, &mut block, &mut carry).unwrap() {
                            break;
                        }
                        out.extend_from_slice(&block);
                        blocks.push(block);
                    }
                    assert_eq!(out, input, "case {case}, capacity {capacity}");
                    let (last, rest) = blocks.split_last().unwrap();
                    for b in rest {
                        assert_eq!(b.last(), Some(&b'\n'));
                    }
                    assert_eq!(last.last() == Some(&b'\n'), case % 2 == 0);
                    assert!(blocks.len() >= 3 && blocks.iter().all(|b| !b.is_empty()));
                }
            }
        }
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
