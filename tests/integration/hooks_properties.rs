//! Property tests for every parser of hook input: arbitrary bytes never
//! panic, and an accepted receipt path never names anything outside the
//! evidence root.

use std::path::Path;

use evidence_gate::hooks::directive::Template;
use evidence_gate::hooks::event::HookEvent;
use evidence_gate::hooks::host::decode::{self, Context};
use evidence_gate::hooks::host::detect::detect;
use evidence_gate::hooks::host::{Host, HostSource};
use evidence_gate::hooks::input;
use evidence_gate::hooks::receipt::{grammar, path};
use evidence_gate::sandbox::{PathLimits, RelPath};
use proptest::prelude::*;

fn json_like() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256),
        "[ -~\\n]{0,200}".prop_map(String::into_bytes),
        (
            "[a-z_A-Z]{1,20}",
            prop_oneof![Just("null".to_owned()), "\"[ -~]{0,30}\"", "[0-9]{1,5}", Just("true".into())]
        )
            .prop_map(|(k, v)| format!("{{\"hook_event_name\":\"SubagentStop\",\"agent_type\":\"w\",\"agent_id\":null,\"{k}\":{v}}}").into_bytes()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn stdin_parsing_and_decoding_never_panic(bytes in json_like()) {
        if let Ok(obj) = input::parse_payload(&bytes) {
            let none = |_: &str| false;
            let _ = detect(None, Some(&obj), &none);
            let env = |_: &str| None;
            let ctx = Context { process_cwd: Path::new("/w"), env: &env };
            for host in [Host::Codex, Host::ClaudeCode, Host::Gemini, Host::Agy, Host::Common] {
                for event in HookEvent::ALL {
                    let _ = decode::decode(*event, host, HostSource::Flag, &obj, &ctx);
                }
            }
        }
    }

    #[test]
    fn receipt_grammar_never_panics(msg in "(.|\\n){0,300}", marker in "[A-Z_:]{1,20}") {
        let with_marker = format!("{msg}EVIDENCE_RECORDED:{msg}");
        let _ = grammar::extract(Some(&msg), &marker);
        if let Ok(n) = grammar::extract(Some(&with_marker), "EVIDENCE_RECORDED:") {
            prop_assert!(!n.token.is_empty());
            prop_assert!(!n.token.chars().any(char::is_whitespace));
        }
    }

    #[test]
    fn accepted_receipt_paths_stay_below_the_evidence_root(
        token in "(\\./|/w/|~|\\.\\./)?(\\.omo/evidence/|\\.omo/|src/)?([a-z.]{0,4}/){0,3}[a-z.\\\\]{0,6}/?"
    ) {
        let root = RelPath::parse(".omo/evidence", PathLimits::default()).unwrap();
        let cwd = path::Cwd { given: Path::new("/w"), canonical: None };
        if let Ok(p) = path::resolve(&token, &cwd, &root) {
            prop_assert!(p.is_strictly_below(&root), "{token} -> {p}");
            prop_assert!(p.components().all(|c| c != ".." && c != "." && !c.is_empty()));
        }
    }

    #[test]
    fn templates_never_panic(text in "(.|\\{\\{|\\}\\}){0,200}") {
        if let Ok(t) = Template::compile(&text, &["A", "B"]) {
            let _ = t.render(&|s| s.to_owned());
        }
    }
}
