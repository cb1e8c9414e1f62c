//! The plan body's digest (docs/threat-model.md#i7): the plan object without
//! its `lastMutation`, serialised as [`super::Plan::encode`] writes plans.

use std::io;
use std::ops::Range;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The plan object without `lastMutation`, serialised in place (no copy of
/// a large plan).
struct Body<'a>(&'a Map<String, Value>);

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0.len() - usize::from(self.0.contains_key("lastMutation"));
        let mut m = s.serialize_map(Some(n))?;
        for (k, v) in self.0 {
            if k != "lastMutation" {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

struct HashWriter(Sha256);

impl io::Write for HashWriter {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.update(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// SHA-256 of the plan body (the document without `lastMutation`, as the
/// engine serialises plans).
pub fn body_sha256(doc: &Map<String, Value>) -> String {
    let mut w = HashWriter(Sha256::new());
    serde_json::to_writer_pretty(&mut w, &Body(doc)).expect("JSON values serialise");
    w.0.update(b"\n");
    crate::digest::hex(&w.0.finalize())
}

/// `"lastMutation": <value>` one level deep, as a plan file holds it: the
/// member of a one-member object, without its braces.
fn last_mutation_member(value: &Value) -> Vec<u8> {
    let mut one = Map::new();
    one.insert("lastMutation".into(), value.clone());
    let whole = serde_json::to_vec_pretty(&one).expect("JSON values serialise");
    whole[4..whole.len() - 2].to_vec()
}

/// SHA-256 of the plan file `bytes` with `doc`'s `lastMutation` member cut
/// out where [`BodyText::file_bytes`] puts it: [`body_sha256`] of `doc`
/// when the file is exactly as the engine writes plans, another digest when
/// it is laid out otherwise (`None` when the member is not found).
///
/// It costs one hash of the file instead of a serialisation of the plan.
/// A caller may take it for the body digest only when it equals a digest
/// the engine recorded: bytes that hash to a recorded body digest are the
/// body the engine serialised, and serialising what they parse to gives
/// them back.
pub(crate) fn raw_body_sha256(bytes: &[u8], doc: &Map<String, Value>) -> Option<String> {
    raw_body_sha256_of(bytes, doc.get("lastMutation"))
}

/// [`raw_body_sha256`] of a document whose `lastMutation` is `last_mutation`.
pub(crate) fn raw_body_sha256_of(bytes: &[u8], last_mutation: Option<&Value>) -> Option<String> {
    let mut h = Sha256::new();
    match last_mutation {
        None => h.update(bytes),
        Some(value) => {
            let member = last_mutation_member(value);
            // After another member (or before the closing brace): a line
            // indented by exactly two spaces is a top-level member, and the
            // strict reader allows one `lastMutation`.
            let mut after = b",\n  ".to_vec();
            after.extend_from_slice(&member);
            let mut first = b"{\n  ".to_vec();
            first.extend_from_slice(&member);
            if let Some(at) = crate::scan::find(bytes, &after) {
                h.update(&bytes[..at]);
                h.update(&bytes[at + after.len()..]);
            } else if bytes.starts_with(&first) && bytes.get(first.len()) == Some(&b',') {
                h.update(b"{");
                h.update(&bytes[first.len() + 1..]);
            } else if bytes.starts_with(&first) && &bytes[first.len()..] == b"\n}\n" {
                h.update(b"{}\n");
            } else {
                return None;
            }
        }
    }
    Some(crate::digest::hex(&h.finalize()))
}

/// The plan body serialised once, as [`body_sha256`] hashes it, with the
/// offset at which each of its members starts: the plan file is this text
/// with `lastMutation` put back at its place ([`BodyText::file`]), so a
/// write serialises the plan once for its digest and its file.
pub(crate) struct BodyText {
    /// The text, shared with the plan files made of it.
    text: Arc<Text>,
    /// For each body member, the offset before its separator and key.
    starts: Vec<usize>,
}

/// A text made of bytes of its own with spans of a file read spliced in:
/// goals a write did not change stay in the plan file they were read from
/// instead of being copied ([`BodyText::of_plan`]).
#[derive(Debug)]
struct Text {
    own: Vec<u8>,
    /// The file the spliced spans are in.
    file: Option<Arc<Vec<u8>>>,
    /// `(at, span)`: `file[span]` comes before `own[at..]`, in order of `at`.
    splices: Vec<(usize, Range<usize>)>,
}

impl Text {
    /// Its length in bytes.
    fn len(&self) -> usize {
        self.own.len() + self.splices.iter().map(|(_, r)| r.len()).sum::<usize>()
    }

    /// Its bytes from `lo` to `hi`, in pieces (none empty).
    fn pieces(&self, lo: usize, hi: usize) -> Vec<&[u8]> {
        let file = self.file.as_deref().map_or(&[][..], Vec::as_slice);
        let mut out = Vec::with_capacity(2 * self.splices.len() + 1);
        let mut at = 0;
        let mut pos = 0;
        let take = |piece: &'_ [u8], pos: &mut usize| {
            let (start, end) = (*pos, *pos + piece.len());
            *pos = end;
            let (a, b) = (start.max(lo), end.min(hi));
            (a < b).then(|| (a - start, b - start))
        };
        for (own_at, span) in &self.splices {
            let piece = &self.own[at..*own_at];
            if let Some((a, b)) = take(piece, &mut pos) {
                out.push(&piece[a..b]);
            }
            let piece = &file[span.clone()];
            if let Some((a, b)) = take(piece, &mut pos) {
                out.push(&piece[a..b]);
            }
            at = *own_at;
        }
        let piece = &self.own[at..];
        if let Some((a, b)) = take(piece, &mut pos) {
            out.push(&piece[a..b]);
        }
        out
    }
}

/// Writes a body: [`Text`] under construction.
pub(crate) struct Builder {
    text: Text,
    /// The bytes spliced in so far.
    spliced: usize,
}

impl Builder {
    /// The bytes written so far, own and spliced.
    fn len(&self) -> usize {
        self.text.own.len() + self.spliced
    }

    /// The text's own buffer, to append to.
    pub(crate) fn own(&mut self) -> &mut Vec<u8> {
        &mut self.text.own
    }

    /// Appends `file[span]` (the builder's file). When the previous splice
    /// ends where the file continues with exactly the bytes written since,
    /// it is extended over them instead (consecutive unchanged goals are one
    /// span, so a write of one goal has a handful of pieces).
    fn splice(&mut self, span: Range<usize>) {
        let file = self
            .text
            .file
            .as_deref()
            .expect("a builder that splices has a file");
        let own = &mut self.text.own;
        if let Some((at, last)) = self.text.splices.last_mut()
            && last.end <= span.start
            && file[last.end..span.start] == own[*at..]
        {
            self.spliced += span.end - last.end;
            own.truncate(*at);
            last.end = span.end;
            return;
        }
        self.spliced += span.len();
        self.text.splices.push((own.len(), span));
    }
}

impl crate::json::AsBuffer for Builder {
    fn buffer(&mut self) -> &mut Vec<u8> {
        self.own()
    }
}

impl BodyText {
    /// Serialises the body of `doc` in the layout of [`body_sha256`], a
    /// long member array (a plan's goals) on two threads.
    pub(crate) fn of(doc: &Map<String, Value>) -> BodyText {
        BodyText::with_capacity(doc, 0)
    }

    /// [`BodyText::of`] the plan's document, with each goal unchanged since
    /// a file that is the plan encoded was read taken from that file
    /// ([`super::Plan::kept_goal_span`]) instead of serialised again: the
    /// body then refers to the file's bytes, it does not copy them.
    pub(crate) fn of_plan(plan: &super::Plan) -> BodyText {
        let Some(file) = plan.kept_goals_file() else {
            return BodyText::of(plan.doc());
        };
        let text = BodyText::build(plan.doc(), 0, Some(file), &|b, v| {
            let items = v.as_array().expect("validated");
            crate::json::write_pretty_array_kept(b, items, 1, &mut |b: &mut Builder, i| {
                plan.kept_goal_span(i).map(|span| b.splice(span)).is_some()
            });
        });
        debug_assert!(
            text.to_vec() == BodyText::of(&plan.whole_doc()).to_vec(),
            "kept goal texts give the serialised body"
        );
        text
    }

    /// [`BodyText::of`] into a buffer of `capacity` bytes (the size of the
    /// plan file read, when known).
    pub(crate) fn with_capacity(doc: &Map<String, Value>, capacity: usize) -> BodyText {
        BodyText::build(doc, capacity, None, &|b, v| {
            crate::json::write_pretty_at(b.own(), v, 1)
        })
    }

    /// The body of `doc`, its `goals` member written by `goals`.
    fn build(
        doc: &Map<String, Value>,
        capacity: usize,
        file: Option<Arc<Vec<u8>>>,
        goals: &dyn Fn(&mut Builder, &Value),
    ) -> BodyText {
        let mut b = Builder {
            text: Text {
                own: Vec::with_capacity(capacity),
                file,
                splices: Vec::new(),
            },
            spliced: 0,
        };
        let mut starts = Vec::with_capacity(doc.len());
        b.own().push(b'{');
        for (k, v) in doc {
            if k == "lastMutation" {
                continue;
            }
            starts.push(b.len());
            if starts.len() > 1 {
                b.own().push(b',');
            }
            b.own().extend_from_slice(b"\n  ");
            serde_json::to_writer(b.own(), k).expect("a key serialises");
            b.own().extend_from_slice(b": ");
            if k == "goals" && v.is_array() {
                goals(&mut b, v);
            } else {
                crate::json::write_pretty_at(b.own(), v, 1);
            }
        }
        let end: &[u8] = if starts.is_empty() { b"}" } else { b"\n}" };
        b.own().extend_from_slice(end);
        BodyText {
            text: Arc::new(b.text),
            starts,
        }
    }

    /// The body's bytes (without the final `\n`) in one buffer.
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        self.text.pieces(0, usize::MAX).concat()
    }

    /// [`body_sha256`] of the document serialised.
    pub(crate) fn sha256(&self) -> String {
        let mut h = Sha256::new();
        for piece in self.text.pieces(0, usize::MAX) {
            h.update(piece);
        }
        h.update(b"\n");
        crate::digest::hex(&h.finalize())
    }

    /// The plan file (`Plan::encode`) of `doc`, whose body is the one
    /// serialised here: the body's text with `doc`'s `lastMutation`, if any,
    /// at its position. The body's bytes are shared, not copied.
    pub(crate) fn file(&self, doc: &Map<String, Value>) -> PlanFile {
        let len = self.text.len();
        let at = doc.keys().position(|k| k == "lastMutation");
        let (cut, insert, resume) = match at.zip(doc.get("lastMutation")) {
            None => (len, Vec::new(), len),
            Some((k, value)) => {
                let member = &last_mutation_member(value)[..];
                match self.starts.get(k) {
                    // Before the member that follows it.
                    Some(&at) if k > 0 => (at, [b",\n  ", member].concat(), at),
                    Some(&at) => (at, [b"\n  ", member, b","].concat(), at),
                    // The last member.
                    None if self.starts.is_empty() => (0, [b"{\n  ", member, b"\n}"].concat(), len),
                    None => (len - 2, [b",\n  ", member, b"\n}"].concat(), len),
                }
            }
        };
        PlanFile {
            body: Arc::clone(&self.text),
            cut,
            insert,
            resume,
        }
    }

    /// [`BodyText::file`] in one buffer.
    #[cfg(test)]
    pub(crate) fn file_bytes(&self, doc: &Map<String, Value>) -> Vec<u8> {
        self.file(doc).to_vec()
    }
}

/// A plan file as [`BodyText::file`] makes it: the body's text up to `cut`,
/// then `insert` (the `lastMutation` member with its separators), then the
/// body from `resume`, then `\n`. Kept in these pieces, a large plan is
/// written and printed without another copy of it.
#[derive(Debug, Clone)]
pub(crate) struct PlanFile {
    body: Arc<Text>,
    cut: usize,
    insert: Vec<u8>,
    resume: usize,
}

impl PlanFile {
    /// The file's bytes, in order (no piece empty).
    pub(crate) fn pieces(&self) -> Vec<&[u8]> {
        let mut out = self.body.pieces(0, self.cut);
        if !self.insert.is_empty() {
            out.push(&self.insert);
        }
        out.extend(self.body.pieces(self.resume, usize::MAX));
        out.push(b"\n");
        out
    }

    /// The file in one buffer.
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        self.pieces().concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn encode(doc: &Map<String, Value>) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(doc).unwrap();
        out.push(b'\n');
        out
    }

    fn check(doc: &Map<String, Value>) {
        let body = BodyText::of(doc);
        assert_eq!(body.sha256(), body_sha256(doc), "{doc:?}");
        // The file as the engine writes it gives the body digest back.
        assert_eq!(
            raw_body_sha256(&encode(doc), doc).as_deref(),
            Some(body_sha256(doc).as_str()),
            "{doc:?}"
        );
        // Laid out otherwise (compact), it never does.
        let mut compact = serde_json::to_vec(doc).unwrap();
        compact.push(b'\n');
        if compact != encode(doc) {
            assert_ne!(
                raw_body_sha256(&compact, doc).as_deref(),
                Some(body_sha256(doc).as_str())
            );
        }
        assert_eq!(
            String::from_utf8(body.file_bytes(doc)).unwrap(),
            String::from_utf8(encode(doc)).unwrap()
        );
    }

    #[test]
    fn the_file_is_the_body_with_last_mutation_at_its_place() {
        let lm = json!({"revision": 2, "entries": [{"kind": "x", "t": "a\nb"}], "ledgerHead": {}});
        let members = [
            ("version", json!(1)),
            (
                "goals",
                json!([{"id": "G1", "criteria": []}, {"id": "G2", "n": {"d": [1, null]}}]),
            ),
            ("empty", json!({})),
            ("title", json!("é \"q\" \u{2028}")),
        ];
        for at in 0..=members.len() {
            for with in [true, false] {
                let mut doc = Map::new();
                for (i, (k, v)) in members.iter().enumerate() {
                    if with && i == at {
                        doc.insert("lastMutation".into(), lm.clone());
                    }
                    doc.insert((*k).into(), v.clone());
                }
                if with && at == members.len() {
                    doc.insert("lastMutation".into(), lm.clone());
                }
                check(&doc);
            }
        }
        // Only lastMutation; empty documents; empty lastMutation.
        let mut only = Map::new();
        only.insert("lastMutation".into(), lm.clone());
        check(&only);
        check(&Map::new());
        let mut empty_lm = Map::new();
        empty_lm.insert("a".into(), json!(1));
        empty_lm.insert("lastMutation".into(), json!({}));
        empty_lm.insert("b".into(), json!([]));
        check(&empty_lm);
    }

    #[test]
    fn a_long_goal_list_is_written_as_the_encoder_writes_it() {
        let goals: Vec<Value> = (0..300)
            .map(|i| json!({"id": format!("G{i}"), "criteria": [{"id": "C1", "ok": i % 2 == 0}], "e": []}))
            .collect();
        let mut doc = Map::new();
        doc.insert("version".into(), json!(1));
        doc.insert("goals".into(), Value::Array(goals));
        doc.insert("lastMutation".into(), json!({"revision": 3}));
        doc.insert("updatedAt".into(), json!("t"));
        check(&doc);
        assert_eq!(
            BodyText::with_capacity(&doc, 1 << 16).to_vec(),
            BodyText::of(&doc).to_vec()
        );
    }

    /// A text with spans of a file spliced in gives, for any range, the
    /// bytes of that range of the whole.
    #[test]
    fn a_spliced_text_gives_any_range_of_its_bytes() {
        let file = Arc::new(b"0123456789abcdef".to_vec());
        let text = Text {
            own: b"ABCDEFG".to_vec(),
            file: Some(Arc::clone(&file)),
            splices: vec![(0, 0..3), (2, 3..3), (2, 5..9), (7, 10..16)],
        };
        let whole: Vec<u8> = [&b""[..], b"012", b"AB", b"5678", b"CDEFG", b"abcdef"].concat();
        assert_eq!(text.len(), whole.len());
        for lo in 0..=whole.len() {
            for hi in lo..=whole.len() + 1 {
                let pieces = text.pieces(lo, hi);
                assert!(pieces.iter().all(|p| !p.is_empty()));
                assert_eq!(
                    pieces.concat(),
                    whole[lo..hi.min(whole.len())],
                    "{lo}..{hi}"
                );
            }
        }
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_member_order_gives_the_encoded_file(
            keys in proptest::collection::vec("[a-c]{1,2}", 0..6),
            at in 0usize..7,
            lm_empty in any::<bool>(),
        ) {
            let mut doc = Map::new();
            for (i, k) in keys.iter().enumerate() {
                if i == at {
                    doc.insert("lastMutation".into(), if lm_empty { json!({}) } else { json!({"r": [i, {"k": k}]}) });
                }
                doc.insert(k.clone(), json!({"v": i, "s": k}));
            }
            let body = BodyText::of(&doc);
            prop_assert_eq!(body.sha256(), body_sha256(&doc));
            prop_assert_eq!(body.file_bytes(&doc), encode(&doc));
            prop_assert_eq!(raw_body_sha256(&encode(&doc), &doc), Some(body_sha256(&doc)));
        }
    }
}
