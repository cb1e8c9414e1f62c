//! Rendering verification runs: `text`, `json` and the CI formats.

mod ci;

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::audit::Summary;
use crate::finding::{Finding, Report, Severity, Verdict};

/// Output format of `verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One line per finding, then a summary line.
    Text,
    /// One JSON object `{verdict, reports}`.
    Json,
    /// GitHub Actions workflow commands (`::error file=…,title=CODE::message`).
    Github,
    /// JUnit XML, one test case per payload or audited plan.
    Junit,
    /// SARIF 2.1.0, one rule per finding code.
    Sarif,
    /// An in-toto Statement v1: the verified files as subjects (SHA-256),
    /// the JSON report as predicate, for the CI's own signing tooling.
    InToto,
}

/// What a run verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Payload files given on the command line.
    Payloads,
    /// Repository mode (payloads given with `--ledger` are included).
    Repository(Summary),
}

/// The policy a repository audit used (docs/threat-model.md#i9).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Policy {
    /// `sha256:<hex>` of the merged rules document.
    pub digest: String,
    /// The layers applied, embedded first.
    pub sources: Vec<String>,
    /// The repository's `.evidence-gate/rules.json`: `applied`
    /// (`--repo-rules`), `ignored`, or absent (`null`).
    pub repository_rules: Option<&'static str>,
}

/// A whole verification run.
#[derive(Debug, Serialize)]
pub(crate) struct Run {
    /// Worst verdict over the reports.
    pub verdict: Verdict,
    /// The policy of a repository audit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// One report per payload (or audited state directory).
    pub reports: Vec<Report>,
    /// What was verified (wording of the summary line).
    #[serde(skip)]
    pub scope: Scope,
    /// Wall time of the whole verification (JUnit `time`).
    #[serde(skip)]
    pub elapsed: Duration,
    /// Prefix of the root-relative paths in the CI formats (`--path-prefix`:
    /// the root's path inside the repository), without a trailing `/`.
    #[serde(skip)]
    pub path_prefix: Option<String>,
    /// Subjects given on the command line (payload files, the root itself):
    /// they are not root-relative, so the prefix does not apply.
    #[serde(skip)]
    pub verbatim_subjects: Vec<String>,
}

impl Run {
    /// Combines payload reports into a run.
    pub(crate) fn new(reports: Vec<Report>) -> Run {
        Run::with_scope(reports, Scope::Payloads)
    }

    /// Combines reports of a run of the given scope. A repository audit
    /// without reports (nothing found, `--allow-empty`) passes.
    pub(crate) fn with_scope(reports: Vec<Report>, scope: Scope) -> Run {
        let verdict = Verdict::worst(reports.iter().map(Report::verdict));
        Run {
            verdict,
            policy: None,
            reports,
            scope,
            elapsed: Duration::ZERO,
            path_prefix: None,
            verbatim_subjects: Vec::new(),
        }
    }

    /// A root-relative path as the CI formats report it: under the
    /// `--path-prefix` when one was given.
    pub(crate) fn shown<'a>(&self, path: &'a str) -> Cow<'a, str> {
        match &self.path_prefix {
            Some(p) => Cow::Owned(format!("{p}/{path}")),
            None => Cow::Borrowed(path),
        }
    }

    /// A report's subject as the CI formats report it: repository-mode
    /// subjects are root-relative (prefixed like paths); payload files named
    /// on the command line are shown as they were given.
    pub(crate) fn shown_subject<'a>(&self, r: &'a Report) -> Cow<'a, str> {
        let verbatim = self.verbatim_subjects.iter().any(|s| s == r.subject());
        match self.scope {
            Scope::Repository(_) if !verbatim => self.shown(r.subject()),
            _ => Cow::Borrowed(r.subject()),
        }
    }

    /// Where a finding is: its path, else its report's subject.
    pub(crate) fn location<'a>(&self, r: &'a Report, f: &'a Finding) -> Cow<'a, str> {
        match &f.path {
            Some(p) => self.shown(p),
            None => self.shown_subject(r),
        }
    }
}

/// Renders the run; a failure here is exit 2, never 0.
pub(crate) fn render(
    run: &Run,
    format: Format,
    quiet: bool,
    color: bool,
) -> Result<Vec<u8>, String> {
    match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(run).map_err(|e| e.to_string())?;
            s.push('\n');
            Ok(s.into_bytes())
        }
        Format::Text => Ok(text(run, quiet, color).into_bytes()),
        Format::Github => Ok(ci::github(run).into_bytes()),
        Format::Junit => Ok(ci::junit(run).into_bytes()),
        Format::Sarif => {
            let mut s = serde_json::to_string_pretty(&ci::sarif(run)).map_err(|e| e.to_string())?;
            s.push('\n');
            Ok(s.into_bytes())
        }
        Format::InToto => {
            let statement = ci::in_toto(run).map_err(|e| e.to_string())?;
            let mut s = serde_json::to_string_pretty(&statement).map_err(|e| e.to_string())?;
            s.push('\n');
            Ok(s.into_bytes())
        }
    }
}

/// The documentation of this version: the file under `docs/` of the
/// published package, as docs.rs serves its source.
pub(crate) fn docs_url(file_and_anchor: &str) -> String {
    format!(
        "https://docs.rs/crate/evidence-gate/{}/source/docs/{file_and_anchor}",
        env!("CARGO_PKG_VERSION")
    )
}

/// `s` in the style named by `code` (`1;32` bold green, `1;31` bold red,
/// `1;33` bold yellow, `33` yellow) when `color` is on.
fn paint(color: bool, code: &str, s: &str) -> String {
    use anstyle::{AnsiColor, Style};
    if !color {
        return s.to_owned();
    }
    let style = match code {
        "1;32" => Style::new().bold().fg_color(Some(AnsiColor::Green.into())),
        "1;31" => Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
        "1;33" => Style::new().bold().fg_color(Some(AnsiColor::Yellow.into())),
        _ => Style::new().fg_color(Some(AnsiColor::Yellow.into())),
    };
    format!("{style}{s}{style:#}")
}

fn text(run: &Run, quiet: bool, color: bool) -> String {
    let mut out = String::new();
    if quiet && run.verdict == Verdict::Pass {
        return out;
    }
    if let Some(p) = &run.policy {
        let _ = write!(out, "policy {} ({})", p.digest, p.sources.join(" + "));
        match p.repository_rules {
            Some("ignored") => {
                out.push_str("; .evidence-gate/rules.json not applied (--repo-rules applies it)")
            }
            Some(_) => out.push_str("; .evidence-gate/rules.json applied (--repo-rules)"),
            None => {}
        }
        out.push('\n');
    }
    for r in &run.reports {
        for f in r.findings() {
            let sev = match f.severity {
                Severity::Error => "",
                Severity::Warning => "warning ",
                Severity::Info => "info ",
            };
            let code = paint(
                color,
                if f.severity == Severity::Error {
                    "1;31"
                } else {
                    "33"
                },
                f.code.name(),
            );
            let path = printable(&run.location(r, f)).into_owned();
            let _ = writeln!(out, "{sev}{code} {path}: {}", printable(&f.message));
        }
    }
    out.push_str(&summary_line(run, color));
    out.push('\n');
    out
}

/// Escapes the non-printable characters of text that came from the verified
/// tree or payload (paths, messages quoting them) as `\u{..}`: a newline
/// would forge a finding, summary or CI workflow-command line, an escape
/// sequence would drive the terminal, and a format character (a bidi
/// override, a zero-width space) would make the line read differently from
/// what it names (docs/threat-model.md#i6; [`crate::text::is_unprintable`]).
pub(crate) fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    crate::text::escape_unprintable(s)
}

/// The one summary line: `PASSED: …`, `FAILED: 7 findings in 1 payload` or
/// `ERROR: could not verify: …`.
pub(crate) fn summary_line(run: &Run, color: bool) -> String {
    if let Scope::Repository(s) = run.scope {
        return repository_line(run, &s, color);
    }
    let n = run.reports.len();
    let errors = run
        .reports
        .iter()
        .flat_map(|r| r.findings())
        .filter(|f| f.severity == Severity::Error)
        .count();
    match run.verdict {
        Verdict::Pass => {
            let files: usize = run.reports.iter().map(|r| r.files().len()).sum();
            let bytes: u64 = run
                .reports
                .iter()
                .flat_map(|r| r.files())
                .map(|f| f.size)
                .sum();
            format!(
                "{} {n} payload{} verified: {files} file{} ({bytes} bytes) hashed, no findings",
                paint(color, "1;32", "PASSED:"),
                if n == 1 { "" } else { "s" },
                if files == 1 { "" } else { "s" },
            )
        }
        Verdict::Fail => format!(
            "{} {} in {}",
            paint(color, "1;31", "FAILED:"),
            plural(errors as u64, "finding", "findings"),
            plural(n as u64, "payload", "payloads"),
        ),
        Verdict::Error => {
            format!(
                "{} could not verify: {} in {}",
                paint(color, "1;33", "ERROR:"),
                plural(errors as u64, "finding", "findings"),
                plural(n as u64, "payload", "payloads"),
            )
        }
    }
}

fn plural(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Summary of a repository audit.
fn repository_line(run: &Run, s: &Summary, color: bool) -> String {
    let count = |sev: Severity| {
        run.reports
            .iter()
            .flat_map(|r| r.findings())
            .filter(|f| f.severity == sev)
            .count() as u64
    };
    let n = run.reports.len() as u64;
    let bad = run
        .reports
        .iter()
        .filter(|r| r.verdict() != Verdict::Pass)
        .count() as u64;
    match run.verdict {
        Verdict::Pass if run.reports.is_empty() => format!(
            "{} nothing to audit (no state directory, gate ledger or evidence payload; allowed by --allow-empty)",
            paint(color, "1;32", "PASSED:")
        ),
        Verdict::Pass => {
            let warnings = count(Severity::Warning);
            format!(
                "{} audited {}, {} and {}: {} verified, {} ({}) re-hashed, no failures{}",
                paint(color, "1;32", "PASSED:"),
                plural(s.state_dirs as u64, "state directory", "state directories"),
                plural(s.gate_ledgers as u64, "gate ledger", "gate ledgers"),
                plural(s.payloads as u64, "payload", "payloads"),
                plural(s.ledger_records, "ledger record", "ledger records"),
                plural(s.recorded_files as u64, "recorded file", "recorded files"),
                plural(s.recorded_bytes, "byte", "bytes"),
                if warnings > 0 {
                    format!(", {}", plural(warnings, "warning", "warnings"))
                } else {
                    String::new()
                }
            )
        }
        Verdict::Fail => format!(
            "{} {} in {bad} of {n} audited {}",
            paint(color, "1;31", "FAILED:"),
            plural(count(Severity::Error), "finding", "findings"),
            if n == 1 { "subject" } else { "subjects" },
        ),
        Verdict::Error => format!(
            "{} could not verify: {} in {bad} of {n} audited {}",
            paint(color, "1;33", "ERROR:"),
            plural(count(Severity::Error), "finding", "findings"),
            if n == 1 { "subject" } else { "subjects" },
        ),
    }
}
