//! CI formats: GitHub workflow commands, JUnit XML and SARIF 2.1.0.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{Run, summary_line};
use crate::finding::{Code, Finding, Report, Severity, Verdict};

/// GitHub Actions workflow commands: one `::error|warning|notice` line per
/// finding (annotated with file and title), then the summary line.
pub(crate) fn github(run: &Run) -> String {
    let mut out = String::new();
    for r in &run.reports {
        for f in r.findings() {
            let cmd = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "notice",
            };
            let file = run.location(r, f);
            let line = line_of(f).map(|l| format!(",line={l}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "::{cmd} file={}{line},title={}::{}",
                escape_property(&file),
                escape_property(f.code.name()),
                escape_data(&f.message)
            );
        }
    }
    out.push_str(&summary_line(run, false));
    out.push('\n');
    out
}

/// The line of the finding's `path` it is about: by convention `detail.line`
/// is always a line of `path` (a ledger line for ledger findings); findings
/// about a recorded file name the ledger line `ledgerLine` instead.
fn line_of(f: &Finding) -> Option<u64> {
    f.detail.as_ref()?.get("line")?.as_u64().filter(|l| *l >= 1)
}

/// Escapes a workflow-command message: `%`, CR and LF as the runner decodes
/// them, every other control character (an ESC would drive the log viewer) as
/// `\u{..}`, the way the text format prints it.
fn escape_data(s: &str) -> String {
    let s = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    super::printable(&s).into_owned()
}

/// Escapes a workflow-command property value.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// JUnit XML: one test case per payload or audited plan; failures carry the
/// findings, could-not-verify reports are `<error>`. `time` (seconds) is the
/// measured wall time of the run and of each report.
pub(crate) fn junit(run: &Run) -> String {
    let failures = run
        .reports
        .iter()
        .filter(|r| r.verdict() == Verdict::Fail)
        .count();
    let errors = run
        .reports
        .iter()
        .filter(|r| r.verdict() == Verdict::Error)
        .count();
    let n = run.reports.len();
    let time = seconds(run.elapsed);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"evidence-gate\" tests=\"{n}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time}\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"verify-evidence\" tests=\"{n}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{time}\">"
    );
    for r in &run.reports {
        let kind = serde_json::to_value(r.kind())
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let _ = write!(
            out,
            "    <testcase classname=\"evidence-gate.{}\" name=\"{}\" time=\"{}\"",
            xml(&kind),
            xml(&run.shown_subject(r)),
            seconds(r.elapsed())
        );
        let errs: Vec<&Finding> = r
            .findings()
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .collect();
        let others: Vec<&Finding> = r
            .findings()
            .iter()
            .filter(|f| f.severity != Severity::Error)
            .collect();
        if r.verdict() == Verdict::Pass && others.is_empty() {
            out.push_str("/>\n");
            continue;
        }
        out.push_str(">\n");
        if r.verdict() != Verdict::Pass {
            let tag = if r.verdict() == Verdict::Fail {
                "failure"
            } else {
                "error"
            };
            let first = errs
                .first()
                .map(|f| f.code.name())
                .unwrap_or("VERIFY_FAILED");
            let msg = errs
                .first()
                .map(|f| f.message.as_str())
                .unwrap_or("verification did not pass");
            let _ = write!(
                out,
                "      <{tag} type=\"{}\" message=\"{}\">",
                xml(first),
                xml(msg)
            );
            for f in &errs {
                let _ = writeln!(out, "{}", xml(&finding_line(run, r, f)));
            }
            let _ = writeln!(out, "</{tag}>");
        }
        if !others.is_empty() {
            out.push_str("      <system-out>");
            for f in &others {
                let _ = writeln!(out, "{}", xml(&finding_line(run, r, f)));
            }
            out.push_str("</system-out>\n");
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Seconds with millisecond precision, the way JUnit readers parse `time`.
fn seconds(d: std::time::Duration) -> String {
    format!("{}.{:03}", d.as_secs(), d.subsec_millis())
}

fn finding_line(run: &Run, r: &Report, f: &Finding) -> String {
    format!("{} {}: {}", f.code.name(), run.location(r, f), f.message)
}

/// XML text and attribute escaping; characters XML 1.0 cannot carry become U+FFFD,
/// format characters and line separators are written as `\u{..}` (docs/threat-model.md#i6).
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if c == '\u{2028}' || c == '\u{2029}' || crate::text::is_format(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The base every SARIF result URI is relative to (`uriBaseId`).
pub(crate) const SRCROOT: &str = "SRCROOT";

/// SARIF 2.1.0 with one rule per finding code (help text from the code
/// table, `helpUri` its entry in `docs/codes.md`) and one result per finding.
/// Every result has a region (`startLine` 1 for a finding about a whole
/// file), a URI relative to `SRCROOT` and a `partialFingerprints` entry that
/// stays the same across runs for the same finding.
pub(crate) fn sarif(run: &Run) -> Value {
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.name(),
                "name": camel(c.name()),
                "shortDescription": {"text": c.summary()},
                "fullDescription": {"text": c.summary()},
                "help": {"text": format!("{}: {}", c.name(), c.summary())},
                "helpUri": help_uri(*c),
                "defaultConfiguration": {"level": level(default_severity(*c))},
            })
        })
        .collect();
    let mut results = Vec::new();
    for r in &run.reports {
        for f in r.findings() {
            let index = Code::ALL.iter().position(|c| *c == f.code).unwrap_or(0);
            let uri = uri_reference(&run.location(r, f));
            let line = line_of(f);
            let location = json!({
                "artifactLocation": {"uri": uri, "uriBaseId": SRCROOT},
                "region": {"startLine": line.unwrap_or(1)},
            });
            let subject = super::printable(&run.shown_subject(r)).into_owned();
            let fingerprint = crate::digest::sha256_hex(
                [
                    f.code.name(),
                    subject.as_str(),
                    uri.as_str(),
                    &line.map(|l| l.to_string()).unwrap_or_default(),
                    f.message.as_str(),
                ]
                .join("\0")
                .as_bytes(),
            );
            let mut result = json!({
                "ruleId": f.code.name(),
                "ruleIndex": index,
                "level": level(f.severity),
                "message": {"text": super::printable(&f.message)},
                "locations": [{"physicalLocation": location}],
                "partialFingerprints": {FINGERPRINT: fingerprint},
            });
            let mut properties = json!({"subject": subject, "wholeFile": line.is_none()});
            if let Some(d) = &f.detail {
                properties["detail"] = d.clone();
            }
            result["properties"] = properties;
            results.push(result);
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "evidence-gate",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": super::docs_url("ci-formats.md"),
                "rules": rules,
            }},
            "originalUriBaseIds": {SRCROOT: {"description": {"text": match &run.path_prefix {
                Some(_) => "The repository root: result paths carry the audited root's path (--path-prefix).",
                None => "The audited root (verify-evidence --root).",
            }}}},
            "results": results,
            "properties": {"verdict": run.verdict},
        }],
    })
}

/// The `partialFingerprints` key: SHA-256 of the code, subject, location,
/// line and message, NUL-separated.
pub(crate) const FINGERPRINT: &str = "evidenceGateFinding/v1";

/// The code's entry in `docs/codes.md` (anchor: the code in lower case).
pub(crate) fn help_uri(c: Code) -> String {
    super::docs_url(&format!("codes.md#{}", c.name().to_ascii_lowercase()))
}

/// The in-toto Statement v1 `predicateType` of a verify-evidence report.
pub(crate) const PREDICATE_TYPE: &str = "https://docs.rs/crate/evidence-gate/latest/source/docs/ci-formats.md#verify-evidence-report-v1";

/// An in-toto Statement v1: one subject per verified file (name as the
/// report shows it, `sha256` digest), the JSON report as the predicate. A
/// run that verified no file has no subject, which the statement format
/// forbids: such a run is an error to render (exit 2), never a statement
/// that attests nothing.
pub(crate) fn in_toto(run: &Run) -> Result<Value, String> {
    let mut subjects: Vec<(String, String)> = Vec::new();
    for r in &run.reports {
        for f in r.files() {
            let name = run.shown(&f.path).into_owned();
            if !subjects.iter().any(|(n, d)| *n == name && *d == f.sha256) {
                subjects.push((name, f.sha256.clone()));
            }
        }
    }
    subjects.sort();
    if subjects.is_empty() {
        return Err(
            "an in-toto statement needs at least one verified file, and this run verified none (use --format json)".to_owned(),
        );
    }
    let subject: Vec<Value> = subjects
        .into_iter()
        .map(|(name, sha256)| json!({"name": name, "digest": {"sha256": sha256}}))
        .collect();
    Ok(json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": subject,
        "predicateType": PREDICATE_TYPE,
        "predicate": serde_json::to_value(run).map_err(|e| e.to_string())?,
    }))
}

fn default_severity(c: Code) -> Severity {
    Finding::new(c, None, String::new()).severity
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn camel(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase(),
                None => String::new(),
            }
        })
        .collect()
}

/// Percent-encodes everything but unreserved characters and `/`, so any
/// repo-relative path is a valid URI reference.
fn uri_reference(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(escape_property("a,b:c%\n"), "a%2Cb%3Ac%25%0A");
        assert_eq!(escape_data("x\u{1b}[2J\ty"), "x\\u{1b}[2J\\u{9}y");
        assert_eq!(
            xml("<a & \"b\">\u{1}"),
            "&lt;a &amp; &quot;b&quot;&gt;\u{FFFD}"
        );
        assert_eq!(uri_reference("src/a b#.rs"), "src/a%20b%23.rs");
        // Bidi controls and other format characters never reach a report raw (docs/threat-model.md#i6).
        assert_eq!(escape_property("src/\u{202E}gpj.rs"), "src/\\u{202e}gpj.rs");
        assert_eq!(escape_data("a\u{200B}\u{2066}b"), "a\\u{200b}\\u{2066}b");
        assert_eq!(xml("x\u{202E}y\u{2028}"), "x\\u{202e}y\\u{2028}");
        assert_eq!(xml("Überprüft 完了"), "Überprüft 完了");
        assert_eq!(camel("PATH_NOT_CLEAN"), "PathNotClean");
    }
}
