//! `docs/codes.md` documents every hook diagnostic code and every receipt code.

use evidence_gate::evidence::Code;
use evidence_gate::hooks::HookCode;

#[test]
fn the_codes_document_lists_every_hook_and_receipt_code() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/codes.md")).unwrap();
    for c in HookCode::ALL {
        assert!(
            readme.contains(&format!("| `{}` |", c.name())),
            "docs/codes.md lacks {}",
            c.name()
        );
    }
    for c in Code::ALL
        .iter()
        .filter(|c| c.name().starts_with("RECEIPT_"))
    {
        assert!(
            readme.contains(&format!("| `{}` |", c.name())),
            "docs/codes.md lacks {}",
            c.name()
        );
    }
}
