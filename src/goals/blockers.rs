//! External-authorisation blockers (docs/differences.md#r-2 with docs/engine.md#ge-7): the
//! classifier over `rules/blockers.json` word lists, and escalation to
//! `needs_user_decision` by occurrences.

use super::plan::Plan;
use super::profile::BlockerRules;
use super::words::Word;

pub(crate) use super::plan::model::ATTEMPT_CLEARED_FIELDS;

/// A compiled classifier.
#[derive(Debug)]
pub(crate) struct Classifier {
    auth: Vec<Word>,
    missing: Vec<Word>,
    registry: Vec<Word>,
    http401: Vec<Word>,
    http403: Vec<Word>,
    rules: BlockerRules,
}

fn any(list: &[Word], text: &str) -> bool {
    list.iter().any(|w| w.is_match(text))
}

/// Lower-cases, blanks out URLs and quoting/punctuation characters, and
/// collapses whitespace (docs/differences.md#r-2 step 1).
pub(crate) fn normalise(text: &str) -> String {
    let lower = text.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut rest = lower.as_str();
    while !rest.is_empty() {
        let at = [rest.find("http://"), rest.find("https://")]
            .into_iter()
            .flatten()
            .min();
        match at {
            Some(i) => {
                out.push_str(&rest[..i]);
                out.push(' ');
                let end = rest[i..]
                    .find(char::is_whitespace)
                    .map_or(rest.len(), |e| i + e);
                rest = &rest[end..];
            }
            None => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    let replaced: String = out
        .chars()
        .map(|c| if "`\"'()[]{}:,;".contains(c) { ' ' } else { c })
        .collect();
    replaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Classifier {
    /// Prepares the word lists (nothing is compiled).
    pub(crate) fn new(rules: &BlockerRules) -> Classifier {
        let c = |l: &[String]| l.iter().map(|w| Word::new(w)).collect();
        Classifier {
            auth: c(&rules.auth_words),
            missing: c(&rules.missing_words),
            registry: c(&rules.registry_words),
            http401: c(&rules.http401_words),
            http403: c(&rules.http403_words),
            rules: rules.clone(),
        }
    }

    /// The signature of an external-authorisation blocker described by
    /// `evidence`, if it is one.
    pub(crate) fn classify(&self, evidence: &str) -> Option<String> {
        let t = normalise(evidence);
        if !(any(&self.auth, &t) && any(&self.missing, &t)) {
            return None;
        }
        let s = &self.rules.signatures;
        if !any(&self.registry, &t) {
            return Some(s.generic.clone());
        }
        let mut parts = Vec::new();
        if any(&self.http401, &t) {
            parts.push(s.http401.as_str());
        }
        if any(&self.http403, &t) {
            parts.push(s.http403.as_str());
        }
        if parts.is_empty() {
            parts.push(s.registry_unknown.as_str());
        }
        Some(format!(
            "{}:{}:{}",
            s.registry_prefix,
            parts.join("+"),
            s.registry_suffix
        ))
    }

    /// `requiredExternalDecision` for a signature.
    pub(crate) fn decision(&self, signature: &str) -> String {
        self.rules
            .signatures
            .decision
            .replace("{signature}", signature)
    }
}

/// Escalation counts for a failed or blocked checkpoint of `goal_id` with
/// signature `sig`: `(occurrences, goal_count)`.
pub(crate) fn counts(plan: &Plan, goal_id: &str, sig: &str) -> (u64, u64) {
    let others = plan
        .goals()
        .filter(|g| g.id() != goal_id && g.blocker_signature() == Some(sig))
        .count() as u64;
    let own = plan.goal(goal_id).map_or(0, |g| {
        if g.blocker_signature() == Some(sig) {
            g.0.get("blockerOccurrenceCount")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(1)
        } else {
            0
        }
    });
    (own + 1, others + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goals::plan::model::BLOCKER_FIELDS;

    #[test]
    fn a_new_attempt_clears_part_of_the_blocker_set() {
        for k in ATTEMPT_CLEARED_FIELDS {
            assert!(BLOCKER_FIELDS.contains(k), "{k}");
        }
        for k in ["blockerSignature", "blockerOccurrenceCount"] {
            assert!(!ATTEMPT_CLEARED_FIELDS.contains(&k), "{k} feeds escalation");
        }
    }

    fn classifier() -> Classifier {
        let rules = crate::rules::RuleSet::embedded().unwrap();
        Classifier::new(&rules.family().unwrap())
    }

    #[test]
    fn signatures() {
        let c = classifier();
        assert_eq!(
            normalise(" GHCR.IO\n\tNeeds   TOKEN "),
            "ghcr.io needs token"
        );
        assert_eq!(c.classify("tests failed"), None);
        assert_eq!(
            c.classify("the npm token is missing").as_deref(),
            Some("EXTERNAL_AUTHORIZATION_REQUIRED")
        );
        assert_eq!(
            c.classify("ghcr.io pull: 401 unauthorized, token missing")
                .as_deref(),
            Some("GHCR_PULL_ACCESS:HTTP_401_ANONYMOUS:GHCR_VISIBILITY_OR_CREDENTIAL_REQUIRED")
        );
        assert_eq!(
            c.classify("GHCR 403 forbidden: token lacks read packages")
                .as_deref(),
            Some(
                "GHCR_PULL_ACCESS:HTTP_403_NO_READ_PACKAGES:GHCR_VISIBILITY_OR_CREDENTIAL_REQUIRED"
            )
        );
        assert_eq!(
            c.classify("ghcr image pull: credentials required")
                .as_deref(),
            Some("GHCR_PULL_ACCESS:AUTHORIZATION_REQUIRED:GHCR_VISIBILITY_OR_CREDENTIAL_REQUIRED")
        );
        assert_eq!(
            c.classify("see https://auth.example/missing for details"),
            None
        );
    }

    /// The regular expression the word matcher stands for.
    fn reference(w: &str) -> regex::Regex {
        let (stem, prefix) = match w.strip_suffix('*') {
            Some(s) => (s, true),
            None => (w, false),
        };
        regex::Regex::new(&format!(
            r"\b{}{}\b",
            regex::escape(stem),
            if prefix { r"\w*" } else { "" }
        ))
        .unwrap()
    }

    #[test]
    fn word_matching_agrees_with_the_regex_on_edge_cases() {
        let words = [
            "auth*", "token", "401", "not set", "a", "aa", "é*", "-x", "x-", "x-*", "", "*", ".",
        ];
        let texts = [
            "",
            "token",
            "tokens",
            "a token.",
            "authorization",
            "xauth",
            "401k",
            "(401)",
            "aaa",
            "a a",
            "é",
            "éa",
            "-x",
            "a-x",
            "x-",
            "x-y",
            "x--",
            "not  set",
            "not set!",
            "ключ token",
            "token\u{301}",
            "a\u{301}",
            "_token_",
            "٣401",
            ".",
            "a.b",
        ];
        for w in words {
            let re = reference(w);
            for t in texts {
                assert_eq!(Word::new(w).is_match(t), re.is_match(t), "{w:?} in {t:?}");
            }
        }
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn word_matching_agrees_with_the_regex(
            w in "[a4é\u{301}_ .-]{0,3}\\*?",
            t in "[a4é\u{301}_ .-]{0,8}",
        ) {
            prop_assert_eq!(Word::new(&w).is_match(&t), reference(&w).is_match(&t));
        }
    }
}
