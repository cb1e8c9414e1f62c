//! One negative test per repository-mode finding code: each case breaks a
//! passing repository in one way and asserts the code, its severity and the
//! exit status through the real binary.

use serde_json::{Map, Value, json};

use crate::ci_support::*;
use crate::common::Repo;

type Setup = fn(&Repo, &mut Run4);

fn ledger_path(r: &Repo, run: &Run4) -> std::path::PathBuf {
    r.join(&run.ledger())
}

fn append(r: &Repo, run: &Run4, bytes: &[u8]) {
    let mut all = std::fs::read(ledger_path(r, run)).unwrap();
    all.extend_from_slice(bytes);
    std::fs::write(ledger_path(r, run), all).unwrap();
}

/// (name, setup, code, severity, exit status).
const CASES: &[(&str, Setup, &str, &str, i32)] = &[
    (
        "deliverable edited",
        |r, _| {
            r.write(DELIVERABLE, "changed\n");
        },
        "LEDGER_DIGEST_MISMATCH",
        "error",
        1,
    ),
    (
        "deliverable deleted",
        |r, _| {
            std::fs::remove_file(r.join(TRANSCRIPT)).unwrap();
        },
        "LEDGER_FILE_MISSING",
        "error",
        1,
    ),
    (
        "files element without a digest",
        |r, run| {
            run.entries[2].insert("files".into(), json!([{"path": DELIVERABLE, "size": 3}]));
            run.write(r);
        },
        "LEDGER_FILES_INVALID",
        "error",
        1,
    ),
    (
        "files is not an array",
        |r, run| {
            run.entries[2].insert("files".into(), json!({"path": DELIVERABLE}));
            run.write(r);
        },
        "LEDGER_FILES_INVALID",
        "error",
        1,
    ),
    (
        "record edited",
        |r, run| {
            let t = std::fs::read_to_string(ledger_path(r, run)).unwrap();
            std::fs::write(
                ledger_path(r, run),
                t.replacen("plan created", "plan crEated", 1),
            )
            .unwrap();
        },
        "LEDGER_CHAIN_BROKEN",
        "error",
        1,
    ),
    (
        "torn tail",
        |r, run| append(r, run, b"{\"kind\":\"goal_sta"),
        "LEDGER_TORN_TAIL",
        "error",
        1,
    ),
    (
        "unterminated last record",
        |r, run| {
            let mut b = std::fs::read(ledger_path(r, run)).unwrap();
            b.pop();
            std::fs::write(ledger_path(r, run), b).unwrap();
        },
        "LEDGER_UNTERMINATED",
        "warning",
        0,
    ),
    (
        "record not an object",
        |r, run| append(r, run, b"[1,2,3]\n"),
        "LEDGER_RECORD_INVALID",
        "error",
        1,
    ),
    (
        "unchained record after the chain start",
        |r, run| {
            append(
                r,
                run,
                b"{\"kind\":\"annotation\",\"at\":\"2026-01-02T03:05:00.000Z\"}\n",
            );
        },
        "LEDGER_FOREIGN_RECORD",
        "error",
        1,
    ),
    (
        "legacy ledger without a chain",
        |r, run| {
            let lines: Vec<String> = run
                .entries
                .iter()
                .map(|e| {
                    let mut e = e.clone();
                    e.shift_remove("revision");
                    e.shift_remove("files");
                    serde_json::to_string(&e).unwrap() + "\n"
                })
                .collect();
            std::fs::write(ledger_path(r, run), lines.concat()).unwrap();
            run.plan.as_object_mut().unwrap().shift_remove("revision");
            run.plan
                .as_object_mut()
                .unwrap()
                .shift_remove("lastMutation");
            run.plan
                .as_object_mut()
                .unwrap()
                .shift_remove("aggregateCompletion");
            run.write_plan_unbound(r);
        },
        // threat-model.md I10: an error unless --allow-legacy (was a warning).
        "LEDGER_NOT_CHAINED",
        "error",
        1,
    ),
    (
        "seq gap",
        |r, run| {
            let (a, recs) = chain(&run.entries[..2]);
            let (b, _) =
                evidence_gate::internals::chain_records(7, Some(&recs[1].hash), &run.entries[2..]);
            std::fs::write(ledger_path(r, run), [a, b].concat()).unwrap();
        },
        "LEDGER_SEQ_GAP",
        "error",
        1,
    ),
    (
        "revision regressed",
        |r, run| {
            run.entries[2].insert("revision".into(), json!(1));
            run.write(r);
        },
        "LEDGER_REVISION_REGRESSED",
        "error",
        1,
    ),
    (
        "plan one revision ahead with its lastMutation",
        |r, run| {
            let next = entry("goal_annotated", 5, json!({"message": "note"}));
            run.plan["revision"] = json!(5);
            run.plan["lastMutation"] =
                json!({"revision": 5, "fromSeq": 5, "entries": [Value::Object(next)]});
            run.write_plan(r);
        },
        "LEDGER_BEHIND_PLAN",
        "warning",
        0,
    ),
    (
        "multi-entry append cut short",
        |r, run| {
            let extra = entry("batch_closed", 4, json!({"message": "B1"}));
            let mut lm: Vec<Value> =
                vec![Value::Object(strip(&run.entries[3])), Value::Object(extra)];
            run.plan["lastMutation"]["entries"] = Value::Array(std::mem::take(&mut lm));
            run.write_plan(r);
        },
        "LEDGER_BEHIND_PLAN",
        "warning",
        0,
    ),
    (
        "plan and ledger diverged",
        |r, run| {
            run.plan["revision"] = json!(9);
            run.write_plan(r);
        },
        "LEDGER_PLAN_MISMATCH",
        "error",
        1,
    ),
    (
        "plan without its ledger",
        |r, run| {
            std::fs::remove_file(ledger_path(r, run)).unwrap();
            run.plan
                .as_object_mut()
                .unwrap()
                .shift_remove("aggregateCompletion");
            run.write_plan_unbound(r);
        },
        "LEDGER_PLAN_MISMATCH",
        "error",
        1,
    ),
    (
        "archive head differs",
        |r, run| {
            let (old, recs) = chain(&run.entries[..2]);
            r.write(
                ".omo/ulw-loop/.archive/20260101T000000000Z/ledger.jsonl",
                old,
            );
            let wrong = if recs[1].hash.starts_with('0') {
                "1"
            } else {
                "0"
            }
            .repeat(64);
            run.entries[0].insert("replaced".into(), json!({"archive": ".omo/ulw-loop/.archive/20260101T000000000Z", "previousHead": wrong, "previousRevision": 2, "previousLastSeq": 2, "previousConsistency": "ok"}));
            run.write(r);
        },
        "LEDGER_ARCHIVE_MISMATCH",
        "error",
        1,
    ),
    (
        "archived ledger edited",
        |r, run| {
            let (old, recs) = chain(&run.entries[..3]);
            let dir = ".omo/ulw-loop/.archive/20260101T000000000Z";
            let text = String::from_utf8(old)
                .unwrap()
                .replacen("plan created", "plan crEated", 1);
            r.write(&format!("{dir}/ledger.jsonl"), text);
            run.entries[0].insert(
                "replaced".into(),
                json!({"archive": dir, "previousHead": recs[2].hash}),
            );
            run.write(r);
        },
        "LEDGER_CHAIN_BROKEN",
        "error",
        1,
    ),
    (
        "plan is not JSON",
        |r, run| {
            r.write(&format!("{}/goals.json", run.dir), "{\"version\": 1,");
        },
        "PLAN_CORRUPT",
        "error",
        1,
    ),
    (
        "plan of another version",
        |r, run| {
            run.plan["version"] = json!(2);
            run.write_plan(r);
        },
        "PLAN_CORRUPT",
        "error",
        1,
    ),
    (
        "plan of another profile",
        |r, run| {
            run.plan["profile"] = json!("ultragoal");
            run.write_plan(r);
        },
        "PLAN_CORRUPT",
        "error",
        1,
    ),
    (
        "plan edited by hand (a goal renamed)",
        |r, run| {
            let path = r.join(&format!("{}/goals.json", run.dir));
            let mut p: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            p["goals"][0]["title"] = json!("Limit logins, edited");
            let mut text = serde_json::to_string_pretty(&p).unwrap();
            text.push('\n');
            std::fs::write(path, text).unwrap();
        },
        "PLAN_TAMPERED",
        "error",
        1,
    ),
    (
        "last record edited in place",
        |r, run| {
            let text = std::fs::read_to_string(ledger_path(r, run)).unwrap();
            let edited = text.replace("\"limiter done\"", "\"limiter DONE\"");
            std::fs::write(ledger_path(r, run), edited).unwrap();
        },
        "LEDGER_TAMPERED",
        "error",
        1,
    ),
    (
        "completion without final gate",
        |r, run| {
            run.entries[3].shift_remove("qualityGateSha256");
            run.write(r);
        },
        "COMPLETION_UNBACKED",
        "error",
        1,
    ),
    (
        "nothing left to audit",
        |r, run| {
            std::fs::remove_dir_all(r.join(&run.dir)).unwrap();
        },
        "NOTHING_TO_VERIFY",
        "error",
        1,
    ),
];

fn strip(e: &Map<String, Value>) -> Map<String, Value> {
    let mut e = e.clone();
    e.shift_remove("seq");
    e.shift_remove("prev");
    e
}

#[test]
fn every_case_reports_its_code_and_exit_status() {
    for (name, setup, code, severity, exit) in CASES {
        let r = Repo::new();
        let mut run = Run4::new(&r, STATE);
        setup(&r, &mut run);
        let out = audit(&r, &[]);
        assert_eq!(out.code, *exit, "{name}: {}", out.stdout);
        let f = findings(&out);
        assert!(
            f.iter().any(|(c, s, _, _)| c == code && s == severity),
            "{name}: expected {code} ({severity}) in {f:?}"
        );
        let text = r.run("verify-evidence", &[], None);
        assert_eq!(text.code, *exit, "{name}: text and json agree");
        assert!(text.stdout.contains(code), "{name}: {}", text.stdout);
    }
}

/// Codes whose negative tests live in other modules (gate ledger, payloads).
const TESTED_ELSEWHERE: &[&str] = &[
    // goals_legacy: a Node ledger continued by the engine.
    "LEDGER_LEGACY_PREFIX",
    // ci_audit_engine: needs the engine's `.ledger.idx`.
    "LEDGER_INDEX_MISMATCH",
    // ci_audit_base: needs a git history (`--base`).
    "LEDGER_REWRITTEN",
    "LEDGER_RECEIPT_REUSED",
    "LEDGER_RECEIPT_WAIVED",
    "LEDGER_RECEIPT_OVERRIDE",
    // goals_binding: `repair --accept-tampered` and Node-written state.
    "TAMPER_ACKNOWLEDGED",
    "PLAN_NOT_BOUND",
    // hooks_stop: needs a head observed by a hook in the per-user state.
    "LEDGER_REWOUND",
];

#[test]
fn every_repository_mode_code_has_a_negative_test() {
    let mut tested: Vec<&str> = CASES.iter().map(|c| c.2).collect();
    tested.extend_from_slice(TESTED_ELSEWHERE);
    let repository_codes = [
        "PLAN_CORRUPT",
        "COMPLETION_UNBACKED",
        "NOTHING_TO_VERIFY",
        "PLAN_TAMPERED",
        "TAMPER_ACKNOWLEDGED",
        "PLAN_NOT_BOUND",
    ];
    for c in evidence_gate::evidence::Code::ALL {
        let name = c.name();
        if name.starts_with("LEDGER_") || repository_codes.contains(&name) {
            assert!(tested.contains(&name), "{name} has no repository-mode test");
        }
    }
}

/// The audit builds only the members it checks of each ledger record, but
/// every other member is still parsed as a whole parse would parse it: a
/// record whose unread member a whole `serde_json::Value` parse refuses (a
/// lone surrogate, a number out of range, invalid UTF-8, `serde_json`'s
/// raw-value token over text that is not JSON) is not a JSON object
/// (`LEDGER_RECORD_INVALID`), as when every record was read whole. Next to
/// them, honest records with escapes, large numbers and that token over
/// JSON in an unread member pass.
#[test]
fn a_record_is_an_object_only_when_a_whole_parse_says_so() {
    let cases: [(&str, &[u8], bool); 8] = [
        ("lone surrogate", br#""\ud800 tail""#, true),
        ("reversed surrogate pair", br#"["\udc00\ud800"]"#, true),
        ("number out of range", b"{\"n\":1e400}", true),
        ("invalid UTF-8", b"\"\xff\xfe\"", true),
        (
            "raw-value token over text that is not JSON",
            br#"{"$serde_json::private::RawValue":"not json"}"#,
            true,
        ),
        ("escapes", br#""caf\u00e9 \ud83d\ude00 \"quoted\"""#, false),
        (
            "large number",
            b"[1e300, -0.5, 18446744073709551615]",
            false,
        ),
        (
            "raw-value token over JSON",
            br#"{"$serde_json::private::RawValue":"[1,2]"}"#,
            false,
        ),
    ];
    for (name, member, invalid) in cases {
        let r = Repo::new();
        let run = Run4::new(&r, STATE);
        let path = ledger_path(&r, &run);
        let ledger = std::fs::read(&path).unwrap();
        let last = ledger[..ledger.len() - 1]
            .rsplit(|&b| b == b'\n')
            .next()
            .unwrap();
        let seq = run.entries.len() + 1;
        // Written under the same plan as the record before it.
        let plan_sha = serde_json::from_slice::<Value>(last).unwrap()["planSha256"].clone();
        let mut line = format!(
            "{{\"seq\":{seq},\"prev\":\"{}\",\"planSha256\":{plan_sha},\"at\":\"2026-05-01T12:00:00.000Z\",\"kind\":\"note_added\",\"note\":",
            evidence_gate::internals::record_hash(last)
        )
        .into_bytes();
        line.extend_from_slice(member);
        line.extend_from_slice(b"}\n");
        append(&r, &run, &line);
        let out = audit(&r, &[]);
        let f = findings(&out);
        let flagged = f
            .iter()
            .any(|(c, s, _, _)| c == "LEDGER_RECORD_INVALID" && s == "error");
        assert_eq!(flagged, invalid, "{name}: {f:?}");
        if invalid {
            assert_eq!(out.code, 1, "{name}: {}", out.stdout);
        } else {
            assert_eq!(out.code, 0, "{name}: {f:?}");
        }
    }
}
