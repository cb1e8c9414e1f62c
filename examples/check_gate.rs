//! Checks a quality-gate document against its rule file, as `evidence-gate
//! gate check` does without a plan: `cargo run --example check_gate`.
//!
//! The workspace is `fixtures/gates` (a lazycodex gate whose artifacts lie
//! under `.omo/evidence/`); every artifact is opened through the sandbox.

use cap_std::fs::Dir;
use evidence_gate::evidence::Root;
use evidence_gate::gate::{self, GateScope, GateVerdict};
use evidence_gate::rules::RuleSet;
use evidence_gate::rules::evidence::EvidenceRules;
use evidence_gate::rules::gates::GateBook;
use evidence_gate::sandbox::{PathLimits, RelPath};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[allow(clippy::disallowed_methods)]
    let dir = Dir::open_ambient_dir(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/gates"),
        cap_std::ambient_authority(),
    )?;
    let document = dir.read("lazycodex.json")?;

    let rules = RuleSet::embedded()?;
    let evidence: EvidenceRules = rules.family()?;
    let book = GateBook::from_rules(&rules)?;
    let gate_rules = book.get("lazycodex").ok_or("no lazycodex gate rules")?;
    let root = Root::new(dir, &evidence)?;

    // Without a plan, the artifacts must lie under the evidence directory.
    let scope = GateScope::Standalone {
        dir: RelPath::parse(".omo/evidence", PathLimits::default())
            .map_err(|p| format!("{p:?}"))?,
    };
    let outcome = gate::validate(&root, gate_rules, &document, &scope);

    for f in outcome.findings() {
        println!("{} {:?} {}", f.code, f.severity, f.message);
    }
    println!("verdict: {:?}", outcome.verdict());
    if outcome.verdict() != GateVerdict::Pass {
        return Err("the gate did not pass".into());
    }
    Ok(())
}
