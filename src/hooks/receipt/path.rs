//! Receipt path rules (docs/hook-contracts.md#h-3, steps 1–3): lexical checks before any
//! file access, then confinement to the evidence root of `cwd`.

use std::path::{Component, Path};

use crate::evidence::{Code, Finding};
use crate::sandbox::{LexicalProblem, PathLimits, RelPath};

/// `cwd` as given and, when known, its canonical form.
#[derive(Debug, Clone)]
pub struct Cwd<'a> {
    /// As the payload gave it (absolute).
    pub given: &'a Path,
    /// Its canonical form, when it could be established.
    pub canonical: Option<&'a Path>,
}

fn invalid(token: &str, why: &str) -> Box<Finding> {
    Box::new(Finding::new(
        Code::ReceiptPathInvalid,
        Some(token),
        format!("the receipt path is not acceptable: {why}"),
    ))
}

fn outside(token: &str, root: &RelPath) -> Box<Finding> {
    Box::new(Finding::new(
        Code::ReceiptOutsideRoot,
        Some(token),
        format!("the receipt must be a file under `{root}/` of the workspace"),
    ))
}

/// Resolves a receipt token to a workspace-relative path strictly below the
/// evidence root.
pub fn resolve(
    token: &str,
    cwd: &Cwd<'_>,
    evidence_root: &RelPath,
) -> Result<RelPath, Box<Finding>> {
    if token.contains('\0') {
        return Err(invalid(token, "it contains NUL"));
    }
    if token.starts_with('~') {
        return Err(invalid(token, "`~` is not expanded; give the path itself"));
    }
    if !cfg!(windows) && token.contains('\\') {
        return Err(invalid(token, "it contains a backslash"));
    }
    if token.ends_with('/') || token.ends_with('\\') {
        return Err(invalid(token, "it ends with a separator"));
    }
    if token.split(['/', '\\']).any(|c| c == "..") {
        return Err(invalid(token, "it contains a `..` component"));
    }
    if has_foreign_prefix(token) {
        return Err(invalid(token, "it names a drive or network share"));
    }
    let rel = if Path::new(token).is_absolute() {
        let rest = strip_cwd(Path::new(token), cwd.given)
            .or_else(|| cwd.canonical.and_then(|c| strip_cwd(Path::new(token), c)))
            .ok_or_else(|| outside(token, evidence_root))?;
        if rest.is_empty() {
            return Err(outside(token, evidence_root));
        }
        rest
    } else {
        token.strip_prefix("./").unwrap_or(token).to_owned()
    };
    let path = RelPath::parse(&rel, PathLimits::default()).map_err(|p| match p {
        LexicalProblem::NotClean | LexicalProblem::Empty | LexicalProblem::Absolute => {
            outside(token, evidence_root)
        }
        other => invalid(token, other.describe()),
    })?;
    if !path.is_strictly_below(evidence_root) {
        return Err(outside(token, evidence_root));
    }
    Ok(path)
}

/// The rest of `p` after `base`, compared component-wise, joined by `/`.
fn strip_cwd(p: &Path, base: &Path) -> Option<String> {
    let rest = p.strip_prefix(base).ok()?;
    let mut parts = Vec::new();
    for c in rest.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str()?.to_owned()),
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

fn has_foreign_prefix(t: &str) -> bool {
    let b = t.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    let unc = t.starts_with("//") || t.starts_with("\\\\");
    drive || unc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(token: &str) -> Result<String, Code> {
        let root = RelPath::parse(".omo/evidence", PathLimits::default()).unwrap();
        let cwd = Cwd {
            given: Path::new("/work/repo"),
            canonical: Some(Path::new("/real/repo")),
        };
        resolve(token, &cwd, &root)
            .map(|p| p.as_str().to_owned())
            .map_err(|f| f.code)
    }

    #[test]
    fn accepted_forms() {
        assert_eq!(r(".omo/evidence/a.md").unwrap(), ".omo/evidence/a.md");
        assert_eq!(r("./.omo/evidence/x/a.md").unwrap(), ".omo/evidence/x/a.md");
        assert_eq!(
            r("/work/repo/.omo/evidence/a.md").unwrap(),
            ".omo/evidence/a.md"
        );
        assert_eq!(
            r("/real/repo/.omo/evidence/a.md").unwrap(),
            ".omo/evidence/a.md"
        );
    }

    #[test]
    fn rejected_forms() {
        for t in [
            ".omo/evidence/../x",
            ".omo/evidence/a/",
            "~/x",
            ".omo\\evidence\\a",
            "C:/x",
            "//server/share/x",
            ".omo/evidence/a\0b",
        ] {
            assert_eq!(r(t), Err(Code::ReceiptPathInvalid), "{t:?}");
        }
        for t in [
            "src/lib.rs",
            ".omo/evidence",
            ".omo/evidencex/a.md",
            ".omo//evidence/a.md",
            "/etc/passwd",
            "/work/repox/.omo/evidence/a.md",
            "/work/repo",
        ] {
            assert_eq!(r(t), Err(Code::ReceiptOutsideRoot), "{t:?}");
        }
    }
}
