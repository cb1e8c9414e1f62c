//! Text hygiene (docs/threat-model.md#i6: text means what it shows). The one
//! place that decides what an agent-written text *shows*: NUL and every
//! Unicode format character (`Cf`: zero-width space, joiners, BOM, word
//! joiner, bidi controls, …) show nothing, and a run of whitespace shows as
//! one space. Every blank and placeholder check folds its text through
//! [`fold`] first, so a summary made of a zero-width space is blank; every
//! report escapes what does not print through [`is_unprintable`].

use std::borrow::Cow;

/// The Unicode `Cf` (format) code points, as inclusive ranges in ascending
/// order. A unit test compares the table with the `\p{Cf}` class of the
/// `regex` crate's Unicode tables over every code point, so it cannot drift
/// unnoticed when those tables move to a newer Unicode version.
pub(crate) const FORMAT_RANGES: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// The bidirectional controls a path may not contain (docs/threat-model.md#i6):
/// ALM, LRM/RLM, the embeddings and overrides, the isolates.
pub(crate) const BIDI_CONTROLS: &[(u32, u32)] = &[
    (0x061C, 0x061C),
    (0x200E, 0x200F),
    (0x202A, 0x202E),
    (0x2066, 0x2069),
];

fn in_ranges(c: char, ranges: &[(u32, u32)]) -> bool {
    let c = c as u32;
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// True for a Unicode format character (general category `Cf`).
pub(crate) fn is_format(c: char) -> bool {
    (c as u32) >= 0xAD && in_ranges(c, FORMAT_RANGES)
}

/// A JSON Schema `pattern` (ECMA-262, and the same meaning in Python's `re`
/// and Rust's `regex`) that matches a text which is not blank by
/// [`is_blank`]: it contains a character that is neither NUL, whitespace
/// (`char::is_whitespace`) nor `Cf`. ASCII controls are written `\xHH`,
/// every other character literally, so no dialect's escapes are needed.
pub(crate) fn visible_pattern() -> String {
    const WHITESPACE: &[(u32, u32)] = &[
        (0x0009, 0x000D),
        (0x0020, 0x0020),
        (0x0085, 0x0085),
        (0x00A0, 0x00A0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
    ];
    let one = |c: u32| -> String {
        if c < 0x80 {
            format!("\\x{c:02x}")
        } else {
            char::from_u32(c).expect("a scalar value").to_string()
        }
    };
    let mut ranges: Vec<(u32, u32)> = [(0, 0)]
        .iter()
        .chain(WHITESPACE)
        .chain(FORMAT_RANGES)
        .copied()
        .collect();
    ranges.sort_unstable();
    let mut class = String::from("[^");
    for (lo, hi) in ranges {
        class.push_str(&one(lo));
        if hi != lo {
            class.push('-');
            class.push_str(&one(hi));
        }
    }
    class.push(']');
    class
}

/// True for a bidirectional control character.
pub(crate) fn is_bidi_control(c: char) -> bool {
    in_ranges(c, BIDI_CONTROLS)
}

/// True for a character a report must not print raw: a control character
/// (`Cc`, NUL included), a format character (`Cf`) or a line/paragraph
/// separator (U+2028, U+2029), which would break or reorder the line.
pub(crate) fn is_unprintable(c: char) -> bool {
    c.is_control() || is_format(c) || c == '\u{2028}' || c == '\u{2029}'
}

/// What a text shows: NUL and every `Cf` character removed, each run of
/// whitespace collapsed to one space, leading and trailing space trimmed.
/// Borrowed when the text already is in that form.
pub(crate) fn fold(s: &str) -> Cow<'_, str> {
    let clean = |c: char| c != '\0' && !is_format(c);
    let already = !s.starts_with(char::is_whitespace)
        && !s.ends_with(char::is_whitespace)
        && s.chars().all(clean)
        && single_spaced(s);
    if already {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut pending = false;
    for c in s.chars().filter(|c| clean(*c)) {
        if c.is_whitespace() {
            pending = true;
        } else {
            if pending && !out.is_empty() {
                out.push(' ');
            }
            pending = false;
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// True when every whitespace character is a single ASCII space.
fn single_spaced(s: &str) -> bool {
    let mut prev_space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            if c != ' ' || prev_space {
                return false;
            }
            prev_space = true;
        } else {
            prev_space = false;
        }
    }
    true
}

/// True when the text shows nothing (empty after [`fold`]).
pub(crate) fn is_blank(s: &str) -> bool {
    s.chars()
        .all(|c| c == '\0' || c.is_whitespace() || is_format(c))
}

/// Folds a byte stream the way [`fold`] folds text, for digests of files of
/// any size: valid UTF-8 is decoded (a character split across two chunks is
/// carried over), NUL and `Cf` characters are dropped, whitespace runs become
/// one space, leading and trailing whitespace is dropped; bytes that are not
/// UTF-8 pass through unchanged.
#[derive(Debug, Default)]
pub(crate) struct FoldStream {
    carry: Vec<u8>,
    pending_space: bool,
    started: bool,
}

impl FoldStream {
    /// Feeds a chunk; the folded bytes go to `out`.
    pub(crate) fn update(&mut self, chunk: &[u8], out: &mut dyn FnMut(&[u8])) {
        if self.carry.is_empty() {
            self.feed(chunk, out, false);
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(chunk);
            self.feed(&joined, out, false);
        }
    }

    /// Ends the stream (a carried incomplete sequence passes through raw).
    pub(crate) fn finish(mut self, out: &mut dyn FnMut(&[u8])) {
        let rest = std::mem::take(&mut self.carry);
        self.feed(&rest, out, true);
    }

    fn feed(&mut self, mut bytes: &[u8], out: &mut dyn FnMut(&[u8]), last: bool) {
        while !bytes.is_empty() {
            match std::str::from_utf8(bytes) {
                Ok(s) => {
                    self.text(s, out);
                    return;
                }
                Err(e) => {
                    let (good, rest) = bytes.split_at(e.valid_up_to());
                    self.text(std::str::from_utf8(good).expect("valid prefix"), out);
                    match e.error_len() {
                        Some(n) => {
                            self.raw(&rest[..n], out);
                            bytes = &rest[n..];
                        }
                        None if !last => {
                            self.carry = rest.to_vec();
                            return;
                        }
                        None => {
                            self.raw(rest, out);
                            return;
                        }
                    }
                }
            }
        }
    }

    fn text(&mut self, s: &str, out: &mut dyn FnMut(&[u8])) {
        let mut buf = [0u8; 4];
        for c in s.chars() {
            if c == '\0' || is_format(c) {
                continue;
            }
            if c.is_whitespace() {
                self.pending_space = true;
                continue;
            }
            self.lead(out);
            out(c.encode_utf8(&mut buf).as_bytes());
        }
    }

    fn raw(&mut self, b: &[u8], out: &mut dyn FnMut(&[u8])) {
        self.lead(out);
        out(b);
    }

    fn lead(&mut self, out: &mut dyn FnMut(&[u8])) {
        if self.pending_space && self.started {
            out(b" ");
        }
        self.pending_space = false;
        self.started = true;
    }
}

/// Escapes every [`is_unprintable`] character as `\u{..}` (lower-case hex).
/// Borrowed when nothing needs escaping.
pub(crate) fn escape_unprintable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unprintable) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unprintable(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Cuts `s` to at most `max` bytes at a character boundary.
pub fn cap_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_table_is_the_unicode_cf_category() {
        let cf = regex::Regex::new(r"^\p{Cf}$").unwrap();
        let mut buf = [0u8; 4];
        let mut differ = Vec::new();
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            if cf.is_match(c.encode_utf8(&mut buf)) != is_format(c) {
                differ.push(format!("U+{:04X}", c as u32));
            }
        }
        assert!(differ.is_empty(), "FORMAT_RANGES differs at {differ:?}");
        let visible = regex::Regex::new(&visible_pattern()).unwrap();
        for s in [
            "",
            " \t\n",
            "\u{200B}\u{FEFF}\u{2066}",
            "\0\u{3000}",
            "\u{E0020}\u{1D173}",
            "\u{85}\u{2029}",
        ] {
            assert!(is_blank(s) && !visible.is_match(s), "{s:?}");
        }
        for s in ["a", " x ", "\u{200B}é", "完了", "\u{1F600}", "-", "\u{1C}"] {
            assert!(!is_blank(s) && visible.is_match(s), "{s:?}");
        }
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let s = c.to_string();
            assert_eq!(visible.is_match(&s), !is_blank(&s), "{c:?}");
        }
        for w in FORMAT_RANGES.windows(2) {
            assert!(w[0].1 < w[1].0, "ranges sorted and disjoint");
        }
        for &(lo, hi) in BIDI_CONTROLS {
            for c in (lo..=hi).filter_map(char::from_u32) {
                assert!(is_format(c) && is_bidi_control(c));
            }
        }
        assert!(!is_bidi_control('\u{200B}') && !is_bidi_control('a'));
    }

    #[test]
    fn blank_means_nothing_shows() {
        for s in [
            "",
            "  ",
            "\u{200B}",
            "\0",
            "\u{FEFF}\u{2060}\u{200D} \u{202E}\t\n",
            "\u{00A0}\u{3000}",
        ] {
            assert!(is_blank(s), "{s:?}");
            assert_eq!(fold(s), "", "{s:?}");
        }
        for s in ["x", "Überprüft: 完了", "\u{200B}a", "مرحبا"] {
            assert!(!is_blank(s), "{s:?}");
        }
    }

    #[test]
    fn fold_strips_format_characters_and_collapses_space() {
        assert_eq!(fold("  a \u{200B} b\r\n\tc  "), "a b c");
        assert_eq!(fold("t\u{200B}o\u{00AD}d\0o"), "todo");
        assert_eq!(fold("Überprüft: 完了"), "Überprüft: 完了");
        assert!(matches!(fold("plain text"), Cow::Borrowed(_)));
        assert!(matches!(fold("two  spaces"), Cow::Owned(_)));
    }

    fn stream(chunks: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut f = FoldStream::default();
        for c in chunks {
            f.update(c, &mut |b| out.extend_from_slice(b));
        }
        f.finish(&mut |b| out.extend_from_slice(b));
        out
    }

    #[test]
    fn the_stream_folds_like_fold_across_chunk_boundaries() {
        let text = "  Änderung:\r\n ran \u{200B}cargo test\u{FEFF} — ok 完了 \n";
        let want = fold(text).into_owned().into_bytes();
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(stream(&[a, b]), want, "cut at {cut}");
        }
        assert_eq!(stream(&[b"a\xff  b", b"\xe2"]), b"a\xff b\xe2");
    }

    #[test]
    fn escaping_covers_controls_format_and_separators() {
        assert_eq!(escape_unprintable("a\u{202E}b"), "a\\u{202e}b");
        assert_eq!(
            escape_unprintable("x\u{1b}[2J\t\0"),
            "x\\u{1b}[2J\\u{9}\\u{0}"
        );
        assert_eq!(escape_unprintable("l\u{2028}"), "l\\u{2028}");
        assert!(matches!(
            escape_unprintable("Überprüft 完了"),
            Cow::Borrowed(_)
        ));
    }
}
