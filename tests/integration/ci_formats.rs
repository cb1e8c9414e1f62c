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

/// The official SARIF 2.1.0 schema (OASIS, errata 01), compiled.
fn sarif_validator() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("../schemas/sarif/sarif-schema-2.1.0.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    assert!(
        !validator.is_valid(&json!({"version": "2.1.0", "runs": [{"results": []}]})),
        "the validator rejects a run without a tool"
    );
    validator
}

/// The same documents through Python `jsonschema` (skipped loudly when it is
/// not installed): every one valid.
fn python_sarif_valid(docs: &[Value]) {
    let schema = crate::schema_support::schema_file("sarif/sarif-schema-2.1.0.json");
    if let Some(errors) = crate::schema_support::python_errors(&schema, docs) {
        for (doc, errs) in docs.iter().zip(errors) {
            assert!(errs.is_empty(), "Python jsonschema: {errs:?}\n{doc:#}");
        }
    }
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
    let mut docs = Vec::new();
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
        docs.push(doc.clone());
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
    python_sarif_valid(&docs);
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
        // A finding about a whole recorded file: the ledger line is not a
        // line of the file, so the region is the file's first line and the
        // result says it is about the whole file.
        let mismatch = &results[1];
        assert_eq!(
            mismatch["locations"][0]["physicalLocation"]["region"],
            json!({"startLine": 1})
        );
        assert_eq!(mismatch["properties"]["wholeFile"], true);
        assert_eq!(chain["properties"]["wholeFile"], false);
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
    python_sarif_valid(&[doc]);
}

// --- Locations, fingerprints, help, time -------------------------------------

#[test]
fn sarif_results_carry_a_region_a_base_and_a_stable_fingerprint() {
    let r = crate::ci_support::audited_repo();
    let first: Value = serde_json::from_str(
        &r.run("verify-evidence", &["--format", "sarif"], None)
            .stdout,
    )
    .unwrap();
    let again: Value = serde_json::from_str(
        &r.run("verify-evidence", &["--format", "sarif"], None)
            .stdout,
    )
    .unwrap();
    let run = &first["runs"][0];
    assert_eq!(
        run["originalUriBaseIds"]["SRCROOT"]["description"]["text"],
        "The audited root (verify-evidence --root)."
    );
    let results = run["results"].as_array().unwrap();
    let mut prints = Vec::new();
    for (i, res) in results.iter().enumerate() {
        let loc = &res["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "SRCROOT");
        assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1, "{res:#}");
        let print = res["partialFingerprints"]["evidenceGateFinding/v1"]
            .as_str()
            .unwrap();
        assert_eq!(print.len(), 64);
        assert_eq!(
            again["runs"][0]["results"][i]["partialFingerprints"], res["partialFingerprints"],
            "the same finding keeps its fingerprint across runs"
        );
        prints.push(print.to_owned());
    }
    prints.sort();
    prints.dedup();
    assert_eq!(
        prints.len(),
        results.len(),
        "distinct findings, distinct fingerprints"
    );
    // Every rule links to its entry in the codes catalogue of this version.
    let version = env!("CARGO_PKG_VERSION");
    for rule in run["tool"]["driver"]["rules"].as_array().unwrap() {
        let id = rule["id"].as_str().unwrap();
        assert_eq!(
            rule["helpUri"],
            format!(
                "https://docs.rs/crate/evidence-gate/{version}/source/docs/codes.md#{}",
                id.to_ascii_lowercase()
            )
        );
    }
}

#[test]
fn junit_carries_the_measured_time_of_the_run_and_of_each_case() {
    let r = mixed_repo();
    let out = run(&r, "junit");
    let doc = roxmltree::Document::parse(&out.stdout).unwrap();
    let time = |n: roxmltree::Node| -> f64 {
        let t = n.attribute("time").expect("time attribute");
        assert!(
            regex::Regex::new(r"^[0-9]+\.[0-9]{3}$")
                .unwrap()
                .is_match(t),
            "{t}"
        );
        t.parse().unwrap()
    };
    let root = doc.root_element();
    let total = time(root);
    let suite = root
        .children()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(time(suite), total);
    let cases: Vec<f64> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .map(time)
        .collect();
    assert_eq!(cases.len(), 3);
    assert!(
        cases.iter().sum::<f64>() <= total + 0.003,
        "{cases:?} > {total}"
    );
}

/// JUnit read by a real consumer: Python's junitparser when it is installed
/// (skipped loudly otherwise), which reads the same counts and times.
#[test]
fn junit_reads_back_in_junitparser() {
    let r = crate::ci_support::audited_repo();
    let out = r.run("verify-evidence", &["--format", "junit"], None);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.xml");
    std::fs::write(&file, &out.stdout).unwrap();
    let script = r#"
import sys
try:
    from junitparser import JUnitXml
except ImportError:
    sys.exit(4)
xml = JUnitXml.fromfile(sys.argv[1])
for suite in xml:
    cases = list(suite)
    print(suite.name, suite.tests, suite.failures, suite.errors, len(cases),
          all(c.time is not None and c.time >= 0 for c in cases),
          sum(1 for c in cases if not c.is_passed and not c.is_skipped))
"#;
    let res = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&file)
        .output();
    match res {
        Ok(o) if o.status.code() == Some(4) => {
            eprintln!(
                "SKIPPED LOUDLY: the Python package junitparser is not installed (pip install junitparser)"
            )
        }
        Ok(o) => {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert_eq!(
                String::from_utf8_lossy(&o.stdout).trim(),
                "verify-evidence 3 2 0 3 True 2"
            );
        }
        Err(e) => eprintln!(
            "SKIPPED LOUDLY: python3 cannot run ({e}); junitparser did not read the report"
        ),
    }
}

/// `--path-prefix`: an audit of a subdirectory reports repository-relative
/// paths in every CI format, the way annotations and code scanning resolve
/// them; payload files named on the command line keep their spelling.
#[test]
fn path_prefix_makes_every_ci_path_repository_relative() {
    let outer = Repo::new();
    let r = crate::ci_support::audited_repo();
    // The audited tree lives at `sub/dir` of the checkout.
    std::fs::create_dir_all(outer.join("sub")).unwrap();
    std::fs::rename(r.path(), outer.join("sub/dir")).unwrap();
    let audit = |format: &str, prefix: &[&str]| {
        let mut args = vec!["--root", "sub/dir", "--format", format];
        args.extend_from_slice(prefix);
        outer.run("verify-evidence", &args, None)
    };
    let gh = audit("github", &["--path-prefix", "./sub/dir/"]);
    assert_eq!(gh.code, 1);
    let files: Vec<&str> = gh
        .stdout
        .lines()
        .filter_map(|l| l.split(" file=").nth(1))
        .collect();
    assert_eq!(files.len(), 4, "{}", gh.stdout);
    for f in &files {
        assert!(f.starts_with("sub/dir/"), "{f}");
    }
    let sarif: Value =
        serde_json::from_str(&audit("sarif", &["--path-prefix", "sub/dir"]).stdout).unwrap();
    for res in sarif["runs"][0]["results"].as_array().unwrap() {
        let uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        assert!(uri.starts_with("sub/dir/"), "{uri}");
        assert!(
            res["properties"]["subject"]
                .as_str()
                .unwrap()
                .starts_with("sub/dir/")
        );
    }
    assert!(sarif_errors(&sarif_validator(), &sarif).is_empty());
    let junit = audit("junit", &["--path-prefix", "sub/dir"]);
    let doc = roxmltree::Document::parse(&junit.stdout).unwrap();
    for case in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        assert!(case.attribute("name").unwrap().starts_with("sub/dir/"));
    }
    // Without the prefix, the paths are root-relative as before.
    let plain = audit("github", &[]);
    assert!(
        plain.stdout.contains(" file=src/limiter.rs,"),
        "{}",
        plain.stdout
    );
    // `.` means no prefix; a prefix that leaves the checkout is a usage error.
    assert_eq!(
        audit("github", &["--path-prefix", "."]).stdout,
        plain.stdout
    );
    let bad = audit("github", &["--path-prefix", "../x"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("--path-prefix `../x`"),
        "{}",
        bad.stderr
    );
}

// --- in-toto ------------------------------------------------------------------

/// The in-toto Statement v1 schema, compiled.
fn statement_validator() -> (jsonschema::Validator, std::path::PathBuf) {
    let path = crate::schema_support::schema_file("in-toto/statement-v1.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let v = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("schema compiles");
    (v, path)
}

#[test]
fn in_toto_statement_names_the_verified_files_and_carries_the_report() {
    let (validator, schema) = statement_validator();
    let r = mixed_repo();
    r.write("src/two.rs", "two\n");
    r.write(
        "two.json",
        serde_json::to_vec(&payload(
            json!([{"path": "src/two.rs"}, {"path": "src/ok.rs"}]),
        ))
        .unwrap(),
    );
    for bin in ["verify-evidence", "evidence-gate"] {
        let mut args = vec!["--format", "in-toto", "good.json", "two.json"];
        if bin == "evidence-gate" {
            args.insert(0, "verify");
        }
        let out = r.run(bin, &args, None);
        assert_eq!(out.code, 0, "{bin}: {}", out.stderr);
        let doc: Value = serde_json::from_str(&out.stdout).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        if let Some(errs) =
            crate::schema_support::python_errors(&schema, std::slice::from_ref(&doc))
        {
            assert!(errs[0].is_empty(), "Python jsonschema: {:?}", errs[0]);
        }
        assert_eq!(doc["_type"], "https://in-toto.io/Statement/v1");
        assert_eq!(
            doc["predicateType"],
            "https://docs.rs/crate/evidence-gate/latest/source/docs/ci-formats.md#verify-evidence-report-v1"
        );
        let digest =
            |p: &str| evidence_gate::internals::sha256_hex(&std::fs::read(r.join(p)).unwrap());
        assert_eq!(
            doc["subject"],
            json!([
                {"name": "src/ok.rs", "digest": {"sha256": digest("src/ok.rs")}},
                {"name": "src/two.rs", "digest": {"sha256": digest("src/two.rs")}},
            ]),
            "each verified file once, sorted"
        );
        // The predicate is the JSON report, byte for byte as a value.
        let mut json_args = args.clone();
        let at = json_args.iter().position(|a| *a == "in-toto").unwrap();
        json_args[at] = "json";
        let report: Value = serde_json::from_str(&r.run(bin, &json_args, None).stdout).unwrap();
        assert_eq!(doc["predicate"], report);
    }
    // A failing run still attests what it hashed; its predicate says "fail".
    let out = r.run(
        "verify-evidence",
        &["--format", "in-toto", "good.json", "bad.json"],
        None,
    );
    assert_eq!(out.code, 1);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["predicate"]["verdict"], "fail");
    assert!(validator.is_valid(&doc));
    // Nothing hashed: no statement (a Statement needs a subject), exit 2.
    let none = r.run(
        "verify-evidence",
        &["--format", "in-toto", "bad.json"],
        None,
    );
    assert_eq!(none.code, 2);
    assert!(none.stdout.is_empty());
    assert!(
        none.stderr.contains("needs at least one verified file"),
        "{}",
        none.stderr
    );
    // The schema is not vacuous: it refuses a statement without subjects.
    let mut empty = doc.clone();
    empty["subject"] = json!([]);
    assert!(!validator.is_valid(&empty));
    empty["subject"] = json!([{"name": "x", "digest": {"sha256": "ABC"}}]);
    assert!(!validator.is_valid(&empty));
}
