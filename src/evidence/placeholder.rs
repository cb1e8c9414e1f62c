//! Placeholder detection for agent-written texts (docs/verify.md#ev-4).

/// Placeholder words (whole text) and patterns (substring), compared
/// case-insensitively.
#[derive(Debug, Clone, Default)]
pub struct Placeholders {
    words: Vec<String>,
    patterns: Vec<String>,
}

impl Placeholders {
    /// Builds the matcher from rule lists.
    pub fn new(words: &[String], patterns: &[String]) -> Placeholders {
        Placeholders {
            words: words.iter().map(|w| w.trim().to_lowercase()).collect(),
            patterns: patterns
                .iter()
                .map(|p| p.to_lowercase())
                .filter(|p| !p.is_empty())
                .collect(),
        }
    }

    /// True when `text`, folded ([`crate::text::fold`]: NUL and format
    /// characters removed, whitespace collapsed), equals a placeholder word or
    /// contains a placeholder pattern (ignoring case).
    pub fn is_placeholder(&self, text: &str) -> bool {
        let t = crate::text::fold(text).to_lowercase();
        self.words.contains(&t) || self.patterns.iter().any(|p| t.contains(p.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_patterns() {
        let p = Placeholders::new(
            &["todo".into(), "n/a".into(), "...".into()],
            &["<replace:".into(), "{{".into()],
        );
        assert!(p.is_placeholder("  TODO "));
        assert!(p.is_placeholder("..."));
        assert!(p.is_placeholder("see <REPLACE:summary>"));
        assert!(p.is_placeholder("{{x}}"));
        assert!(!p.is_placeholder("todo: add docs was done"));
        // Invisible characters do not hide a placeholder (docs/threat-model.md#i6).
        assert!(p.is_placeholder("T\u{200B}O\u{00AD}D\u{0}O"));
        assert!(p.is_placeholder("{\u{2060}{x}}"));
        assert!(p.is_placeholder("\u{FEFF} n/a \u{200D}"));
        assert!(!p.is_placeholder("Überprüft: 完了"));
    }
}
