//! `--format github|junit|sarif`: syntax of workflow commands, JUnit parses as
//! XML, SARIF validates against the official 2.1.0 schema.

use serde_json::{Value, json};

use crate::common::Repo;
use crate::evidence_cli::payload;

fn mixed_repo() -> Repo {
    let r = Repo::new();
    r.write("src/ok.rs", "ok\n");
    r.write(
        "good.json",
        serde_json::to_vec(&payload(json!([{"path": "src/ok.rs"}]))).unwrap(),
    );
    r.write(
        "bad.json",
        serde_json::to_vec(&payload(
            json!([{"path": "src/missing, odd: name.rs"}, {"path": "a/../b"}]),
        ))
        .unwrap(),
    );
    r
}

fn run(r: &Repo, format: &str) -> crate::common::Run {
    r.run(
        "verify-evidence",
        &["--format", format, "good.json", "bad.json", "absent.json"],
        None,
    )
}

#[test]
fn github_lines_follow_the_workflow_command_syntax() {
    let r = mixed_repo();
    let out = run(&r, "github");
    assert_eq!(out.code, 1);
    let re = regex::Regex::new(r"^::(error|warning|notice) file=[^,\n]+,title=[A-Z_]+::[^\r\n]*$")
        .unwrap();
    let lines: Vec<&str> = out.stdout.lines().collect();
    let (last, cmds) = lines.split_last().unwrap();
    assert_eq!(cmds.len(), 3, "{}", out.stdout);
    for l in cmds {
        assert!(re.is_match(l), "not a workflow command: {l}");
    }
    assert!(
        cmds.iter()
            .any(|l| l
                .starts_with("::error file=src/missing%2C odd%3A name.rs,title=FILE_MISSING::")),
        "{}",
        out.stdout
    );
    assert!(cmds.iter().any(|l| l.contains("title=PAYLOAD_UNREADABLE")));
    assert!(last.starts_with("FAILED: "), "{last}");
    let ok = r.run(
        "verify-evidence",
        &["--format", "github", "good.json"],
        None,
    );
    assert_eq!(ok.code, 0);
    assert!(ok.stdout.starts_with("PASSED:"));
}

#[test]
fn junit_parses_as_xml_with_one_testcase_per_payload() {
    let r = mixed_repo();
    let out = run(&r, "junit");
    assert_eq!(out.code, 1);
    let doc = roxmltree::Document::parse(&out.stdout).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("tests"), Some("3"));
    assert_eq!(root.attribute("failures"), Some("1"));
    assert_eq!(root.attribute("errors"), Some("1"));
    let cases: Vec<_> = root
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 3);
    assert_eq!(cases[0].attribute("name"), Some("good.json"));
    assert!(cases[0].children().all(|c| !c.is_element()));
    let failure = cases[1]
        .children()
        .find(|c| c.has_tag_name("failure"))
        .expect("failure element");
    assert_eq!(failure.attribute("type"), Some("PATH_TRAVERSAL"));
    assert!(failure.text().unwrap().contains("FILE_MISSING"));
    assert!(cases[2].children().any(|c| c.has_tag_name("error")));
}

/// The official SARIF 2.1.0 schema (rtm.5), compiled.
fn sarif_validator() -> jsonschema::Validator {
    let official = include_str!("../../fixtures/sarif/sarif-2.1.0-rtm.5.json");
    // The official rtm.5 `run.language` pattern contains a bare `]`, a literal in
    // ECMA-262 regexes but rejected by the validator's stricter dialect when it
    // checks the schema itself. Escaping it keeps the pattern's meaning exactly.
    let bad = r#"^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$"#;
    assert_eq!(
        official.matches(bad).count(),
        2,
        "`run.language` and `toolComponent.language`"
    );
    let schema: Value = serde_json::from_str(
        &official.replace(bad, r#"^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$"#),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    assert!(
        !validator.is_valid(&json!({"version": "2.1.0", "runs": [{"results": []}]})),
        "the validator rejects a run without a tool"
    );
    validator
}

fn sarif_errors(validator: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn sarif_validates_against_the_official_schema() {
    let validator = sarif_validator();
    let r = mixed_repo();
    for args in [
        vec!["good.json"],
        vec!["good.json", "bad.json", "absent.json"],
    ] {
        let mut a = vec!["--format", "sarif"];
        a.extend(args.iter());
        let out = r.run("verify-evidence", &a, None);
        let doc: Value = serde_json::from_str(&out.stdout).unwrap();
        let errors = sarif_errors(&validator, &doc);
        assert!(errors.is_empty(), "SARIF invalid: {errors:?}");
        let rules = doc["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap();
        assert_eq!(
            rules.len(),
            evidence_gate::evidence::Code::ALL.len(),
            "one rule per code"
        );
        for res in doc["runs"][0]["results"].as_array().unwrap() {
            let i = res["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[i]["id"], res["ruleId"]);
        }
    }
    let bad = r.run("verify-evidence", &["--format", "sarif", "bad.json"], None);
    assert_eq!(bad.code, 1);
    let doc: Value = serde_json::from_str(&bad.stdout).unwrap();
    let ids: Vec<&str> = doc["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["PATH_TRAVERSAL", "FILE_MISSING"]);
    assert_eq!(
        doc["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "src/missing%2C%20odd%3A%20name.rs"
    );
}

// --- Repository mode ------------------------------------------------------------

#[test]
fn repository_mode_github_annotations_carry_file_line_and_title() {
    let r = crate::ci_support::audited_repo();
    let out = r.run("verify-evidence", &["--format", "github"], None);
    assert_eq!(out.code, 1);
    let re = regex::Regex::new(
        r"^::(error|warning|notice) file=[^,\n]+(,line=[1-9][0-9]*)?,title=[A-Z_]+::[^\r\n]*$",
    )
    .unwrap();
    let lines: Vec<&str> = out.stdout.lines().collect();
    let (last, cmds) = lines.split_last().unwrap();
    assert_eq!(cmds.len(), 4, "{}", out.stdout);
    for l in cmds {
        assert!(re.is_match(l), "not a workflow command: {l}");
    }
    assert!(
        cmds[0].starts_with(
            "::error file=.omo/ulw-loop/ledger.jsonl,line=2,title=LEDGER_CHAIN_BROKEN::"
        )
    );
    assert!(
        cmds[1].starts_with("::error file=src/limiter.rs,title=LEDGER_DIGEST_MISMATCH::"),
        "the ledger line is not a line of the file: {}",
        cmds[1]
    );
    assert!(cmds[2].starts_with(
        "::warning file=.omo/evidence-gate/ledger.jsonl,line=1,title=LEDGER_RECEIPT_WAIVED::"
    ));
    assert!(cmds[3].starts_with("::error file=src/none & <x>.rs,title=FILE_MISSING::"));
    assert_eq!(*last, "FAILED: 3 findings in 2 of 3 audited subjects");
}

#[test]
fn repository_mode_junit_has_one_testcase_per_audited_subject() {
    let r = crate::ci_support::audited_repo();
    let out = r.run("verify-evidence", &["--format", "junit"], None);
    assert_eq!(out.code, 1);
    let doc = roxmltree::Document::parse(&out.stdout).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.attribute("tests"), Some("3"));
    assert_eq!(root.attribute("failures"), Some("2"));
    let cases: Vec<_> = root
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            (
                n.attribute("classname").unwrap(),
                n.attribute("name").unwrap(),
                n,
            )
        })
        .collect();
    let names: Vec<(&str, &str)> = cases.iter().map(|(c, n, _)| (*c, *n)).collect();
    assert_eq!(
        names,
        [
            ("evidence-gate.plan", ".omo/ulw-loop"),
            (
                "evidence-gate.gate-ledger",
                ".omo/evidence-gate/ledger.jsonl"
            ),
            (
                "evidence-gate.payload",
                ".omo/evidence/G001/bad.evidence.json"
            ),
        ]
    );
    let failure = cases[0]
        .2
        .children()
        .find(|c| c.has_tag_name("failure"))
        .unwrap();
    assert_eq!(failure.attribute("type"), Some("LEDGER_CHAIN_BROKEN"));
    assert!(
        failure
            .text()
            .unwrap()
            .contains("LEDGER_DIGEST_MISMATCH src/limiter.rs")
    );
    let out_text = cases[1]
        .2
        .children()
        .find(|c| c.has_tag_name("system-out"))
        .unwrap();
    assert!(out_text.text().unwrap().contains("LEDGER_RECEIPT_WAIVED"));
    assert!(cases[1].2.children().all(|c| !c.has_tag_name("failure")));
}

#[test]
fn repository_mode_sarif_validates_and_locates_ledger_lines() {
    let validator = sarif_validator();
    for (args, code) in [
        (vec!["--format", "sarif"], 1),
        (vec!["--format", "sarif", "--strict"], 1),
    ] {
        let r = crate::ci_support::audited_repo();
        let out = r.run("verify-evidence", &args, None);
        assert_eq!(out.code, code);
        let doc: Value = serde_json::from_str(&out.stdout).unwrap();
        let errors = sarif_errors(&validator, &doc);
        assert!(errors.is_empty(), "SARIF invalid: {errors:?}");
        let results = doc["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 4);
        let chain = &results[0];
        assert_eq!(chain["ruleId"], "LEDGER_CHAIN_BROKEN");
        assert_eq!(
            chain["locations"][0]["physicalLocation"]["region"]["startLine"],
            2
        );
        assert_eq!(chain["properties"]["subject"], ".omo/ulw-loop");
        let mismatch = &results[1];
        assert!(
            mismatch["locations"][0]["physicalLocation"]
                .get("region")
                .is_none()
        );
        assert_eq!(mismatch["properties"]["detail"]["ledgerLine"], 3);
        let rules = doc["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap();
        for res in results {
            let i = res["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[i]["id"], res["ruleId"]);
            assert!(!rules[i]["help"]["text"].as_str().unwrap().is_empty());
        }
        let waived = &results[2];
        let want = if args.contains(&"--strict") {
            "error"
        } else {
            "warning"
        };
        assert_eq!(waived["level"], want);
    }
    // A clean and an empty (allowed) audit validate too.
    let r = Repo::new();
    let out = r.run(
        "verify-evidence",
        &["--format", "sarif", "--allow-empty"],
        None,
    );
    assert_eq!(out.code, 0);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(sarif_errors(&validator, &doc).is_empty());
}
