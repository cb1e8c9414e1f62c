//! Words matched at Unicode word boundaries without compiling a regular
//! expression: the blocker classifier's word lists and the steering
//! wording checks run once per call, where building the equivalent Unicode
//! automata would cost more than the whole check.

/// One word-list entry: the literal `stem`, matched at word boundaries; with
/// `prefix` (a trailing `*` in the rules) any word characters may follow it.
///
/// This is exactly the regular expression `\b<stem>\b` (or `\b<stem>\w*\b`)
/// with Unicode word characters, evaluated without compiling it: a `checkpoint
/// --status blocked|failed` call would otherwise build about 35 Unicode
/// automata to classify one sentence.
#[derive(Debug, Clone)]
pub(crate) struct Word {
    stem: String,
    prefix: bool,
}

impl Word {
    pub(crate) fn new(w: &str) -> Word {
        match w.strip_suffix('*') {
            Some(stem) => Word {
                stem: stem.to_owned(),
                prefix: true,
            },
            None => Word {
                stem: w.to_owned(),
                prefix: false,
            },
        }
    }

    /// Whether the entry occurs in `text` (every start position is tried, as
    /// a regex search does).
    pub(crate) fn is_match(&self, text: &str) -> bool {
        let mut from = 0;
        while let Some(found) = text[from..].find(self.stem.as_str()) {
            let start = from + found;
            let end = start + self.stem.len();
            if at_boundary(text, start)
                && (at_boundary(text, end) || (self.prefix && word_at(text, end)))
            {
                return true;
            }
            match text[start..].chars().next() {
                Some(c) => from = start + c.len_utf8(),
                None => return false,
            }
        }
        false
    }
}

/// `\w` in Unicode mode (the regex crate's own table).
fn is_word(c: char) -> bool {
    regex_syntax::is_word_character(c)
}

/// Whether the character starting at byte `i` is a word character.
fn word_at(text: &str, i: usize) -> bool {
    text[i..].chars().next().is_some_and(is_word)
}

/// `\b` at byte `i`: a word character on exactly one side (the text's ends
/// count as non-word).
fn at_boundary(text: &str, i: usize) -> bool {
    let before = text[..i].chars().next_back().is_some_and(is_word);
    before != word_at(text, i)
}

/// Every occurrence of `stem` in `text` with a word boundary on both sides
/// (where `\b<stem>\b` would match), as byte ranges in order of their start;
/// every start position is tried, as a regex search does.
pub(crate) fn bounded<'t>(
    text: &'t str,
    stem: &'t str,
) -> impl Iterator<Item = (usize, usize)> + 't {
    let mut from = 0;
    std::iter::from_fn(move || {
        while from <= text.len() {
            let start = from + text[from..].find(stem)?;
            let end = start + stem.len();
            from = start + text[start..].chars().next().map_or(1, char::len_utf8);
            if at_boundary(text, start) && at_boundary(text, end) {
                return Some((start, end));
            }
        }
        None
    })
}
