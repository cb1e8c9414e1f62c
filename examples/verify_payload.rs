//! Verifies the bundled example payload, as
//! `verify-evidence --root fixtures/payloads/example fixtures/payloads/example/evidence.json`
//! does: `cargo run --example verify_payload [ROOT] [PAYLOAD]`.

use cap_std::fs::Dir;
use evidence_gate::evidence::{self, Root, Verdict, VerifyOptions};
use evidence_gate::rules::RuleSet;
use evidence_gate::rules::evidence::EvidenceRules;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root_path = args.next().unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/payloads/example").into()
    });
    let payload_name = args.next().unwrap_or_else(|| "evidence.json".into());

    // The library holds no ambient authority: the caller opens the root and
    // hands it over; every later path is resolved inside it.
    #[allow(clippy::disallowed_methods)]
    let dir = Dir::open_ambient_dir(&root_path, cap_std::ambient_authority())?;
    let bytes = dir.read(&payload_name)?;

    let rules: EvidenceRules = RuleSet::embedded()?.family()?;
    let root = Root::new(dir, &rules)?;
    let payload = evidence::payload::parse(&bytes, root.max_payload_bytes())
        .map_err(|finding| format!("{}: {}", finding.code, finding.message))?;
    let opts = VerifyOptions {
        // The payload lies inside the root: it may not prove itself.
        payload_path: Some(&payload_name),
        ..VerifyOptions::default()
    };
    let report = evidence::verify_payload(&root, &payload, &payload_name, opts);

    for f in report.findings() {
        println!("{} {}", f.code, f.message);
    }
    println!("verdict: {:?}", report.verdict());
    if report.verdict() != Verdict::Pass {
        return Err("the payload did not verify".into());
    }
    Ok(())
}
