//! Receipt grammar (docs/hook-contracts.md#h-3): the **last** marker in the final
//! message, optional spaces or tabs, one non-whitespace token, one matching
//! pair of wrapping quotes removed.

use crate::evidence::{Code, Finding};

/// The receipt named by a final message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The path token.
    pub token: String,
    /// Distinct tokens named by earlier markers (usually quotations).
    pub earlier_receipts: usize,
}

fn token_after(s: &str) -> String {
    let s = s.trim_start_matches([' ', '\t']);
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    let tok = &s[..end];
    for q in ['`', '"', '\''] {
        if tok.len() >= 2 && tok.starts_with(q) && tok.ends_with(q) {
            return tok[1..tok.len() - 1].to_owned();
        }
    }
    tok.to_owned()
}

/// Extracts the receipt or the finding that says why there is none.
pub fn extract(message: Option<&str>, marker: &str) -> Result<Named, Box<Finding>> {
    let missing = |why: &str| {
        Box::new(Finding::new(
            Code::ReceiptMissing,
            None,
            format!("{why}; end the final message with `{marker} <receipt path>`"),
        ))
    };
    let Some(message) = message else {
        return Err(missing("the worker sent no final message"));
    };
    let positions: Vec<usize> = message.match_indices(marker).map(|(i, _)| i).collect();
    let Some(&last) = positions.last() else {
        return Err(missing(&format!(
            "the final message has no `{marker}` line"
        )));
    };
    let token = token_after(&message[last + marker.len()..]);
    if token.is_empty() {
        return Err(missing(&format!("`{marker}` is not followed by a path")));
    }
    if is_placeholder_token(&token) {
        return Err(Box::new(Finding::new(
            Code::ReceiptPlaceholder,
            Some(&token),
            "the receipt path is a placeholder, not the path of a receipt you wrote",
        )));
    }
    let mut earlier: Vec<String> = positions[..positions.len() - 1]
        .iter()
        .map(|&p| token_after(&message[p + marker.len()..]))
        .filter(|t| !t.is_empty() && *t != token)
        .collect();
    earlier.sort();
    earlier.dedup();
    Ok(Named {
        token,
        earlier_receipts: earlier.len(),
    })
}

fn is_placeholder_token(t: &str) -> bool {
    t.contains("{{") || t.find('<').is_some_and(|i| t[i..].contains('>'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = "EVIDENCE_RECORDED:";

    #[test]
    fn last_occurrence_wins_and_quotes_are_removed() {
        let msg = "Directive said `EVIDENCE_RECORDED: <path>`.\nEVIDENCE_RECORDED: old.md\n\
                   done\nEVIDENCE_RECORDED:\t`.omo/evidence/new.md`";
        let n = extract(Some(msg), M).unwrap();
        assert_eq!(n.token, ".omo/evidence/new.md");
        assert_eq!(n.earlier_receipts, 2);
        assert_eq!(
            extract(Some("EVIDENCE_RECORDED: 'a b'"), M).unwrap().token,
            "'a"
        );
    }

    #[test]
    fn missing_and_placeholders() {
        let code = |m: Option<&str>| extract(m, M).unwrap_err().code;
        assert_eq!(code(None), Code::ReceiptMissing);
        assert_eq!(code(Some("all done")), Code::ReceiptMissing);
        assert_eq!(code(Some("EVIDENCE_RECORDED:   \n")), Code::ReceiptMissing);
        assert_eq!(
            code(Some("EVIDENCE_RECORDED: <path>")),
            Code::ReceiptPlaceholder
        );
        assert_eq!(
            code(Some("EVIDENCE_RECORDED: .omo/evidence/{{x}}.md")),
            Code::ReceiptPlaceholder
        );
        assert_eq!(
            code(Some("EVIDENCE_RECORDED: .omo/evidence/<task>-receipt.md")),
            Code::ReceiptPlaceholder
        );
    }
}
