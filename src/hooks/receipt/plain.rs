//! Plain-file receipts and the substance rule (docs/hook-contracts.md#h-3).

use crate::evidence::{Code, Finding};

/// Bytes of a plain receipt kept for inspection.
pub const INSPECT_BYTES: usize = 64 * 1024;

/// What the substance rule needs.
#[derive(Debug, Clone)]
pub struct Substance {
    /// `subagent_stop.min_receipt_chars`.
    pub min_chars: usize,
    /// `subagent_stop.placeholder_patterns`, lowercased.
    pub placeholder_patterns: Vec<String>,
}

/// Checks the first bytes of a plain receipt; `size` is the whole file's.
pub fn check(path: &str, head: &[u8], size: u64, rules: &Substance) -> Result<(), Box<Finding>> {
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // One multi-byte character cut at the inspection boundary.
        Err(e) if e.error_len().is_none() && size > head.len() as u64 => {
            std::str::from_utf8(&head[..e.valid_up_to()]).expect("valid prefix")
        }
        Err(_) => {
            return Err(Box::new(Finding::new(
                Code::ReceiptNotText,
                Some(path),
                "the receipt is not UTF-8 text",
            )));
        }
    };
    let chars = crate::text::fold(text).chars().count();
    if chars < rules.min_chars {
        return Err(Box::new(Finding::new(
            Code::ReceiptTooShort,
            Some(path),
            format!(
                "the receipt has {chars} characters; at least {} are required (what changed, which commands verified it, their results)",
                rules.min_chars
            ),
        )));
    }
    let lower = crate::text::fold(text).to_lowercase();
    if let Some(p) = rules
        .placeholder_patterns
        .iter()
        .find(|p| lower.contains(p.as_str()))
    {
        return Err(Box::new(Finding::new(
            Code::ReceiptPlaceholder,
            Some(path),
            format!("the receipt contains the placeholder text `{p}`"),
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Substance {
        Substance {
            min_chars: 10,
            placeholder_patterns: vec!["lorem ipsum".into(), "{{".into()],
        }
    }

    #[test]
    fn substance() {
        let ok = "changed x; ran cargo test: ok";
        assert!(check("p", ok.as_bytes(), ok.len() as u64, &rules()).is_ok());
        let code = |b: &[u8], size: u64| check("p", b, size, &rules()).unwrap_err().code;
        assert_eq!(code(b"   short  ", 10), Code::ReceiptTooShort);
        assert_eq!(
            code(b"Lorem Ipsum dolor sit amet", 26),
            Code::ReceiptPlaceholder
        );
        assert_eq!(code(b"\xff\xfe binary data here", 20), Code::ReceiptNotText);
        let mut cut = "é".repeat(20).into_bytes();
        cut.pop();
        assert!(check("p", &cut, 100, &rules()).is_ok());
        assert_eq!(code(&cut, cut.len() as u64), Code::ReceiptNotText);
    }
}
