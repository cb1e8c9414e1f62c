//! The plan bound to its ledger (docs/threat-model.md#i7, docs/threat-model.md#tm-6 "I7 without a
//! circle").
//!
//! Every ledger entry the engine writes under a bound plan carries
//! `planSha256`: the SHA-256 of the plan *body* — the plan object without
//! its `lastMutation`, serialised as the engine writes plans (two-space
//! pretty JSON plus one `\n`). The plan's `lastMutation.ledgerHead` is
//! `{seq, sha256}` of the last record that mutation appended. So the plan
//! covers the whole last entry and the entry covers the whole plan body.
//!
//! [`judge_plan`] checks both directions over the newest records of the ledger
//! ([`read_tail`]): a plan body that differs from the one its ledger
//! recorded is `PLAN_TAMPERED`; a head record that is missing or differs
//! from the one the plan names is `LEDGER_TAMPERED`. Records appended after
//! the head without a plan write (annotations, rejected steering, recovery
//! markers) must carry the current body's digest. A plan without
//! `ledgerHead` over a ledger without `planSha256` is legacy (Node tools,
//! older evidence-gate), never tampered.

use std::io;

use cap_std::fs::File;
use serde_json::{Map, Value, json};

use super::journal;
use super::plan::Plan;
use crate::ledger;

/// The most ledger bytes a hook's binding check reads back from the end
/// (docs/threat-model.md#i7): the hooks' read budget holds whatever the
/// ledger and whatever the agent appended. An engine that appends without
/// writing the plan names a newer head after `txn::REBIND_AFTER` bytes, so
/// an honest walk stays well inside this.
pub(crate) const HOOK_WALK_BYTES: u64 = 512 * 1024;

/// The entry field holding the plan body's digest.
pub(crate) const PLAN_SHA256: &str = "planSha256";
/// The entry field holding the SHA-256 of the Stop view's first line
/// (docs/state-formats.md#stop-view) the entry's mutation wrote.
pub(crate) const SUMMARY_SHA256: &str = "summarySha256";
/// The `lastMutation` field naming the ledger head.
pub(crate) const LEDGER_HEAD: &str = "ledgerHead";
/// The entry kind `repair --accept-tampered` appends.
pub(crate) const TAMPER_ACKNOWLEDGED: &str = journal::LedgerKind::TamperAcknowledged.as_str();

/// `lastMutation.ledgerHead`: the record a plan names as its ledger's last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedHead {
    /// Its `seq`.
    pub seq: u64,
    /// SHA-256 of its bytes.
    pub sha256: String,
}

impl NamedHead {
    /// `{seq, sha256}`.
    pub fn to_json(&self) -> Value {
        json!({"seq": self.seq, "sha256": self.sha256})
    }
}

/// The head a plan document names, if it names one. A present but
/// malformed value names a record no ledger holds (seq 0).
pub(crate) fn named_head(doc: &Map<String, Value>) -> Option<NamedHead> {
    let h = doc.get("lastMutation")?.as_object()?.get(LEDGER_HEAD)?;
    let seq = h.get("seq").and_then(Value::as_u64).unwrap_or(0);
    let sha256 = h
        .get("sha256")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Some(NamedHead { seq, sha256 })
}

/// The end of a plan file as the engine writes it after `head`: the
/// `lastMutation.ledgerHead` member (the last of `lastMutation`, itself the
/// last member of the plan) and the closing braces, in the two-space
/// layout of the writer.
pub(crate) fn ledger_head_end(head: &NamedHead) -> String {
    format!(
        "    \"{LEDGER_HEAD}\": {{\n      \"seq\": {},\n      \"sha256\": \"{}\"\n    }}\n  }}\n}}\n",
        head.seq, head.sha256
    )
}

/// The bytes of a plan file before its [`ledger_head_end`] for `head`, when
/// the file ends that way and that end belongs to `lastMutation`: the last
/// line that opens a top-level member (two spaces and a quote, which no
/// string or deeper line of the layout starts with) opens `lastMutation`.
pub(crate) fn ledger_head_prefix<'a>(file: &'a [u8], head: &NamedHead) -> Option<&'a [u8]> {
    let prefix = file.strip_suffix(ledger_head_end(head).as_bytes())?;
    let member = prefix
        .windows(4)
        .rposition(|w| w == b"\n  \"")
        .map(|i| &prefix[i + 1..])?;
    member
        .starts_with(b"  \"lastMutation\": {\n")
        .then_some(prefix)
}

/// The `planSha256` carried by the entries of a plan's `lastMutation` (the
/// body that mutation wrote).
pub(crate) fn pending_sha256(doc: &Map<String, Value>) -> Option<String> {
    doc.get("lastMutation")?
        .get("entries")?
        .as_array()?
        .iter()
        .find_map(|e| e.get(PLAN_SHA256).and_then(Value::as_str))
        .map(str::to_owned)
}

/// One ledger record as the binding check sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TailRecord {
    /// Its chained `seq` (none for an unchained record).
    pub seq: Option<u64>,
    /// SHA-256 of its bytes.
    pub sha256: String,
    /// Its `planSha256`, if any.
    pub plan_sha256: Option<String>,
    /// Its `revision`, if any.
    pub revision: Option<u64>,
    /// Its `summarySha256` (the Stop view its mutation wrote), if any.
    pub summary_sha256: Option<String>,
}

impl TailRecord {
    /// Reads one record's bytes.
    pub(crate) fn of(line: &[u8]) -> TailRecord {
        TailRecord {
            sha256: ledger::record_hash(line),
            ..TailRecord::fields(line)
        }
    }

    /// A record's `seq` (when chained), `planSha256` and `revision`, without
    /// its hash (`sha256` empty). The line is parsed in full, as a JSON value
    /// would be (a later duplicate key wins), but only these fields are
    /// kept: a binding check walks every record after the plan's head.
    pub(crate) fn fields(line: &[u8]) -> TailRecord {
        let mut de = serde_json::Deserializer::from_slice(line);
        let f = serde::Deserializer::deserialize_any(&mut de, TailFieldsVisitor)
            .and_then(|f| de.end().map(|()| f))
            .unwrap_or_default();
        let mut chain = Map::new();
        if let Some(v) = f.seq {
            chain.insert("seq".into(), v);
        }
        if let Some(v) = f.prev {
            chain.insert("prev".into(), v);
        }
        TailRecord {
            seq: ledger::chain_fields(&Value::Object(chain)).map(|(seq, _)| seq),
            sha256: String::new(),
            plan_sha256: f
                .plan_sha256
                .as_ref()
                .and_then(Value::as_str)
                .map(str::to_owned),
            revision: f.revision.as_ref().and_then(Value::as_u64),
            summary_sha256: f
                .summary_sha256
                .as_ref()
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }
}

/// The top-level fields [`TailRecord::fields`] keeps (the last of duplicate
/// keys); `None` everywhere for a line that is not a JSON object.
#[derive(Default)]
struct TailFields {
    seq: Option<Value>,
    prev: Option<Value>,
    plan_sha256: Option<Value>,
    revision: Option<Value>,
    summary_sha256: Option<Value>,
}

enum TailKey {
    Seq,
    Prev,
    PlanSha256,
    Revision,
    SummarySha256,
    Other,
}

impl<'de> serde::Deserialize<'de> for TailKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TailKey, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = TailKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: serde::de::Error>(self, k: &str) -> Result<TailKey, E> {
                Ok(match k {
                    "seq" => TailKey::Seq,
                    "prev" => TailKey::Prev,
                    PLAN_SHA256 => TailKey::PlanSha256,
                    "revision" => TailKey::Revision,
                    SUMMARY_SHA256 => TailKey::SummarySha256,
                    _ => TailKey::Other,
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

struct TailFieldsVisitor;

impl<'de> serde::de::Visitor<'de> for TailFieldsVisitor {
    type Value = TailFields;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a ledger record")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<TailFields, A::Error> {
        let mut f = TailFields::default();
        while let Some(k) = m.next_key::<TailKey>()? {
            let slot = match k {
                TailKey::Seq => &mut f.seq,
                TailKey::Prev => &mut f.prev,
                TailKey::PlanSha256 => &mut f.plan_sha256,
                TailKey::Revision => &mut f.revision,
                TailKey::SummarySha256 => &mut f.summary_sha256,
                TailKey::Other => {
                    m.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(m.next_value::<Value>()?);
        }
        Ok(f)
    }
}

/// The newest records of a ledger as a binding check read them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tail {
    /// Newest first.
    pub records: Vec<TailRecord>,
    /// The walk ran out of its byte budget before it reached where it was
    /// going (the named head, or the last chained record).
    pub cut: bool,
    /// Bytes from the start of the oldest record read to the ledger's end.
    pub bytes: u64,
    /// Where the complete records end (after the last `\n`); `None` when
    /// the budget held no `\n`.
    pub end: Option<u64>,
}

impl Tail {
    /// A walk that reached its stop.
    #[cfg(test)]
    pub(crate) fn whole(records: Vec<TailRecord>) -> Tail {
        Tail {
            records,
            ..Tail::default()
        }
    }
}

/// Whether a walk that read record `seq` has reached the head `stop_seq`
/// (or, without one, the last chained record).
fn reaches(seq: Option<u64>, stop_seq: Option<u64>) -> bool {
    match (seq, stop_seq) {
        (Some(s), Some(h)) => s <= h,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// The newest records of the ledger `file` (complete records before `end`),
/// newest first, back to the record with `seq` ≤ `stop_seq` (included) —
/// or, without a named head, back to the last chained record — reading at
/// most the `budget` bytes before `end`. `found` tells whether a newer
/// chained record was read already. Only the records the judgement compares
/// are hashed: the newest record, the newest chained record and the one at
/// `stop_seq`.
fn read_tail(
    file: &mut File,
    end: u64,
    stop_seq: Option<u64>,
    limit: usize,
    budget: u64,
    mut found: bool,
) -> io::Result<Tail> {
    let mut t = Tail::default();
    if limit == 0 {
        return Ok(t);
    }
    let mut oldest = end;
    let mut stopped = false;
    let whole = journal::read_back_within(file, end, budget, |at, line| {
        let mut r = TailRecord::fields(line);
        if t.records.is_empty() || (r.seq.is_some() && (!found || r.seq == stop_seq)) {
            r.sha256 = ledger::record_hash(line);
        }
        found |= r.seq.is_some();
        stopped = reaches(r.seq, stop_seq);
        oldest = at;
        t.records.push(r);
        !stopped && t.records.len() < limit
    })?;
    t.cut = !whole && !stopped;
    t.bytes = end - oldest;
    Ok(t)
}

/// The length of the complete records of a ledger of `size` bytes (up to
/// and including its last `\n`): a torn tail is not a record.
#[cfg(test)]
pub(crate) fn complete_len(file: &mut File, size: u64) -> io::Result<u64> {
    Ok(complete_len_within(file, size, u64::MAX)?.unwrap_or(0))
}

/// [`complete_len`] reading at most the `budget` bytes before `size`:
/// `None` when they hold no `\n` (and more bytes lie before them).
pub(crate) fn complete_len_within(
    file: &mut File,
    size: u64,
    budget: u64,
) -> io::Result<Option<u64>> {
    // A ledger almost always ends with its last record's `\n`: the first
    // read is one page.
    let floor = size.saturating_sub(budget);
    let mut chunk = 4 * 1024;
    let mut end = size;
    let mut buf = Vec::new();
    while end > floor {
        let start = end.saturating_sub(chunk).max(floor);
        chunk = 64 * 1024;
        ledger::read_exact_at(file, start, (end - start) as usize, &mut buf)?;
        if let Some(i) = crate::scan::rfind_byte(b'\n', &buf) {
            return Ok(Some(start + i as u64 + 1));
        }
        end = start;
    }
    Ok((floor == 0).then_some(0))
}

/// [`read_tail`] over a whole ledger file of `size` bytes: bytes after the
/// last `\n` count as the last record when they are a JSON object (an
/// unterminated record, which the recovery check completes); a torn tail
/// does not.
/// At most `limit` records are read, from at most the `budget` bytes before
/// the complete records' end (`u64::MAX`: no budget).
pub(crate) fn read_tail_file(
    file: &mut File,
    size: u64,
    stop_seq: Option<u64>,
    limit: usize,
    budget: u64,
) -> io::Result<Tail> {
    let Some(complete) = complete_len_within(file, size, budget)? else {
        return Ok(Tail {
            records: Vec::new(),
            cut: true,
            bytes: budget,
            end: None,
        });
    };
    let mut first = None;
    if complete < size && size - complete <= budget.min(64 * 1024 * 1024) {
        let mut rest = Vec::new();
        ledger::read_exact_at(file, complete, (size - complete) as usize, &mut rest)?;
        if serde_json::from_slice::<Value>(&rest).is_ok_and(|v| v.is_object()) {
            let r = TailRecord::of(&rest);
            let stop = reaches(r.seq, stop_seq);
            if stop || limit <= 1 {
                return Ok(Tail {
                    records: vec![r],
                    cut: false,
                    bytes: size - complete,
                    end: Some(complete),
                });
            }
            first = Some(r);
        }
    }
    let unterminated = size - complete;
    let found = first.as_ref().is_some_and(|r| r.seq.is_some());
    let rest = limit - usize::from(first.is_some());
    let budget = budget.saturating_sub(unterminated);
    let mut t = read_tail(file, complete, stop_seq, rest, budget, found)?;
    t.end = Some(complete);
    if let Some(r) = first {
        t.records.insert(0, r);
        t.bytes += unterminated;
    }
    Ok(t)
}

/// Over a whole ledger in file order: a ledger that once bound its plans
/// must still bind them at its last chained record (stripping the binding
/// to look legacy is tampering).
#[derive(Debug, Clone, Default)]
pub(crate) struct Downgrade {
    first_bound: Option<u64>,
    last_chained: Option<(u64, bool)>,
}

impl Downgrade {
    /// Folds one parsed record.
    pub(crate) fn feed(&mut self, v: &Value) {
        self.feed_fact(Downgrade::fact(v));
    }

    /// What [`Downgrade::feed`] reads of a record: its chained `seq` and
    /// whether it carries a `planSha256` string.
    pub(crate) fn fact(v: &Value) -> Option<(u64, bool)> {
        let (seq, _) = ledger::chain_fields(v)?;
        Some((seq, v.get(PLAN_SHA256).is_some_and(Value::is_string)))
    }

    /// [`Downgrade::feed`] of a record's [`Downgrade::fact`].
    pub(crate) fn feed_fact(&mut self, fact: Option<(u64, bool)>) {
        let Some((seq, bound)) = fact else {
            return;
        };
        if bound && self.first_bound.is_none() {
            self.first_bound = Some(seq);
        }
        self.last_chained = Some((seq, bound));
    }

    /// The `LEDGER_TAMPERED` reason, if the binding was dropped.
    pub(crate) fn finding(&self) -> Option<String> {
        let first = self.first_bound?;
        match self.last_chained {
            Some((seq, false)) => Some(format!(
                "the ledger binds its plans from seq {first} on, but its last chained record (seq {seq}) carries no planSha256: a record the engine did not write"
            )),
            _ => None,
        }
    }
}

/// Where a plan and its ledger stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Neither side is bound (Node tools, an older evidence-gate).
    Legacy,
    /// Each side matches the other.
    Bound,
    /// The plan was written and its entries were not (the recovery check
    /// appends them); the pending entries record this plan.
    Pending,
    /// `PLAN_TAMPERED` and/or `LEDGER_TAMPERED`.
    Tampered,
}

impl State {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Legacy => "legacy",
            State::Bound => "bound",
            State::Pending => "pending",
            State::Tampered => "tampered",
        }
    }
}

/// The verdict of [`judge_plan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The verdict.
    pub state: State,
    /// SHA-256 of the plan body as read; empty from [`judge_plan_verdict`]
    /// when the verdict is legacy (no digest to compare it with).
    pub body_sha256: String,
    /// The head the plan names.
    pub named: Option<NamedHead>,
    /// The plan digest the ledger (or the pending entries) recorded, and
    /// the seq of the record that carries it.
    pub recorded: Option<(Option<u64>, String)>,
    /// The last chained record actually found: `(seq, sha256)`.
    pub found: Option<(u64, String)>,
    /// Why the plan is `PLAN_TAMPERED`.
    pub plan_tampered: Option<String>,
    /// Why the ledger is `LEDGER_TAMPERED`.
    pub ledger_tampered: Option<String>,
    /// The `summarySha256` of the head record the plan names, when that
    /// record is intact and recorded this body: the Stop view the plan's
    /// mutation wrote, which entries appended under this plan vouch for
    /// again (docs/state-formats.md#stop-view).
    pub view_sha256: Option<String>,
    /// The walk ran out of its byte budget (a hook's, docs/threat-model.md#i7)
    /// before it reached where it was going. For a plan that names a head:
    /// the newer records read all recorded this body and the head itself was
    /// not compared. For a plan that names none (legacy): no chained record
    /// was found, so a dropped binding cannot be told from a legacy plan by
    /// the ledger alone ([`Binding::seen_bound`]).
    pub cut: bool,
    /// Bytes of ledger the walk read back from the end.
    pub walked: u64,
}

impl Binding {
    /// A plan that names no head, judged over a walk cut before any
    /// chained record, of a ledger the engine is known to have written
    /// (`evidence` says how it is known, from what the agent cannot forge
    /// unseen): the binding was dropped and hidden behind lines the walk
    /// could not read, so the plan is not trusted.
    pub(crate) fn hidden_binding(mut self, evidence: &str, plan: &Plan) -> Binding {
        // A tampered verdict names the body it judged
        // ([`judge_plan_verdict`] leaves a legacy one's digest out).
        if self.body_sha256.is_empty() {
            self.body_sha256 = plan.read_body_sha256();
        }
        self.ledger_tampered = Some(format!(
            "the plan names no ledger head and the newest bytes of its ledger a hook may read hold no record the engine wrote, but {evidence}: an oversized or foreign tail hides the binding"
        ));
        self.state = State::Tampered;
        self
    }

    /// Whether either side was tampered with.
    pub fn tampered(&self) -> bool {
        self.state == State::Tampered
    }

    /// Whether the plan is bound (its next appends carry `planSha256`).
    pub fn bound(&self) -> bool {
        self.named.is_some()
    }

    /// The codes that apply, plan first.
    pub fn codes(&self) -> Vec<&'static str> {
        let mut c = Vec::new();
        if self.plan_tampered.is_some() {
            c.push("PLAN_TAMPERED");
        }
        if self.ledger_tampered.is_some() {
            c.push("LEDGER_TAMPERED");
        }
        c
    }

    /// The old/new digests a `tamper_acknowledged` entry records.
    pub fn to_json(&self) -> Value {
        json!({
            "state": self.state.as_str(),
            "codes": self.codes(),
            "planSha256": {
                "recorded": self.recorded.as_ref().map(|(_, s)| s),
                "recordedAtSeq": self.recorded.as_ref().and_then(|(s, _)| *s),
                "actual": self.body_sha256,
            },
            "ledgerHead": {
                "named": self.named.as_ref().map(NamedHead::to_json),
                "found": self.found.as_ref().map(|(seq, h)| json!({"seq": seq, "sha256": h})),
            },
            "planTampered": self.plan_tampered,
            "ledgerTampered": self.ledger_tampered,
        })
    }
}

/// Judges a plan document against the newest records of its ledger
/// (`tail`, newest first, as [`read_tail`] returns them). `pending` is true
/// when the recovery check finds entries of the plan's `lastMutation`
/// missing from the ledger: the plan is ahead by design, so its head is not
/// looked for yet, and its pending entries must record this body.
///
/// The plan's body digest is the one it was read with
/// ([`Plan::read_body_sha256`]); the digests these records and the pending
/// entries record let it be taken from the file's hash without serialising
/// the plan ([`Plan::read_body_sha256_recorded`]).
pub(crate) fn judge_plan(plan: &Plan, tail: &Tail, pending: bool) -> Binding {
    let mut b = judge_records(plan, &tail.records, pending, tail.cut);
    b.walked = tail.bytes;
    b
}

/// [`judge_plan`] for a caller that acts on the verdict only (a hook): a
/// plan that names no head over a ledger that binds no plan is legacy
/// whatever its body, so its digest, which serialising a plan no engine
/// wrote costs, is not computed ([`Binding::body_sha256`] is empty).
pub(crate) fn judge_plan_verdict(plan: &Plan, tail: &Tail, pending: bool) -> Binding {
    let binds = tail
        .records
        .iter()
        .find(|t| t.seq.is_some())
        .is_some_and(|t| t.plan_sha256.is_some());
    if named_head(plan.doc()).is_some() || binds {
        return judge_plan(plan, tail, pending);
    }
    let mut b = judge_digest(String::new(), plan.doc(), &tail.records, pending, tail.cut);
    debug_assert_eq!(b.state, State::Legacy, "the verdict needs no digest");
    b.walked = tail.bytes;
    b
}

fn judge_records(plan: &Plan, tail: &[TailRecord], pending: bool, cut: bool) -> Binding {
    let pending_digest = pending_sha256(plan.doc());
    let recorded = |d: &str| {
        pending_digest.as_deref() == Some(d)
            || tail.iter().any(|t| t.plan_sha256.as_deref() == Some(d))
    };
    let d = if pending_digest.is_some() || tail.iter().any(|t| t.plan_sha256.is_some()) {
        plan.read_body_sha256_recorded(&recorded)
    } else {
        plan.read_body_sha256()
    };
    judge_digest(d, plan.doc(), tail, pending, cut)
}

/// The `lastMutation` member in which the recovery check, naming the head
/// its records will make before it appends them (plan first), keeps the
/// `ledger_repaired` marker it puts before the recovered entries.
pub(crate) const RECOVERY: &str = "recovery";

/// Why a pending mutation is not what a crash between the plan write and
/// the append leaves, if it is not. The engine names the head from the very
/// records it is about to append, chained onto the ledger's last record, so
/// after such a crash the entries of `lastMutation` not yet in the ledger (a
/// suffix of them: an append may land in part), chained onto the ledger's
/// last record (`tail`'s newest; `found`: the last chained one), make
/// exactly the head the plan names. A crash during the recovery of such a
/// crash leaves the recovery's records named instead: its marker (kept in
/// `lastMutation.recovery`) and the entries marked `recovered`. Entries
/// written into the plan by hand, for the next recovery to append as if the
/// engine had meant them, make neither, unless whoever wrote them also
/// chained them as the engine does.
fn pending_off_chain(
    doc: &Map<String, Value>,
    tail: &[TailRecord],
    found: Option<&(u64, String)>,
    head: &NamedHead,
) -> Option<String> {
    let lm = doc.get("lastMutation");
    let entries: Vec<Map<String, Value>> = lm
        .and_then(|m| m.get("entries"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_object).cloned().collect())
        .unwrap_or_default();
    let marker = lm.and_then(|m| m.get(RECOVERY)).and_then(Value::as_object);
    let last_seq = found.map_or(0, |(s, _)| *s);
    let last_hash = tail
        .first()
        .map(|t| t.sha256.as_str())
        .filter(|s| !s.is_empty());
    let makes_head = |records: &[Map<String, Value>]| {
        let (_, recs) = ledger::chain_records(last_seq, last_hash, records);
        recs.last()
            .is_some_and(|r| r.seq == head.seq && r.hash == head.sha256)
    };
    let recovered = |rest: &[Map<String, Value>]| -> Vec<Map<String, Value>> {
        rest.iter()
            .cloned()
            .map(|mut e| {
                e.insert("recovered".into(), Value::Bool(true));
                e
            })
            .collect()
    };
    // The recovery's records land in part too: its marker alone, or with
    // some of the recovered entries.
    let chained = (0..entries.len()).any(|k| {
        let rest = &entries[k..];
        makes_head(rest)
            || marker.is_some_and(|m| {
                let again = recovered(rest);
                let mut records = vec![m.clone()];
                records.extend(again.iter().cloned());
                makes_head(&records) || makes_head(&again)
            })
    });
    (!chained).then(|| {
        format!(
            "the plan's lastMutation holds {} entr{} that the ledger lacks, but chained onto its last record (seq {last_seq}) they do not make the head the plan names (seq {}); the engine names that head from those very records before it writes the plan, so they were written into the plan by hand",
            entries.len(),
            if entries.len() == 1 { "y" } else { "ies" },
            head.seq
        )
    })
}

fn judge_digest(
    d: String,
    doc: &Map<String, Value>,
    tail: &[TailRecord],
    pending: bool,
    cut: bool,
) -> Binding {
    let named = named_head(doc);
    let found = tail
        .iter()
        .find_map(|t| t.seq.map(|s| (s, t.sha256.clone())));
    let mut b = Binding {
        state: State::Bound,
        body_sha256: d.clone(),
        named: named.clone(),
        recorded: None,
        found,
        plan_tampered: None,
        ledger_tampered: None,
        view_sha256: None,
        cut: false,
        walked: 0,
    };
    let short = |s: &str| s.get(..12).unwrap_or(s).to_owned();
    let Some(h) = named else {
        // A plan that names no head: legacy, unless its ledger already binds
        // plans (the head was removed from the plan).
        match tail.iter().find(|t| t.seq.is_some()) {
            Some(t) if t.plan_sha256.is_some() => {
                let rec = t.plan_sha256.clone().unwrap_or_default();
                b.plan_tampered = Some(format!(
                    "the plan names no ledger head (lastMutation.ledgerHead), but the ledger's last record (seq {}) binds plan body {}…; the plan was rewritten by hand or by a tool that drops the binding",
                    t.seq.unwrap_or(0),
                    short(&rec)
                ));
                b.recorded = Some((t.seq, rec));
                b.state = State::Tampered;
            }
            None => {
                b.state = State::Legacy;
                b.cut = cut;
            }
            _ => b.state = State::Legacy,
        }
        return b;
    };
    if pending {
        let rec = pending_sha256(doc);
        b.recorded = rec.clone().map(|r| (None, r));
        match rec {
            Some(r) if r == d => b.state = State::Pending,
            Some(r) => {
                b.plan_tampered = Some(format!(
                    "the plan body hashes to {}… but the pending entries of its lastMutation record {}…",
                    short(&d),
                    short(&r)
                ));
            }
            None => {
                b.plan_tampered = Some(
                    "the plan names a ledger head but the entries of its lastMutation record no plan digest"
                        .into(),
                );
            }
        }
        if b.plan_tampered.is_none()
            && let Some(why) = pending_off_chain(doc, tail, b.found.as_ref(), &h)
        {
            b.ledger_tampered = Some(why);
        }
        if b.plan_tampered.is_some() || b.ledger_tampered.is_some() {
            b.state = State::Tampered;
        }
        return b;
    }
    let mut at = None;
    let mut after = Vec::new();
    let mut before = None;
    for t in tail {
        match t.seq {
            Some(s) if s == h.seq => {
                at = Some(t);
                break;
            }
            Some(s) if s < h.seq => {
                before = Some(t);
                break;
            }
            _ => after.push(t),
        }
    }
    // Chained records after the head must have been written under this
    // very body. Unchained records (a Node tool's appends) are not the
    // engine's; the chain verification reports them (`LEDGER_FOREIGN_RECORD`).
    for t in after.iter().rev().filter(|t| t.seq.is_some()) {
        match &t.plan_sha256 {
            Some(r) if *r == d => {}
            Some(r) => {
                if b.plan_tampered.is_none() {
                    b.recorded = Some((t.seq, r.clone()));
                    b.plan_tampered = Some(format!(
                        "the plan body hashes to {}… but the ledger record seq {} recorded plan body {}…",
                        short(&d),
                        t.seq
                            .map_or_else(|| "(unchained)".into(), |s| s.to_string()),
                        short(r)
                    ));
                }
            }
            None => {
                if b.ledger_tampered.is_none() {
                    b.ledger_tampered = Some(format!(
                        "a record the engine did not write under this plan ({}) follows the head the plan names (seq {})",
                        t.seq
                            .map_or_else(|| "unchained".into(), |s| format!("seq {s}")),
                        h.seq
                    ));
                }
            }
        }
    }
    match at {
        Some(t) => {
            if t.sha256 != h.sha256 && b.ledger_tampered.is_none() {
                b.ledger_tampered = Some(format!(
                    "the plan names ledger record seq {} with SHA-256 {}… but that record hashes to {}… (edited after it was written)",
                    h.seq,
                    short(&h.sha256),
                    short(&t.sha256)
                ));
            }
            if b.plan_tampered.is_none() && t.plan_sha256.as_deref() != Some(d.as_str()) {
                b.recorded = t.plan_sha256.clone().map(|r| (t.seq, r));
                b.plan_tampered = Some(format!(
                    "the plan body hashes to {}… but the ledger record seq {} (the head the plan names) recorded plan body {}",
                    short(&d),
                    h.seq,
                    t.plan_sha256
                        .as_deref()
                        .map_or_else(|| "none".into(), |r| format!("{}…", short(r)))
                ));
            } else if b.recorded.is_none() {
                b.recorded = t.plan_sha256.clone().map(|r| (t.seq, r));
            }
            if t.sha256 == h.sha256 && t.plan_sha256.as_deref() == Some(d.as_str()) {
                b.view_sha256.clone_from(&t.summary_sha256);
            }
        }
        None if cut && before.is_none() && b.found.is_some() => {
            // The budget ran out among records newer than the head, each
            // checked above: the head itself is left to the walks without a
            // budget (every mutation's, `status`, the CI audit).
            b.cut = true;
        }
        None => {
            if b.ledger_tampered.is_none() {
                b.ledger_tampered = Some(match &b.found {
                    None if cut => format!(
                        "the plan names ledger record seq {} but the newest bytes of the ledger a hook may read hold no complete chained record (an oversized or foreign line)",
                        h.seq
                    ),
                    Some((s, _)) => format!(
                        "the plan names ledger record seq {} but the ledger's last chained record is seq {s} (records were cut or replaced)",
                        h.seq
                    ),
                    None => format!(
                        "the plan names ledger record seq {} but the ledger holds no chained record (it was deleted or replaced)",
                        h.seq
                    ),
                });
            }
            if let Some(t) = before
                && b.plan_tampered.is_none()
                && let Some(r) = &t.plan_sha256
                && *r != d
            {
                b.recorded = Some((t.seq, r.clone()));
                b.plan_tampered = Some(format!(
                    "the plan body hashes to {}… but the ledger's last record (seq {}) recorded plan body {}…",
                    short(&d),
                    t.seq.unwrap_or(0),
                    short(r)
                ));
            }
        }
    }
    if b.plan_tampered.is_some() || b.ledger_tampered.is_some() {
        b.state = State::Tampered;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goals::plan::body_sha256;

    /// The complete records end at the last `\n`, however long the torn
    /// tail after it (the first read is one page).
    #[test]
    fn complete_len_skips_a_torn_tail_of_any_length() {
        for (records, torn) in [
            (0, 0),
            (0, 10),
            (3, 0),
            (3, 10),
            (3, 5000),
            (3, 70_000),
            (0, 70_000),
        ] {
            let mut bytes = Vec::new();
            for i in 0..records {
                bytes.extend_from_slice(format!("{{\"seq\":{i}}}\n").as_bytes());
            }
            let complete = bytes.len() as u64;
            bytes.extend(std::iter::repeat_n(b'x', torn));
            let tmp = tempfile::tempfile().unwrap();
            let mut f = File::from_std(tmp);
            std::io::Write::write_all(&mut f, &bytes).unwrap();
            assert_eq!(
                complete_len(&mut f, bytes.len() as u64).unwrap(),
                complete,
                "{records} records, {torn} torn bytes"
            );
        }
    }

    /// What a record read as a whole JSON value yields (the reference for
    /// [`TailRecord::fields`]).
    fn reference(line: &[u8]) -> TailRecord {
        let v: Option<Value> = serde_json::from_slice(line).ok();
        TailRecord {
            seq: v
                .as_ref()
                .and_then(ledger::chain_fields)
                .map(|(seq, _)| seq),
            sha256: ledger::record_hash(line),
            plan_sha256: v
                .as_ref()
                .and_then(|v| v.get(PLAN_SHA256))
                .and_then(Value::as_str)
                .map(str::to_owned),
            revision: v
                .as_ref()
                .and_then(|v| v.get("revision"))
                .and_then(Value::as_u64),
            summary_sha256: v
                .as_ref()
                .and_then(|v| v.get(SUMMARY_SHA256))
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }

    #[test]
    fn record_fields_read_as_the_whole_value_would() {
        let prev = "a".repeat(64);
        let lines = [
            format!(r#"{{"kind":"x","seq":3,"prev":"{prev}","planSha256":"p","revision":2}}"#),
            format!(r#"{{"seq":3,"prev":"{prev}","seq":4}}"#),
            format!(r#"{{"seq":3,"prev":"{prev}","seq":"4"}}"#),
            format!(r#"{{"s\u0065q":5,"prev":"{prev}","planSha256":"q","planSha256":7}}"#),
            format!(r#"{{"seq":0,"prev":"{prev}"}}"#),
            format!(r#"{{"seq":3,"prev":"{}"}}"#, "A".repeat(64)),
            r#"{"seq":3,"prev":null}"#.to_owned(),
            format!(r#"{{"nested":{{"seq":3,"prev":"{prev}"}},"revision":-1}}"#),
            format!(r#"{{"seq":3,"prev":"{prev}"}} trailing"#),
            format!(r#"{{"seq":3,"prev":"{prev}""#),
            format!(r#"[{{"seq":3,"prev":"{prev}"}}]"#),
            "17".to_owned(),
            "{}".to_owned(),
            r#"{"revision":1.5,"seq":1e0}"#.to_owned(),
            format!(r#"{{"seq":3,"prev":"{prev}","summarySha256":"s","summarySha256":"t"}}"#),
            format!(r#"{{"seq":3,"prev":"{prev}","summarySha256":1}}"#),
        ];
        for line in &lines {
            assert_eq!(
                TailRecord::of(line.as_bytes()),
                reference(line.as_bytes()),
                "{line}"
            );
        }
    }

    /// [`judge_plan`] for a plan document built in the test.
    fn judge(doc: &Map<String, Value>, tail: &[TailRecord], pending: bool) -> Binding {
        judge_digest(body_sha256(doc), doc, tail, pending, false)
    }

    /// [`judge`] of a walk its budget cut.
    fn judge_cut(doc: &Map<String, Value>, tail: &[TailRecord]) -> Binding {
        judge_digest(body_sha256(doc), doc, tail, false, true)
    }

    fn doc(text: &str) -> Map<String, Value> {
        serde_json::from_str(text).unwrap()
    }

    /// A hook's verdict is the full judgement's in every state; only a
    /// legacy plan's digest, which no verdict compares, is left out, and a
    /// hidden binding (tampered) names the body it judged.
    #[test]
    fn the_verdict_only_judgement_leaves_out_only_a_legacy_digest() {
        let legacy = doc(r#"{"version":1,"goals":[{"id":"G1"}]}"#);
        let d = body_sha256(&legacy);
        let bound = bound_doc(2, "h2");
        let bd = body_sha256(&bound);
        let cases: [(&Map<String, Value>, Vec<TailRecord>); 6] = [
            (&legacy, vec![]),
            (&legacy, vec![rec(None, "n", None)]),
            (&legacy, vec![rec(Some(2), "h2", None)]),
            (&legacy, vec![rec(Some(2), "h2", Some(&d))]),
            (&bound, vec![rec(Some(2), "h2", Some(&bd))]),
            (&bound, vec![rec(Some(2), "h2", Some("other"))]),
        ];
        for (doc, records) in cases {
            let plan = Plan::from_doc(doc.clone());
            let tail = Tail {
                records,
                ..Tail::default()
            };
            let full = judge_plan(&plan, &tail, false);
            let verdict = judge_plan_verdict(&plan, &tail, false);
            assert_eq!(verdict.state, full.state, "{:?}", tail.records);
            assert_eq!(verdict.codes(), full.codes());
            if verdict.state == State::Legacy {
                assert_eq!(verdict.body_sha256, "");
                let hidden = verdict.hidden_binding("a test", &plan);
                assert_eq!(hidden.body_sha256, full.body_sha256);
                assert!(hidden.tampered());
            } else {
                assert_eq!(verdict, full);
            }
        }
    }

    #[test]
    fn the_body_digest_ignores_last_mutation_and_matches_the_written_bytes() {
        let with = doc(
            r#"{"version":1,"goals":[{"id":"G1"}],"lastMutation":{"revision":1},"revision":1}"#,
        );
        let without = doc(r#"{"version":1,"goals":[{"id":"G1"}],"revision":1}"#);
        assert_eq!(body_sha256(&with), body_sha256(&without));
        let mut bytes = serde_json::to_vec_pretty(&without).unwrap();
        bytes.push(b'\n');
        assert_eq!(body_sha256(&without), crate::digest::sha256_hex(&bytes));
        let changed = doc(r#"{"version":1,"goals":[{"id":"G2"}],"revision":1}"#);
        assert_ne!(body_sha256(&changed), body_sha256(&without));
    }

    fn rec(seq: Option<u64>, hash: &str, plan: Option<&str>) -> TailRecord {
        TailRecord {
            seq,
            sha256: hash.into(),
            plan_sha256: plan.map(str::to_owned),
            revision: None,
            summary_sha256: None,
        }
    }

    fn bound_doc(seq: u64, hash: &str) -> Map<String, Value> {
        doc(&format!(
            r#"{{"version":1,"goals":[],"lastMutation":{{"revision":1,"fromSeq":{seq},"entries":[],"ledgerHead":{{"seq":{seq},"sha256":"{hash}"}}}}}}"#
        ))
    }

    #[test]
    fn verdicts() {
        let legacy = doc(r#"{"version":1,"goals":[]}"#);
        assert_eq!(judge(&legacy, &[], false).state, State::Legacy);
        assert_eq!(
            judge(&legacy, &[rec(Some(3), "h", None)], false).state,
            State::Legacy
        );
        let b = judge(&legacy, &[rec(Some(3), "h", Some("x"))], false);
        assert_eq!(b.codes(), vec!["PLAN_TAMPERED"]);

        let p = bound_doc(4, "h4");
        let d = body_sha256(&p);
        let ok = [
            rec(Some(4), "h4", Some(&d)),
            rec(Some(3), "h3", Some("old")),
        ];
        assert_eq!(judge(&p, &ok, false).state, State::Bound);
        let annotated = [rec(Some(5), "h5", Some(&d)), ok[0].clone()];
        assert_eq!(judge(&p, &annotated, false).state, State::Bound);
        let edited = [rec(Some(4), "hX", Some(&d))];
        assert_eq!(judge(&p, &edited, false).codes(), vec!["LEDGER_TAMPERED"]);
        let other_plan = [rec(Some(4), "h4", Some("other"))];
        assert_eq!(judge(&p, &other_plan, false).codes(), vec!["PLAN_TAMPERED"]);
        let cut = [rec(Some(3), "h3", Some("old"))];
        assert_eq!(
            judge(&p, &cut, false).codes(),
            vec!["PLAN_TAMPERED", "LEDGER_TAMPERED"]
        );
        assert_eq!(judge(&p, &[], false).codes(), vec!["LEDGER_TAMPERED"]);
        let foreign = [rec(None, "n", None), ok[0].clone()];
        assert_eq!(judge(&p, &foreign, false).state, State::Bound);
        let forged = [rec(Some(5), "h5", None), ok[0].clone()];
        assert_eq!(judge(&p, &forged, false).codes(), vec!["LEDGER_TAMPERED"]);
    }

    /// The end of an engine-written plan is found and replaced only where it
    /// is `lastMutation`'s `ledgerHead`, naming the head expected; the file
    /// with the new end parses to the same body with the new head.
    #[test]
    fn the_ledger_head_end_is_spliced_only_where_it_is_last_mutations() {
        let old = NamedHead {
            seq: 7,
            sha256: "a".repeat(64),
        };
        let new = NamedHead {
            seq: 9,
            sha256: "b".repeat(64),
        };
        let plan = json!({"version": 1, "goals": [{"id": "G1", "note": "  \"lastMutation\": {"}],
            "lastMutation": {"revision": 2, "entries": [{"kind": "x"}], LEDGER_HEAD: old.to_json()}});
        let mut file = serde_json::to_vec_pretty(&plan).unwrap();
        file.push(b'\n');
        let prefix = ledger_head_prefix(&file, &old).expect("the engine's layout");
        let mut spliced = prefix.to_vec();
        spliced.extend_from_slice(ledger_head_end(&new).as_bytes());
        let doc: Map<String, Value> = serde_json::from_slice(&spliced).unwrap();
        assert_eq!(named_head(&doc), Some(new.clone()));
        assert_eq!(body_sha256(&doc), body_sha256(plan.as_object().unwrap()));
        // Another head named, or another layout: no splice.
        assert!(ledger_head_prefix(&file, &new).is_none());
        let compact = serde_json::to_vec(&plan).unwrap();
        assert!(ledger_head_prefix(&compact, &old).is_none());
        // The same end under another last member is not lastMutation's.
        let other = json!({"version": 1, "lastMutation": {"revision": 2, LEDGER_HEAD: old.to_json()},
            "x": {"revision": 2, LEDGER_HEAD: old.to_json()}});
        let mut file = serde_json::to_vec_pretty(&other).unwrap();
        file.push(b'\n');
        assert!(ledger_head_prefix(&file, &old).is_none());
    }

    /// A walk its budget cut among records newer than the head judges what
    /// it read: bound when each recorded this body (the head unread), and
    /// tampered when one recorded another body or nothing chained was read.
    /// A legacy plan over a cut walk stays legacy until something out of the
    /// agent's reach says the engine wrote the ledger.
    #[test]
    fn cut_walks() {
        let p = bound_doc(4, "h4");
        let d = body_sha256(&p);
        let newer = [rec(Some(6), "h6", Some(&d)), rec(Some(5), "h5", Some(&d))];
        let b = judge_cut(&p, &newer);
        assert_eq!((b.state, b.cut), (State::Bound, true));
        assert_eq!(judge(&p, &newer, false).codes(), vec!["LEDGER_TAMPERED"]);
        let other = [rec(Some(6), "h6", Some(&d)), rec(Some(5), "h5", Some("x"))];
        assert_eq!(judge_cut(&p, &other).codes(), vec!["PLAN_TAMPERED"]);
        let stripped = [rec(Some(5), "h5", None)];
        assert_eq!(judge_cut(&p, &stripped).codes(), vec!["LEDGER_TAMPERED"]);
        for nothing in [&[][..], &[rec(None, "n", None)][..]] {
            let b = judge_cut(&p, nothing);
            assert_eq!(b.codes(), vec!["LEDGER_TAMPERED"]);
            assert!(
                b.ledger_tampered
                    .unwrap()
                    .contains("no complete chained record")
            );
        }
        // Reaching an older record is not a cut: the head is missing.
        let older = [rec(Some(3), "h3", Some(&d))];
        let b = judge_cut(&p, &older);
        assert_eq!((b.codes(), b.cut), (vec!["LEDGER_TAMPERED"], false));

        let legacy = doc(r#"{"version":1,"goals":[]}"#);
        let b = judge_cut(&legacy, &[rec(None, "n", None)]);
        assert_eq!((b.state, b.cut), (State::Legacy, true));
        let b = b.hidden_binding("the test says so", &Plan::from_doc(legacy.clone()));
        assert_eq!(b.codes(), vec!["LEDGER_TAMPERED"]);
        assert!(b.ledger_tampered.unwrap().contains("the test says so"));
        let b = judge(&legacy, &[rec(None, "n", None)], false);
        assert_eq!((b.state, b.cut), (State::Legacy, false));
    }

    /// [`read_tail_file`] within a budget: the records that begin inside it,
    /// whether the walk was cut, and how far back it read; a line longer
    /// than the budget is not read at all.
    #[test]
    #[allow(clippy::disallowed_methods)]
    fn read_tail_file_keeps_to_its_budget() {
        let tmp = tempfile::tempdir().unwrap();
        let dir =
            cap_std::fs::Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let mut text = String::new();
        for seq in 1..=40u64 {
            let prev = "0".repeat(64);
            text.push_str(&format!(
                "{{\"seq\":{seq},\"prev\":\"{prev}\",\"planSha256\":\"d\",\"note\":\"{}\"}}\n",
                "n".repeat(200)
            ));
        }
        let line = text.lines().last().unwrap().len() as u64 + 1;
        std::fs::write(tmp.path().join("l"), &text).unwrap();
        let size = text.len() as u64;
        let mut f = dir.open("l").unwrap();
        let t = read_tail_file(&mut f, size, Some(1), usize::MAX, u64::MAX).unwrap();
        assert_eq!((t.records.len(), t.cut, t.bytes), (40, false, size));
        assert_eq!(t.end, Some(size));
        let t = read_tail_file(&mut f, size, Some(1), usize::MAX, 5 * line + 3).unwrap();
        assert_eq!((t.records.len(), t.cut, t.bytes), (5, true, 5 * line));
        assert_eq!(t.records[0].seq, Some(40));
        let t = read_tail_file(&mut f, size, Some(36), usize::MAX, 5 * line + 3).unwrap();
        assert_eq!((t.records.len(), t.cut), (5, false));
        let t = read_tail_file(&mut f, size, Some(1), usize::MAX, 5 * line).unwrap();
        assert_eq!(
            t.records.len(),
            4,
            "a record starting at the floor is not read"
        );

        text.push_str(&format!("{{\"kind\":\"{}\"}}\n", "x".repeat(4096)));
        std::fs::write(tmp.path().join("l"), &text).unwrap();
        let size = text.len() as u64;
        let mut f = dir.open("l").unwrap();
        let t = read_tail_file(&mut f, size, Some(1), usize::MAX, 1024).unwrap();
        assert!(t.records.is_empty() && t.cut, "{t:?}");
        assert_eq!(t.end, Some(size));
        // Unterminated and longer than the budget: no complete record end.
        text.pop();
        std::fs::write(tmp.path().join("l"), &text).unwrap();
        let mut f = dir.open("l").unwrap();
        let t = read_tail_file(&mut f, size - 1, Some(1), usize::MAX, 1024).unwrap();
        assert!(t.records.is_empty() && t.cut && t.end.is_none(), "{t:?}");
        assert_eq!(complete_len_within(&mut f, size - 1, 1024).unwrap(), None);
        assert_eq!(
            complete_len_within(&mut f, size - 1, u64::MAX).unwrap(),
            Some(size - 1 - 4096 - 11)
        );
    }

    /// The plan file's own hash stands for its body digest only when the
    /// ledger records it: the engine's file and the same plan laid out
    /// otherwise are both bound; a file whose content was edited is
    /// tampered with, in the engine's layout or not.
    #[test]
    fn a_plan_read_from_its_file_is_judged_by_its_body() {
        let rules = crate::rules::RuleSet::embedded().unwrap();
        let p = crate::goals::profile::Profiles::lookup(&rules, "ulw-loop").unwrap();
        let paths = crate::goals::StatePaths::new(&p.state_dir, None);
        let read = |bytes: &[u8]| Plan::decode_file(bytes.to_vec(), &paths, &p, "now").unwrap();
        let text = r#"{"version":1,"goals":[{"id":"G1","title":"t","objective":"o","status":"pending"}],
            "lastMutation":{"revision":1,"fromSeq":4,"entries":[],"ledgerHead":{"seq":4,"sha256":"h4"}},"revision":1}"#;
        let engine_file = read(text.as_bytes()).encode();
        let d = body_sha256(read(&engine_file).doc());
        let tail = Tail::whole(vec![rec(Some(4), "h4", Some(&d))]);
        let mut compact = serde_json::to_vec(read(&engine_file).doc()).unwrap();
        compact.push(b'\n');
        assert_ne!(compact, engine_file);
        for honest in [&engine_file, &compact] {
            let b = judge_plan(&read(honest), &tail, false);
            assert_eq!(b.state, State::Bound, "{}", String::from_utf8_lossy(honest));
            assert_eq!(b.body_sha256, d);
        }
        let edit = |bytes: &[u8]| {
            String::from_utf8(bytes.to_vec())
                .unwrap()
                .replace(r#""title": "t""#, r#""title": "x""#)
                .replace(r#""title":"t""#, r#""title":"x""#)
                .into_bytes()
        };
        for edited in [edit(&engine_file), edit(&compact)] {
            assert_ne!(edited, engine_file);
            let b = judge_plan(&read(&edited), &tail, false);
            assert_eq!(
                b.codes(),
                vec!["PLAN_TAMPERED"],
                "{}",
                String::from_utf8_lossy(&edited)
            );
        }
    }

    #[test]
    fn a_pending_mutation_must_record_this_body() {
        let mut p = bound_doc(9, "h9");
        assert_eq!(judge(&p, &[], true).codes(), vec!["PLAN_TAMPERED"]);
        let d = body_sha256(&p);
        let entries = vec![
            json!({"kind": "k", "planSha256": d})
                .as_object()
                .unwrap()
                .clone(),
        ];
        p["lastMutation"]["entries"] = json!(entries);
        // The head the engine names for these entries on an empty ledger.
        let (_, recs) = ledger::chain_records(0, None, &entries);
        let head = NamedHead {
            seq: recs[0].seq,
            sha256: recs[0].hash.clone(),
        };
        p["lastMutation"][LEDGER_HEAD] = head.to_json();
        assert_eq!(judge(&p, &[], true).state, State::Pending);
        p.insert("edited".into(), json!(true));
        assert_eq!(judge(&p, &[], true).codes(), vec!["PLAN_TAMPERED"]);
    }

    /// A pending mutation is what a crash between the plan write and the
    /// append leaves only when its entries not in the ledger, chained onto
    /// the ledger's last record, make the head the plan names: after a whole
    /// or partial append, and after a recovery cut short (its marker kept in
    /// `lastMutation.recovery`). Entries written into the plan by hand are
    /// `LEDGER_TAMPERED`.
    #[test]
    fn a_pending_mutation_must_chain_to_the_head_the_plan_names() {
        let obj = |v: Value| v.as_object().unwrap().clone();
        let ledger_before = vec![obj(json!({"kind": "plan_created", "revision": 1}))];
        let (_, before) = ledger::chain_records(0, None, &ledger_before);
        let last = &before[0];
        let tail = [rec(Some(last.seq), &last.hash, Some("old"))];
        let mut p = doc(r#"{"version":1,"goals":[],"revision":2}"#);
        let d = body_sha256(&p);
        let entries: Vec<Map<String, Value>> = ["goal_started", "criterion_recorded"]
            .iter()
            .map(|k| obj(json!({"kind": k, "revision": 2, "planSha256": d})))
            .collect();
        let (_, recs) = ledger::chain_records(last.seq, Some(&last.hash), &entries);
        let named = |r: &ledger::ChainedRecord| NamedHead {
            seq: r.seq,
            sha256: r.hash.clone(),
        };
        let set = |p: &mut Map<String, Value>, head: &NamedHead, extra: Option<Value>| {
            let mut lm = json!({"revision": 2, "fromSeq": 2, "entries": entries.clone(),
                                LEDGER_HEAD: head.to_json()});
            if let Some(m) = extra {
                lm[RECOVERY] = m;
            }
            p.insert("lastMutation".into(), lm);
        };
        // The crash before the append.
        set(&mut p, &named(&recs[1]), None);
        assert_eq!(judge(&p, &tail, true).state, State::Pending);
        // The first entry landed, the second did not.
        let first = rec(Some(recs[0].seq), &recs[0].hash, Some(&d));
        assert_eq!(judge(&p, &[first], true).state, State::Pending);
        // A head made up by hand.
        set(
            &mut p,
            &NamedHead {
                seq: 3,
                sha256: "0".repeat(64),
            },
            None,
        );
        let b = judge(&p, &tail, true);
        assert_eq!(b.codes(), vec!["LEDGER_TAMPERED"]);
        assert!(b.ledger_tampered.unwrap().contains("by hand"));
        // The recovery named marker + both entries, and only its marker landed.
        let marker = obj(json!({"kind": "ledger_repaired", "revision": 2,
                                 "repair": {"reason": "ledger_behind_plan", "recoveredCount": 2}}));
        let mut again = vec![marker.clone()];
        again.extend(entries.iter().cloned().map(|mut e| {
            e.insert("recovered".into(), json!(true));
            e
        }));
        let (_, rrecs) = ledger::chain_records(last.seq, Some(&last.hash), &again);
        set(&mut p, &named(&rrecs[2]), Some(Value::Object(marker)));
        assert_eq!(
            judge(&p, &tail, true).state,
            State::Pending,
            "nothing of it landed"
        );
        let landed = rec(Some(rrecs[0].seq), &rrecs[0].hash, Some(&d));
        assert_eq!(
            judge(&p, &[landed], true).state,
            State::Pending,
            "its marker landed"
        );
        // Without the marker kept, that head is not the entries'.
        set(&mut p, &named(&rrecs[2]), None);
        assert_eq!(judge(&p, &tail, true).codes(), vec!["LEDGER_TAMPERED"]);
    }
}
