//! Rendering verification runs: `text` and `json` (the CI formats slot in here).

use std::fmt::Write as _;

use serde::Serialize;

use crate::evidence::{Report, Severity, Verdict};

/// Output format of `verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One line per finding, then a summary line.
    Text,
    /// One JSON object `{verdict, reports}`.
    Json,
}

/// A whole verification run.
#[derive(Debug, Serialize)]
pub struct Run {
    /// Worst verdict over the reports.
    pub verdict: Verdict,
    /// One report per payload (or audited state directory).
    pub reports: Vec<Report>,
}

impl Run {
    /// Combines reports into a run.
    pub fn new(reports: Vec<Report>) -> Run {
        let verdict = Verdict::worst(reports.iter().map(Report::verdict));
        Run { verdict, reports }
    }
}

/// Renders the run; a failure here is exit 2, never 0.
pub fn render(run: &Run, format: Format, quiet: bool, color: bool) -> Result<Vec<u8>, String> {
    match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(run).map_err(|e| e.to_string())?;
            s.push('\n');
            Ok(s.into_bytes())
        }
        Format::Text => Ok(text(run, quiet, color).into_bytes()),
    }
}

fn paint(color: bool, code: &str, s: &str) -> String {
    if color {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_owned()
    }
}

fn text(run: &Run, quiet: bool, color: bool) -> String {
    let mut out = String::new();
    if quiet && run.verdict == Verdict::Pass {
        return out;
    }
    let mut errors = 0usize;
    for r in &run.reports {
        for f in r.findings() {
            if f.severity == Severity::Error {
                errors += 1;
            }
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
            let path = f.path.as_deref().unwrap_or(r.subject());
            let _ = writeln!(out, "{sev}{code} {path}: {}", f.message);
        }
    }
    let n = run.reports.len();
    match run.verdict {
        Verdict::Pass => {
            let files: usize = run.reports.iter().map(|r| r.files().len()).sum();
            let bytes: u64 = run
                .reports
                .iter()
                .flat_map(|r| r.files())
                .map(|f| f.size)
                .sum();
            let _ = writeln!(
                out,
                "{} {n} payload{} verified: {files} file{} ({bytes} bytes) hashed, no findings",
                paint(color, "1;32", "PASSED:"),
                if n == 1 { "" } else { "s" },
                if files == 1 { "" } else { "s" },
            );
        }
        Verdict::Fail => {
            let _ = writeln!(
                out,
                "{} {errors} findings in {n} payloads",
                paint(color, "1;31", "FAILED:")
            );
        }
        Verdict::Error => {
            let _ = writeln!(
                out,
                "{} could not verify: {errors} findings in {n} payloads",
                paint(color, "1;33", "ERROR:")
            );
        }
    }
    out
}
