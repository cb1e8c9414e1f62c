//! `ledger.jsonl` file operations on top of the shared hash chain
//! ([`crate::ledger`]): the head of the ledger (last record, last chained
//! `seq`/`revision`, record count), incremental and full scans, chained
//! appends in one write, and backwards reading of the last records.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

use cap_std::fs::{Dir, File};
use serde_json::{Map, Value};

use super::error::GoalError;
use crate::ledger;

crate::wire::wire_enum!(
    /// The `kind` of an entry the engine writes to a goal ledger: the one
    /// list its writers and its readers (the engine's recovery and repair,
    /// the steering index, `verify-evidence`) share. A profile may name
    /// further audit-only kinds (`compat.resumeEntry`,
    /// `compat.reviewFailedEntry`); no reader interprets those.
    pub LedgerKind {
        PlanCreated = "plan_created",
        PlanArchived = "plan_archived",
        GoalAdded = "goal_added",
        GoalStarted = "goal_started",
        GoalRetried = "goal_retried",
        GoalCompleted = "goal_completed",
        GoalBlocked = "goal_blocked",
        GoalFailed = "goal_failed",
        GoalNeedsUserDecision = "goal_needs_user_decision",
        GoalReviewBlocked = "goal_review_blocked",
        AggregateCompleted = "aggregate_completed",
        AggregateObjectiveMigrated = "aggregate_objective_migrated",
        BatchClosed = "batch_closed",
        BatchUpdated = "batch_updated",
        BlockerRecorded = "blocker_recorded",
        EvidenceCaptured = "evidence_captured",
        CriterionFailed = "criterion_failed",
        CriterionBlocked = "criterion_blocked",
        CriteriaRevised = "criteria_revised",
        SteeringAccepted = "steering_accepted",
        SteeringRejected = "steering_rejected",
        SteeringDeduped = "steering_deduped",
        LedgerRepaired = "ledger_repaired",
        TamperAcknowledged = "tamper_acknowledged",
    }
);

/// The engine's kind of a ledger entry: `kind` (`event` in Ultragoal-style
/// ledgers, docs/state-formats.md#ge-2); `None` for an entry without one or
/// of a kind the engine does not write.
pub(crate) fn kind_of(entry: &Value) -> Option<LedgerKind> {
    entry
        .get("kind")
        .or_else(|| entry.get("event"))
        .and_then(Value::as_str)
        .and_then(LedgerKind::parse)
}

/// What the engine needs to know about the end of a ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    /// Bytes up to and including the last `\n` (the complete records).
    pub len: u64,
    /// Number of complete records.
    pub records: u64,
    /// `seq` of the last chained record (0: none).
    pub last_seq: u64,
    /// `revision` of the last chained record (0: none).
    pub last_revision: u64,
    /// Offset of the last complete record.
    pub last_offset: Option<u64>,
    /// SHA-256 of the last complete record (the next `prev`).
    pub last_hash: Option<String>,
}

/// A key line of `.ledger.keys` (docs/state-formats.md#ge-2).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyLine(pub Value);

impl Head {
    /// Folds one complete record at `offset` into the head, and its index
    /// keys into `keys`: what a scan of a region gives, record by record
    /// (the scans' tests compare with it).
    #[cfg(test)]
    fn absorb(&mut self, offset: u64, line: &[u8], keys: &mut Vec<KeyLine>) {
        if !ledger::is_record(line) {
            return;
        }
        self.records += 1;
        self.last_offset = Some(offset);
        self.last_hash = Some(ledger::record_hash(line));
        if let Some(v) = members_of(line, HEAD_MEMBERS) {
            if let Some((seq, _)) = ledger::chain_fields(&v) {
                self.last_seq = seq;
                if let Some(r) = v.get("revision").and_then(Value::as_u64) {
                    self.last_revision = r;
                }
            }
            keys.extend(keys_of(&v, Some(offset)));
        }
    }
}

/// The members of a record a fold reads ([`Head::absorb`]): its chain's
/// ([`ledger::chain_fields`], `revision`) and those [`keys_of`] reads (a
/// unit test checks that they read no other).
const HEAD_MEMBERS: &[&str] = &[
    "seq",
    "prev",
    "revision",
    "kind",
    "event",
    "steering",
    "proposalDigest",
    "mutationKind",
    "idempotencyKey",
];

/// The members of a record the chain's part of a head reads
/// ([`ledger::chain_fields`], `revision`; [`chain_back`]).
const CHAIN_MEMBERS: &[&str] = &["seq", "prev", "revision"];

/// `line` as a JSON object holding the [`HEAD_MEMBERS`] it has (more when it
/// had to be read whole), if it is one.
#[cfg(test)]
fn head_members(line: &[u8]) -> Option<Value> {
    members_of(line, HEAD_MEMBERS)
}

/// `line` as a JSON object holding the `members` it has (more when it had
/// to be read whole), if it is one.
fn members_of(line: &[u8], members: &[&str]) -> Option<Value> {
    match crate::json::object_members(line, members) {
        crate::json::Members::Chosen(m) | crate::json::Members::Whole(m) => Some(Value::Object(m)),
        crate::json::Members::NotObject => None,
    }
}

/// The index keys of one ledger entry: accepted steering entries keyed by
/// idempotency key (`k:`) or prompt signature (`p:`). `offset` (the record's
/// byte offset in the ledger) is kept as `o`, so a dedupe hit can read the
/// prior entry with one seek instead of a scan.
pub(crate) fn keys_of(entry: &Value, offset: Option<u64>) -> Vec<KeyLine> {
    if !matches!(
        kind_of(entry),
        Some(LedgerKind::SteeringAccepted | LedgerKind::CriteriaRevised | LedgerKind::BatchUpdated)
    ) {
        return Vec::new();
    }
    let steering = entry.get("steering");
    let accepted = steering
        .and_then(|s| s.pointer("/invariant/accepted"))
        .and_then(Value::as_bool)
        == Some(true);
    if !accepted {
        return Vec::new();
    }
    let s = steering.expect("accepted implies steering");
    let digest = entry
        .get("proposalDigest")
        .or_else(|| s.get("proposalDigest"))
        .cloned()
        .unwrap_or(Value::Null);
    let targets = s
        .get("targetGoalIds")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let seq = entry.get("seq").cloned().unwrap_or(Value::Null);
    let kind_of = entry.get("mutationKind").cloned().unwrap_or(Value::Null);
    let mut out = Vec::new();
    let mut push = |key: String| {
        let mut line = serde_json::json!({
            "k": key, "d": digest, "s": seq, "m": kind_of, "t": targets
        });
        if let Some(o) = offset {
            line["o"] = serde_json::json!(o);
        }
        out.push(KeyLine(line));
    };
    let idem = entry
        .get("idempotencyKey")
        .or_else(|| s.get("idempotencyKey"))
        .and_then(Value::as_str);
    if let Some(k) = idem {
        push(format!("k:{k}"));
    }
    if let Some(p) = s.get("promptSignature").and_then(Value::as_str) {
        push(format!("p:{p}"));
    }
    out
}

/// The result of reading a ledger region.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scan {
    /// The head after the region.
    pub head: Head,
    /// Bytes after the last `\n` (a torn or unterminated tail).
    pub trailing: Vec<u8>,
    /// Key lines of accepted steering entries in the region.
    pub keys: Vec<KeyLine>,
}

/// Reads `[from, end)` of the ledger, continuing `start` (the head at `from`):
/// the head and trailing bytes [`scan_head_from`] gives, and the index keys
/// of the region's records ([`keys_of`]), in order. A record is decoded for
/// its keys only when it may have a `steering` member
/// ([`ledger::MayHold`]): a record without one has none.
pub(crate) fn scan_from(file: &mut File, start: Head, end: u64) -> io::Result<Scan> {
    let from = start.len;
    let mut scan = scan_head_from(file, start, end)?;
    file.seek(SeekFrom::Start(from))?;
    let complete = scan.head.len - from;
    let mut reader = BufReader::with_capacity(256 * 1024, Read::by_ref(file).take(complete));
    let steering = ledger::MayHold::new("steering");
    let mut offset = from;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if ledger::is_record(line)
            && steering.may_hold(line)
            && let Some(v) = members_of(line, HEAD_MEMBERS)
        {
            scan.keys.extend(keys_of(&v, Some(offset)));
        }
        offset += n as u64;
    }
    Ok(scan)
}

/// [`scan_from`] for a reader that needs the head only (a read-only
/// command without an index): the same head and trailing bytes, no keys.
///
/// Of the head, only the chain's part (`last_seq`, `last_revision`) depends
/// on more than where the records are, and only on the newest chained
/// records. So the region is read forward once to count its records (a
/// line with a byte other than ASCII whitespace, as [`ledger::is_record`]
/// says) without decoding any, its last record is hashed, and the chain's
/// part is read back from the end ([`chain_back`]): for a ledger the engine
/// writes, from its newest record alone.
pub(crate) fn scan_head_from(file: &mut File, start: Head, end: u64) -> io::Result<Scan> {
    let from = start.len;
    let count = count_records(file, from, end)?;
    let mut scan = Scan {
        head: start,
        ..Scan::default()
    };
    if count.complete_end < end {
        ledger::read_exact_at(
            file,
            count.complete_end,
            (end - count.complete_end) as usize,
            &mut scan.trailing,
        )?;
    }
    if let Some((offset, len)) = count.last {
        let mut record = Vec::new();
        ledger::read_exact_at(file, offset, len, &mut record)?;
        let (seq, revision) = chain_back(file, from, count.complete_end)?;
        let head = &mut scan.head;
        head.records += count.records;
        head.last_offset = Some(offset);
        head.last_hash = Some(ledger::record_hash(&record));
        if let Some(s) = seq {
            head.last_seq = s;
        }
        if let Some(r) = revision {
            head.last_revision = r;
        }
    }
    scan.head.len = count.complete_end;
    Ok(scan)
}

/// The records of a ledger region, counted without decoding them.
struct Count {
    /// Records ending in the region.
    records: u64,
    /// The last one's offset and length (without its `\n`).
    last: Option<(u64, usize)>,
    /// Where the region's complete lines end (after its last `\n`).
    complete_end: u64,
}

fn count_records(file: &mut File, from: u64, end: u64) -> io::Result<Count> {
    file.seek(SeekFrom::Start(from))?;
    let mut reader = BufReader::with_capacity(1 << 20, Read::by_ref(file).take(end - from));
    let mut count = Count {
        records: 0,
        last: None,
        complete_end: from,
    };
    let mut pos = from;
    let mut line_start = from;
    // Whether the current line has a byte other than ASCII whitespace.
    let mut content = false;
    loop {
        let buf = reader.fill_buf()?;
        let n = buf.len();
        if n == 0 {
            break;
        }
        let mut at = 0;
        while at < n {
            let Some(i) = crate::scan::find_byte(b'\n', &buf[at..]) else {
                content = content || ledger::is_record(&buf[at..]);
                break;
            };
            content = content || ledger::is_record(&buf[at..at + i]);
            let newline = pos + (at + i) as u64;
            if content {
                count.records += 1;
                count.last = Some((line_start, (newline - line_start) as usize));
            }
            line_start = newline + 1;
            count.complete_end = line_start;
            content = false;
            at += i + 1;
        }
        pos += n as u64;
        reader.consume(n);
    }
    Ok(count)
}

/// `seq` of the newest chained record in `[from, end)` (`end` after a
/// `\n`, `from` a record's start) and `revision` of the newest chained
/// record there that has one: what folding the region's records in turn
/// leaves in a head, `None` for what the region does not set. Reads back
/// from `end` until both are found. A record is decoded only when it may be
/// chained ([`ledger::MayHold::chained`]).
fn chain_back(file: &mut File, from: u64, end: u64) -> io::Result<(Option<u64>, Option<u64>)> {
    let (mut seq, mut revision) = (None, None);
    let chained = ledger::MayHold::chained();
    // From the `\n` before `from`, so that the walk reads the record at
    // `from` and none before it.
    let budget = if from == 0 { end } else { end - from + 1 };
    read_back_within(file, end, budget, |_, line| {
        if !chained.may_hold(line) {
            return true;
        }
        let Some(v) = members_of(line, CHAIN_MEMBERS) else {
            return true;
        };
        let Some((s, _)) = ledger::chain_fields(&v) else {
            return true;
        };
        seq.get_or_insert(s);
        match v.get("revision").and_then(Value::as_u64) {
            Some(r) => {
                revision = Some(r);
                false
            }
            None => true,
        }
    })?;
    Ok((seq, revision))
}

/// Bytes of the record at `offset` (up to its `\n`, at most `max` bytes).
pub(crate) fn record_at(file: &mut File, offset: u64, max: u64) -> io::Result<Option<Vec<u8>>> {
    file.seek(SeekFrom::Start(offset))?;
    let mut reader = BufReader::new(Read::by_ref(file).take(max + 1));
    let mut buf = Vec::new();
    reader.read_until(b'\n', &mut buf)?;
    if buf.last() != Some(&b'\n') {
        return Ok(None);
    }
    buf.pop();
    Ok(Some(buf))
}

/// Records before `end`, newest first, until `keep_going` returns false.
#[cfg(test)]
pub(crate) fn read_back(
    file: &mut File,
    end: u64,
    keep_going: impl FnMut(u64, &[u8]) -> bool,
) -> io::Result<()> {
    read_back_within(file, end, u64::MAX, keep_going).map(|_| ())
}

#[cfg(test)]
thread_local! {
    /// Bytes [`read_back_within`] copied again on this thread (the carried
    /// part of a line longer than a step).
    static CARRIED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// [`read_back`] reading at most the `max_bytes` before `end`: records that
/// begin further back are not read, even in part (a line longer than the
/// budget is never read whole). `Ok(false)` when the walk was cut there
/// (the budget ran out before `keep_going` said stop or the file's start).
pub(crate) fn read_back_within(
    file: &mut File,
    end: u64,
    max_bytes: u64,
    mut keep_going: impl FnMut(u64, &[u8]) -> bool,
) -> io::Result<bool> {
    // The first read is small: most walks stop at the newest records.
    let mut size = 8 * 1024;
    let floor = end.saturating_sub(max_bytes);
    let mut pos = end;
    let mut carry: Vec<u8> = Vec::new();
    let mut chunk: Vec<u8> = Vec::new();
    while pos > 0 {
        if pos == floor {
            return Ok(false);
        }
        // At least as much as the line carried over: a line longer than the
        // reads is read in doubling steps, its start copied a few times, not
        // once per 64 KiB (which was quadratic in its length).
        let step = size.max(carry.len() as u64);
        let start = pos.saturating_sub(step).max(floor);
        size = 64 * 1024;
        ledger::read_exact_at(file, start, (pos - start) as usize, &mut chunk)?;
        #[cfg(test)]
        CARRIED.with(|c| c.set(c.get() + carry.len() as u64));
        chunk.extend_from_slice(&carry);
        pos = start;
        // chunk ends with a complete record's '\n' (or is the whole rest).
        let mut line_end = chunk.len();
        loop {
            if line_end == 0 {
                carry.clear();
                break;
            }
            let body_end = line_end - 1;
            match crate::scan::rfind_byte(b'\n', &chunk[..body_end]) {
                Some(i) => {
                    let line = &chunk[i + 1..body_end];
                    if ledger::is_record(line) && !keep_going(start + i as u64 + 1, line) {
                        return Ok(true);
                    }
                    line_end = i + 1;
                }
                None if pos == 0 => {
                    let line = &chunk[..body_end];
                    if ledger::is_record(line) && !keep_going(0, line) {
                        return Ok(true);
                    }
                    carry.clear();
                    break;
                }
                None => {
                    carry = chunk[..line_end].to_vec();
                    break;
                }
            }
        }
    }
    Ok(true)
}

/// What [`append`] wrote.
#[derive(Debug, Clone)]
pub(crate) struct Appended {
    /// The ledger head after the write.
    pub head: Head,
    /// The records written (with `seq`/`prev`).
    pub written: Vec<Value>,
    /// Index keys of the records written and of foreign records absorbed
    /// before them.
    pub keys: Vec<KeyLine>,
}

fn record_too_large(size: u64, max: u64) -> GoalError {
    GoalError::new(
        super::error::ErrorKind::InputTooLarge {
            flag: "ledger entry".into(),
            size,
            max,
        },
        format!("A ledger entry of {size} bytes exceeds the {max}-byte limit."),
    )
}

/// Entries serialised once as the chained records that follow a head
/// ([`ledger::chain_records`]): a mutation that writes the plan chains its
/// entries before the plan (the plan names the head they make), checks
/// their sizes on the records themselves, and [`append_chained`] writes the
/// same bytes when the ledger still ends at that head.
pub(crate) struct Chain {
    /// The head the records follow: its last `seq` and record hash.
    after: (u64, Option<String>),
    bytes: Vec<u8>,
    recs: Vec<ledger::ChainedRecord>,
}

impl Chain {
    /// `entries` chained after `head`.
    pub(crate) fn after(head: &Head, entries: &[Map<String, Value>]) -> Chain {
        let (bytes, recs) =
            ledger::chain_records(head.last_seq, head.last_hash.as_deref(), entries);
        Chain {
            after: (head.last_seq, head.last_hash.clone()),
            bytes,
            recs,
        }
    }

    /// The last record's `seq` and hash (`None` without entries).
    pub(crate) fn last(&self) -> Option<&ledger::ChainedRecord> {
        self.recs.last()
    }

    /// Refuses records longer than `max_record`, so a mutation can fail
    /// before it replaces the plan: a plan whose `lastMutation` can never
    /// reach the ledger would wedge every later command in the recovery
    /// check.
    pub(crate) fn check_sizes(&self, max_record: u64) -> Result<(), GoalError> {
        match self.recs.iter().find(|r| r.len as u64 > max_record) {
            Some(r) => Err(record_too_large(r.len as u64, max_record)),
            None => Ok(()),
        }
    }

    fn follows(&self, head: &Head) -> bool {
        self.after.0 == head.last_seq && self.after.1 == head.last_hash
    }
}

/// Serialises entries as chained records after `head` and appends them with
/// one write and one data sync.
pub(crate) fn append(
    dir: &Dir,
    display: &str,
    head: &Head,
    entries: Vec<Map<String, Value>>,
    max_record: u64,
) -> Result<Appended, GoalError> {
    append_chained(dir, display, head, entries, None, max_record)
}

/// [`append`] of entries already chained after `head` (`chained`), written
/// as they are when the ledger still ends there; records a Node tool
/// appended meanwhile are absorbed and the entries chained after them.
/// The records written are the entries themselves with `seq` and `prev`
/// set, as the bytes written hold them.
pub(crate) fn append_chained(
    dir: &Dir,
    display: &str,
    head: &Head,
    entries: Vec<Map<String, Value>>,
    chained: Option<Chain>,
    max_record: u64,
) -> Result<Appended, GoalError> {
    if entries.is_empty() {
        return Ok(Appended {
            head: head.clone(),
            written: Vec::new(),
            keys: Vec::new(),
        });
    }
    let (mut file, created) = crate::store::open_append(dir, super::state::LEDGER)
        .map_err(|e| append_error(dir, display, &e))?;
    let (head, mut keys) = resync(&mut file, display, head)?;
    let chain = match chained {
        Some(c) if c.follows(&head) && c.recs.len() == entries.len() => c,
        _ => Chain::after(&head, &entries),
    };
    chain.check_sizes(max_record)?;
    let mut written = Vec::with_capacity(entries.len());
    let mut offsets = Vec::with_capacity(entries.len());
    let mut new_head = head.clone();
    let mut offset = head.len;
    let mut prev = head
        .last_hash
        .clone()
        .unwrap_or_else(|| ledger::ZERO_HASH.to_owned());
    for (mut e, r) in entries.into_iter().zip(&chain.recs) {
        e.shift_remove("seq");
        e.shift_remove("prev");
        e.insert("seq".into(), Value::from(r.seq));
        e.insert(
            "prev".into(),
            Value::String(std::mem::replace(&mut prev, r.hash.clone())),
        );
        new_head.records += 1;
        new_head.last_offset = Some(offset);
        new_head.last_hash = Some(r.hash.clone());
        new_head.last_seq = r.seq;
        if let Some(rev) = e.get("revision").and_then(Value::as_u64) {
            new_head.last_revision = rev;
        }
        offsets.push(offset);
        offset += r.len as u64 + 1;
        written.push(Value::Object(e));
    }
    new_head.len = offset;
    crate::store::append_synced(dir, &mut file, created, &chain.bytes)
        .map_err(|e| GoalError::io(display, "append to", &e))?;
    keys.extend(
        written
            .iter()
            .zip(&offsets)
            .flat_map(|(v, o)| keys_of(v, Some(*o))),
    );
    Ok(Appended {
        head: new_head,
        written,
        keys,
    })
}

/// The head of the file as it is now: a Node tool (which takes no OS lock)
/// may have appended complete records since the head was read; those are
/// absorbed so the chain links to the true last record. Anything else
/// (a shorter file, a partial record) refuses the append.
fn resync(file: &mut File, display: &str, head: &Head) -> Result<(Head, Vec<KeyLine>), GoalError> {
    let len = file
        .metadata()
        .map_err(|e| GoalError::io(display, "stat", &e))?
        .len();
    if len == head.len {
        return Ok((head.clone(), Vec::new()));
    }
    let changed = || {
        GoalError::io(
            display,
            "append to",
            &io::Error::other(
                "the ledger changed under the mutation lock (another tool wrote to it)",
            ),
        )
    };
    if len < head.len {
        return Err(changed());
    }
    let scan =
        scan_from(file, head.clone(), len).map_err(|e| GoalError::io(display, "read", &e))?;
    if !scan.trailing.is_empty() {
        return Err(changed());
    }
    Ok((scan.head, scan.keys))
}

fn append_error(dir: &Dir, display: &str, e: &io::Error) -> GoalError {
    match dir.symlink_metadata(super::state::LEDGER) {
        Ok(m) if m.file_type().is_symlink() => {
            GoalError::unsafe_state(display, "PATH_SYMLINK", "it is a symlink")
        }
        Ok(m) if !m.is_file() => {
            GoalError::unsafe_state(display, "NOT_REGULAR_FILE", "it is not a regular file")
        }
        _ => GoalError::io(display, "open", e),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::ledger::chain_records;

    #[test]
    fn every_ledger_kind_round_trips_under_kind_and_event() {
        let mut names = std::collections::HashSet::new();
        for &k in LedgerKind::ALL {
            assert!(names.insert(k.as_str()), "{} listed twice", k.as_str());
            assert_eq!(LedgerKind::parse(k.as_str()), Some(k));
            assert_eq!(kind_of(&serde_json::json!({"kind": k.as_str()})), Some(k));
            assert_eq!(kind_of(&serde_json::json!({"event": k.as_str()})), Some(k));
        }
        assert_eq!(kind_of(&serde_json::json!({"kind": "goal_complete"})), None);
    }

    #[test]
    fn append_absorbs_a_foreign_append_made_after_the_head_was_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let e: Map<String, Value> = serde_json::from_str(r#"{"kind":"a","revision":1}"#).unwrap();
        // Chained before the append (as a mutation that writes the plan
        // does) and written as chained: the records returned are the lines
        // written.
        let chain = Chain::after(&Head::default(), std::slice::from_ref(&e));
        let first = append_chained(
            &dir,
            "l",
            &Head::default(),
            vec![e.clone()],
            Some(chain),
            1 << 20,
        )
        .unwrap();
        let lines = |path: &std::path::Path| -> Vec<Value> {
            std::fs::read(path)
                .unwrap()
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| serde_json::from_slice(l).unwrap())
                .collect()
        };
        assert_eq!(first.written, lines(&tmp.path().join("ledger.jsonl")));
        let stale = first.head.clone();
        let foreign = br#"{"at":"x","kind":"goal_added","goalId":"G9"}"#;
        let mut bytes = std::fs::read(tmp.path().join("ledger.jsonl")).unwrap();
        bytes.extend_from_slice(foreign);
        bytes.push(b'\n');
        std::fs::write(tmp.path().join("ledger.jsonl"), &bytes).unwrap();
        // Entries chained after the stale head are chained again after the
        // foreign record the append absorbs.
        let chain = Chain::after(&stale, std::slice::from_ref(&e));
        let second =
            append_chained(&dir, "l", &stale, vec![e.clone()], Some(chain), 1 << 20).unwrap();
        assert_eq!(
            second.written[0]["prev"],
            crate::ledger::record_hash(foreign).as_str()
        );
        assert_eq!(second.written[0]["seq"], 2);
        assert_eq!(
            second.written[..],
            lines(&tmp.path().join("ledger.jsonl"))[2..]
        );
        assert_eq!(second.head.records, 3);
        let all = std::fs::read(tmp.path().join("ledger.jsonl")).unwrap();
        let rep = crate::ledger::verify_chain(
            &mut &all[..],
            crate::ledger::ForeignSeverity::Warning,
            &mut |_, _| {},
        )
        .unwrap();
        let codes: Vec<_> = rep.findings.iter().map(|f| f.finding.code).collect();
        assert_eq!(codes, vec![crate::finding::Code::LedgerForeignRecord]);
        std::fs::write(tmp.path().join("ledger.jsonl"), b"{}\n").unwrap();
        assert!(
            append(&dir, "l", &second.head, vec![Map::new()], 1 << 20).is_err(),
            "a shorter ledger refuses"
        );
    }

    #[test]
    fn keys_of_legacy_and_engine_steering() {
        let legacy = serde_json::json!({
            "kind": "steering_accepted", "idempotencyKey": "abc",
            "steering": {"invariant": {"accepted": true}, "targetGoalIds": ["G001"], "promptSignature": "sig"},
            "mutationKind": "annotate_ledger"
        });
        let keys = keys_of(&legacy, None);
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].0["k"], "k:abc");
        assert_eq!(keys[0].0["d"], Value::Null);
        assert_eq!(keys[1].0["k"], "p:sig");
        let rejected = serde_json::json!({
            "kind": "steering_rejected", "idempotencyKey": "abc",
            "steering": {"invariant": {"accepted": false}}
        });
        assert!(keys_of(&rejected, None).is_empty());
    }

    /// What a head and its keys read of a record is the same whether the
    /// record is read whole or through [`head_members`]: they read no member
    /// outside [`HEAD_MEMBERS`].
    #[test]
    fn a_head_reads_only_its_members() {
        let prev = "c".repeat(64);
        let steering = serde_json::json!({
            "invariant": {"accepted": true}, "targetGoalIds": ["G001"],
            "promptSignature": "sig", "idempotencyKey": "inner", "proposalDigest": "d1"
        });
        let records = [
            serde_json::json!({"seq": 4, "prev": prev, "revision": 7, "kind": "steering_accepted",
                "steering": steering, "idempotencyKey": "outer", "proposalDigest": "d2",
                "mutationKind": "annotate_ledger"}),
            serde_json::json!({"seq": 5, "prev": prev, "event": "criteria_revised", "steering": steering}),
            serde_json::json!({"seq": 6, "prev": prev, "kind": "batch_updated", "steering": steering,
                "revision": 2}),
            serde_json::json!({"seq": 7, "prev": prev, "kind": "evidence_captured", "revision": 9}),
            serde_json::json!({"kind": "steering_accepted", "steering": steering, "idempotencyKey": "legacy"}),
        ];
        for mut record in records {
            record["at"] = serde_json::json!("2026-05-01T12:00:00.000Z");
            record["goalId"] = serde_json::json!("G001");
            let line = serde_json::to_vec(&record).unwrap();
            let (mut part, mut part_keys) = (Head::default(), Vec::new());
            part.absorb(3, &line, &mut part_keys);
            // What the record read whole gives.
            let v: Value = serde_json::from_slice(&line).unwrap();
            let mut by_tree = Head {
                records: 1,
                last_offset: Some(3),
                last_hash: Some(ledger::record_hash(&line)),
                ..Head::default()
            };
            if let Some((seq, _)) = ledger::chain_fields(&v) {
                by_tree.last_seq = seq;
                if let Some(r) = v.get("revision").and_then(Value::as_u64) {
                    by_tree.last_revision = r;
                }
            }
            assert_eq!(part, by_tree, "{record}");
            assert_eq!(part_keys, keys_of(&v, Some(3)), "{record}");
            let Some(Value::Object(m)) = head_members(&line) else {
                panic!("{record}");
            };
            assert!(!m.contains_key("at") && !m.contains_key("goalId"));
        }
    }

    #[test]
    fn event_is_an_alias_of_kind() {
        let v = serde_json::json!({
            "event": "steering_accepted", "ts": "x", "idempotencyKey": "u1",
            "steering": {"invariant": {"accepted": true}}
        });
        assert_eq!(keys_of(&v, Some(7))[0].0["k"], "k:u1");
        assert_eq!(keys_of(&v, Some(7))[0].0["o"], 7);
    }

    /// Records of every size around the first (8 KiB) and later (64 KiB)
    /// reads come back whole, newest first, with their offsets.
    #[test]
    fn read_back_gives_records_longer_than_a_read_whole() {
        let sizes = [10, 8 * 1024, 8 * 1024 - 60, 70_000, 3, 64 * 1024, 20_000];
        let entries: Vec<Map<String, Value>> = sizes
            .iter()
            .map(|n| {
                serde_json::from_str(&format!(r#"{{"kind":"a","pad":"{}"}}"#, "x".repeat(*n)))
                    .unwrap()
            })
            .collect();
        let (bytes, recs) = chain_records(0, None, &entries);
        let tmp = tempfile::tempfile().unwrap();
        let mut f = File::from_std(tmp);
        std::io::Write::write_all(&mut f, &bytes).unwrap();
        let mut got = Vec::new();
        read_back(&mut f, bytes.len() as u64, |at, line| {
            got.push((at, line.to_vec()));
            true
        })
        .unwrap();
        let mut want = Vec::new();
        let mut at = 0u64;
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            want.push((at, line[..line.len() - 1].to_vec()));
            at += line.len() as u64;
        }
        want.reverse();
        assert_eq!(got.len(), recs.len());
        assert!(got == want, "records come back whole with their offsets");
    }

    /// A scan hashes only its region's last record, and a head-only scan
    /// decodes only the chain's members: both give the head that folding
    /// every record in turn gives ([`Head::absorb`]), from the start or
    /// continuing from any record boundary, and the full scan the same keys.
    #[test]
    fn scans_give_the_head_every_record_folded_in_turn_gives() {
        let prev = "d".repeat(64);
        let steering =
            r#"{"invariant":{"accepted":true},"targetGoalIds":["G1"],"promptSignature":"s"}"#;
        let lines: Vec<String> = vec![
            format!(r#"{{"seq":1,"prev":"{prev}","revision":3,"kind":"evidence_captured"}}"#),
            "   ".into(),
            String::new(),
            r#"{"kind":"steering_accepted","idempotencyKey":"legacy","steering":{"invariant":{"accepted":true}}}"#.into(),
            format!(r#"{{"seq":2,"prev":"{prev}","kind":"steering_accepted","idempotencyKey":"k1","steering":{steering}}}"#),
            "[1, 2]".into(),
            "not json at all".into(),
            format!(r#"{{"seq":3,"prev":"{prev}","seq":4,"revision":9}}"#),
            format!(r#"{{"seq":0,"prev":"{prev}","revision":11}}"#),
            format!(r#"{{"seq":5,"prev":"short","revision":12}}"#),
            format!(r#"{{"revision":13,"prev":"{prev}","seq":6,"pad":"{}"}}"#, "é".repeat(40)),
            "\t".into(),
            r#"{"note":"seq 9 of the plan","revision":14}"#.into(),
            format!(r#"{{"\u0073eq":8,"prev":"{prev}"}}"#),
            format!(r#"{{"seq":8,"p\u0072ev":"{prev}","revision":16}}"#),
            format!(r#"{{"s\u0065q":9,"prev":"{prev}","pad":"{}"}}"#, "x".repeat(1_100_000)),
            r#"{"note":"sequence","revision":15}"#.into(),
            r#"{"kind":"criteria_revised","idempotencyKey":"esc","\u0073teering":{"invariant":{"accepted":true}}}"#.into(),
            r#"{"kind":"steering_accepted","idempotencyKey":"lit","steering":{"invariant":{"accepted":true}}}"#.into(),
            r#"{"kind":"steering_rejected","idempotencyKey":"no","steering":{"invariant":{"accepted":false}}}"#.into(),
            "  ".into(),
        ];
        let mut bytes = Vec::new();
        let mut bounds = vec![0u64];
        for l in &lines {
            bytes.extend_from_slice(l.as_bytes());
            bytes.push(b'\n');
            bounds.push(bytes.len() as u64);
        }
        for trailing in [&b""[..], b"{\"seq\":7", b"  "] {
            let mut file_bytes = bytes.clone();
            file_bytes.extend_from_slice(trailing);
            let tmp = tempfile::tempfile().unwrap();
            let mut f = File::from_std(tmp);
            std::io::Write::write_all(&mut f, &file_bytes).unwrap();
            let end = file_bytes.len() as u64;
            for (i, &from) in bounds.iter().enumerate() {
                // The head at `from`, then the rest, record by record.
                let mut start = Head::default();
                for (j, l) in lines.iter().enumerate().take(i) {
                    start.absorb(bounds[j], l.as_bytes(), &mut Vec::new());
                    start.len = bounds[j + 1];
                }
                assert_eq!(start.len, from);
                let (mut want, mut want_keys) = (start.clone(), Vec::new());
                for (j, l) in lines.iter().enumerate().skip(i) {
                    want.absorb(bounds[j], l.as_bytes(), &mut want_keys);
                    want.len = bounds[j + 1];
                }
                let full = scan_from(&mut f, start.clone(), end).unwrap();
                assert_eq!(full.head, want, "from {from}");
                assert_eq!(full.keys, want_keys, "from {from}");
                assert_eq!(full.trailing, trailing, "from {from}");
                let head_only = scan_head_from(&mut f, start, end).unwrap();
                assert_eq!(head_only.head, want, "head only, from {from}");
                assert!(head_only.keys.is_empty());
                assert_eq!(head_only.trailing, trailing);
            }
        }
    }

    /// A line many reads long is visited whole, at its offset, between the
    /// short ones, copied again only a few times, and a budget that ends
    /// inside it cuts the walk there.
    #[test]
    fn read_back_reads_a_long_line_whole() {
        let long = format!("{{\"pad\":\"{}\"}}", "y".repeat(3 << 20));
        let lines = ["{\"a\":1}", long.as_str(), "{\"b\":2}", "{\"c\":3}"];
        let mut bytes = Vec::new();
        let mut offsets = Vec::new();
        for l in lines {
            offsets.push(bytes.len() as u64);
            bytes.extend_from_slice(l.as_bytes());
            bytes.push(b'\n');
        }
        let tmp = tempfile::tempfile().unwrap();
        let mut f = File::from_std(tmp);
        std::io::Write::write_all(&mut f, &bytes).unwrap();
        let end = bytes.len() as u64;
        let mut seen = Vec::new();
        CARRIED.with(|c| c.set(0));
        let whole = read_back_within(&mut f, end, u64::MAX, |at, line| {
            seen.push((at, line.to_vec()));
            true
        })
        .unwrap();
        assert!(whole);
        // The line's start is copied again a few times as the steps double,
        // not once per 64 KiB step (about 70 MB for this line).
        let carried = CARRIED.with(std::cell::Cell::get);
        assert!(
            carried <= 2 * long.len() as u64,
            "{carried} bytes copied again for a {}-byte line",
            long.len()
        );
        let want: Vec<(u64, Vec<u8>)> = offsets
            .iter()
            .zip(lines)
            .rev()
            .map(|(o, l)| (*o, l.as_bytes().to_vec()))
            .collect();
        assert!(seen == want, "every line whole, newest first");
        let mut seen = Vec::new();
        let cut = read_back_within(&mut f, end, end - offsets[1] - 10, |at, _| {
            seen.push(at);
            true
        })
        .unwrap();
        assert!(!cut);
        assert_eq!(seen, [offsets[3], offsets[2]]);
    }

    #[test]
    fn read_back_visits_records_newest_first_across_chunks() {
        let e: Map<String, Value> =
            serde_json::from_str(&format!(r#"{{"kind":"a","pad":"{}"}}"#, "x".repeat(300)))
                .unwrap();
        let (bytes, recs) = chain_records(0, None, &vec![e; 700]);
        let tmp = tempfile::tempfile().unwrap();
        let mut f = File::from_std(tmp);
        std::io::Write::write_all(&mut f, &bytes).unwrap();
        let mut seqs = Vec::new();
        read_back(&mut f, bytes.len() as u64, |_, line| {
            let v: Value = serde_json::from_slice(line).unwrap();
            seqs.push(v["seq"].as_u64().unwrap());
            true
        })
        .unwrap();
        assert_eq!(seqs.len(), 700);
        assert_eq!(seqs[0], 700);
        assert_eq!(seqs[699], 1);
        assert_eq!(recs.len(), 700);
        let scan = scan_from(&mut f, Head::default(), bytes.len() as u64).unwrap();
        assert_eq!(scan.head.records, 700);
        assert_eq!(scan.head.last_seq, 700);
        assert_eq!(
            scan.head.last_hash.as_deref(),
            Some(recs[699].hash.as_str())
        );
    }
}
