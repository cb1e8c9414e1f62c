//! Directive templates (docs/hook-contracts.md#h-3): `{{NAME}}` placeholders rendered in
//! a single pass, so inserted text is never rescanned (a message holding
//! `{{FINDINGS}}` stays literal).

/// One piece of a compiled template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Slot(&'static str),
}

/// A compiled template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
    static_len: usize,
}

impl Template {
    /// Compiles `text`; every `{{…}}` must be one of `allowed`.
    pub fn compile(text: &str, allowed: &[&'static str]) -> Result<Template, String> {
        let mut pieces = Vec::new();
        let mut rest = text;
        let mut static_len = 0;
        while let Some(open) = rest.find("{{") {
            let Some(close) = rest[open + 2..].find("}}") else {
                return Err("an unclosed `{{` in the template".into());
            };
            let name = &rest[open + 2..open + 2 + close];
            let Some(slot) = allowed.iter().find(|a| **a == name) else {
                return Err(format!(
                    "unknown placeholder `{{{{{name}}}}}`; allowed: {}",
                    allowed
                        .iter()
                        .map(|a| format!("{{{{{a}}}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            };
            if open > 0 {
                static_len += open;
                pieces.push(Piece::Text(rest[..open].to_owned()));
            }
            pieces.push(Piece::Slot(slot));
            rest = &rest[open + 2 + close + 2..];
        }
        if !rest.is_empty() {
            static_len += rest.len();
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(Template { pieces, static_len })
    }

    /// Bytes of static text.
    pub fn static_len(&self) -> usize {
        self.static_len
    }

    /// True when the template uses `slot`.
    pub fn uses(&self, slot: &str) -> bool {
        self.pieces
            .iter()
            .any(|p| matches!(p, Piece::Slot(s) if *s == slot))
    }

    /// Renders with `value(slot)` for each placeholder, in one pass.
    pub fn render(&self, value: &dyn Fn(&str) -> String) -> String {
        let mut out = String::with_capacity(self.static_len + 256);
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Slot(s) => out.push_str(&value(s)),
            }
        }
        out
    }
}

/// The last `max_chars` characters of `text`, whitespace runs collapsed to
/// one space, `…`-prefixed when cut; `(none)` when absent.
pub fn excerpt(text: Option<&str>, max_chars: usize) -> String {
    let Some(text) = text else {
        return "(none)".into();
    };
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let n = collapsed.chars().count();
    if n <= max_chars {
        return collapsed;
    }
    let tail: String = collapsed.chars().skip(n - max_chars).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_pass_and_unknown_placeholders() {
        let t = Template::compile("a {{X}} b {{Y}}", &["X", "Y"]).unwrap();
        let out = t.render(&|s| {
            if s == "X" { "{{Y}}".into() } else { "y".into() }
        });
        assert_eq!(out, "a {{Y}} b y");
        assert_eq!(t.static_len(), 5);
        assert!(t.uses("X"));
        assert!(Template::compile("{{Z}}", &["X"]).is_err());
        assert!(Template::compile("{{X", &["X"]).is_err());
    }

    #[test]
    fn excerpts() {
        assert_eq!(excerpt(None, 5), "(none)");
        assert_eq!(excerpt(Some("a  b\n c"), 10), "a b c");
        assert_eq!(excerpt(Some("abcdef"), 3), "…def");
    }
}
