//! Integer counts judged by their JSON text.
//!
//! `serde_json` without `arbitrary_precision` turns `2.0`, `1e1` and
//! integers beyond `u64` into `f64`, so the parsed value cannot say how a
//! number was written. The gate requires counts written as plain integers
//! (docs/gates.md#qg-3), so the raw token is located in the document text — which
//! [`crate::json::parse_strict`] has already accepted, so the scanner may
//! assume well-formed JSON without duplicate keys — and judged by its
//! spelling.

/// How a count was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CountToken {
    /// Digits only, no sign, fitting `u64`.
    Integer(u64),
    /// A fraction or exponent part (`2.5`, `2.0`, `1e1`).
    NotInteger,
    /// A minus sign (`-1`, `-0`).
    Negative,
    /// Digits only, but beyond `u64`.
    TooLarge,
}

/// Judges a JSON number token.
pub(crate) fn classify(token: &str) -> CountToken {
    if token.contains(['.', 'e', 'E']) {
        return CountToken::NotInteger;
    }
    if token.starts_with('-') {
        return CountToken::Negative;
    }
    match token.parse::<u64>() {
        Ok(n) => CountToken::Integer(n),
        Err(_) => CountToken::TooLarge,
    }
}

/// The raw text of the number at the object-key `path`, or `None` when the
/// value there is not a number (or the path does not exist).
pub(crate) fn raw_number<'a>(text: &'a str, path: &[&str]) -> Option<&'a str> {
    let mut s = Scanner {
        b: text.as_bytes(),
        i: 0,
    };
    let span = s.value(path)?;
    text.get(span.0..span.1)
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self
            .b
            .get(self.i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.i += 1;
        }
    }

    /// Scans one value; when `path` is empty and the value is a number,
    /// returns its span. Otherwise descends along `path` through objects.
    fn value(&mut self, path: &[&str]) -> Option<(usize, usize)> {
        self.ws();
        match *self.b.get(self.i)? {
            b'{' => self.object(path),
            b'[' => {
                self.skip_container();
                None
            }
            b'"' => {
                self.string();
                None
            }
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                while self
                    .b
                    .get(self.i)
                    .is_some_and(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    self.i += 1;
                }
                path.is_empty().then_some((start, self.i))
            }
            _ => {
                while self.b.get(self.i).is_some_and(u8::is_ascii_alphabetic) {
                    self.i += 1;
                }
                None
            }
        }
    }

    fn object(&mut self, path: &[&str]) -> Option<(usize, usize)> {
        self.i += 1;
        let mut found = None;
        loop {
            self.ws();
            match self.b.get(self.i)? {
                b'}' => {
                    self.i += 1;
                    return found;
                }
                b',' => {
                    self.i += 1;
                    continue;
                }
                _ => {}
            }
            let (ks, ke) = self.string();
            let key: Option<String> = serde_json::from_slice(&self.b[ks..ke]).ok();
            self.ws();
            self.i += 1; // the ':'
            let hit = !path.is_empty() && key.as_deref() == Some(path[0]);
            if hit {
                found = self.value(&path[1..]);
            } else {
                self.value(&[""]);
            }
        }
    }

    /// Skips a string and returns its span including the quotes.
    fn string(&mut self) -> (usize, usize) {
        let start = self.i;
        self.i += 1;
        while let Some(&c) = self.b.get(self.i) {
            self.i += 1;
            match c {
                b'\\' => self.i += 1,
                b'"' => break,
                _ => {}
            }
        }
        (start, self.i)
    }

    fn skip_container(&mut self) {
        let mut depth = 0usize;
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'"' => {
                    self.string();
                    continue;
                }
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        return;
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_raw_tokens_by_key_path() {
        let doc = r#"{"a": [1, {"criteriaCoverage": 2}], "s": "criteriaCoverage\"}",
            "criteriaCoverage": {"x": {"totalCriteria": 9}, "totalCriteria": 1e1,
            "pass\u0043ount": 2.0, "n": null, "t": true}}"#;
        assert!(crate::json::parse_strict_str(doc).is_ok());
        let at = |p: &[&str]| raw_number(doc, p);
        assert_eq!(at(&["criteriaCoverage", "totalCriteria"]), Some("1e1"));
        assert_eq!(at(&["criteriaCoverage", "passCount"]), Some("2.0"));
        assert_eq!(at(&["criteriaCoverage", "x", "totalCriteria"]), Some("9"));
        assert_eq!(at(&["criteriaCoverage", "n"]), None);
        assert_eq!(at(&["criteriaCoverage", "missing"]), None);
        assert_eq!(at(&["s"]), None);
    }

    #[test]
    fn classifies_spellings() {
        assert_eq!(classify("3"), CountToken::Integer(3));
        assert_eq!(classify("0"), CountToken::Integer(0));
        assert_eq!(classify("2.5"), CountToken::NotInteger);
        assert_eq!(classify("2.0"), CountToken::NotInteger);
        assert_eq!(classify("1e1"), CountToken::NotInteger);
        assert_eq!(classify("1E+1"), CountToken::NotInteger);
        assert_eq!(classify("-1"), CountToken::Negative);
        assert_eq!(classify("-0"), CountToken::Negative);
        assert_eq!(classify("18446744073709551616"), CountToken::TooLarge);
    }
}
