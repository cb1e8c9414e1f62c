//! Property tests of repository mode: arbitrary state files never panic the
//! audit, and no single-byte edit of a ledger record that another record
//! follows ever passes.

use cap_std::fs::Dir;
use proptest::prelude::*;
use serde_json::json;

use crate::ci_support::*;
use crate::common::Repo;
use evidence_gate::audit::{self, AuditOptions, Silent};
use evidence_gate::evidence::Verdict;
use evidence_gate::rules::RuleSet;

fn audit_lib(r: &Repo) -> Vec<Verdict> {
    let rules = RuleSet::embedded().unwrap();
    let layouts = audit::layout::from_rules(&rules).unwrap();
    let dir = Dir::open_ambient_dir(r.path(), cap_std::ambient_authority()).unwrap();
    let a = audit::audit(
        &dir,
        &rules.family().unwrap(),
        &AuditOptions {
            layouts: &layouts,
            plan_dirs: &[],
            strict: false,
            allow_empty: false,
            allow_legacy: false,
            gates: None,
        },
        &mut Silent,
    )
    .unwrap();
    a.reports.iter().map(|r| r.verdict()).collect()
}

fn json_garbage() -> impl Strategy<Value = String> {
    prop_oneof![
        r#"\{("(version|goals|revision|lastMutation|aggregateCompletion|files|kind|seq|prev|receipt)":(1|-1|"x"|\[\]|\[\{\}\]|\{\}|null|true|1e99),?){0,6}\}"#,
        "[ -~\n]{0,200}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_state_files_never_panic_the_audit(
        plan in json_garbage(),
        ledger in prop::collection::vec(json_garbage(), 0..6),
        gate in prop::collection::vec(json_garbage(), 0..4),
        bytes in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        let r = Repo::new();
        r.write(".omo/ulw-loop/goals.json", &plan);
        r.write(".omo/ulw-loop/ledger.jsonl", ledger.join("\n"));
        r.write(".omo/ulw-loop/s1/ledger.jsonl", &bytes);
        r.write(".omo/evidence-gate/ledger.jsonl", gate.join("\n"));
        r.write(".omo/evidence/x.evidence.json", &bytes);
        let verdicts = audit_lib(&r);
        prop_assert!(!verdicts.is_empty());
    }

    #[test]
    fn a_single_byte_edit_of_a_followed_record_never_passes(line in 0usize..3, at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let r = Repo::new();
        let run = Run4::new(&r, STATE);
        prop_assert_eq!(audit_lib(&r), vec![Verdict::Pass]);
        let path = r.join(&run.ledger());
        let mut bytes = std::fs::read(&path).unwrap();
        let starts: Vec<usize> = std::iter::once(0)
            .chain(bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1))
            .collect();
        // Any byte of line `line` (0-based, never the last line), newline included.
        let (from, to) = (starts[line], starts[line + 1]);
        let i = from + at.index(to - from);
        prop_assume!(bytes[i] != byte);
        bytes[i] = byte;
        std::fs::write(&path, &bytes).unwrap();
        let verdicts = audit_lib(&r);
        prop_assert!(verdicts.iter().all(|v| *v != Verdict::Pass), "edit at byte {} passed", i);
    }
}

#[test]
fn the_edit_property_is_not_vacuous() {
    // The unedited run passes and a known edit fails (so the property's
    // assertions can fail).
    let r = Repo::new();
    let run = Run4::new(&r, STATE);
    assert_eq!(audit_lib(&r), vec![Verdict::Pass]);
    let path = r.join(&run.ledger());
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("plan created", "plan crEated", 1)).unwrap();
    assert_eq!(audit_lib(&r), vec![Verdict::Fail]);
    let _ = json!(null);
}
