//! `verify-evidence` / `evidence-gate verify`.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;

use super::render::{self, Format, Run};
use super::{EXIT_USAGE, Io};
use crate::ambient::{self, Ambient, ReadError};
use crate::evidence::{
    self, Code, Finding, Report, ReportBuilder, ReportKind, Root, VerifyOptions,
};
use crate::rules::evidence::EvidenceRules;
use crate::rules::{Layer, RulesError, load_workspace};

#[derive(Args, Debug)]
pub(crate) struct VerifyArgs {
    /// Evidence payload files to verify; `-` reads one payload from standard input.
    #[arg(value_name = "PAYLOAD")]
    payloads: Vec<PathBuf>,
    /// Workspace root every declared path is relative to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// Extra rules file, applied after the repository's `.evidence-gate/rules.json`.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Text format: print findings and the summary only when verification does not pass.
    #[arg(long, short)]
    quiet: bool,
}

pub(crate) fn run(args: &VerifyArgs, amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    if args.payloads.is_empty() {
        let _ = writeln!(
            io.stderr,
            "error: no PAYLOAD given; repository mode (auditing goal-engine ledgers) is not part of this build yet. \
             Pass one or more evidence payload files, or `-` for standard input."
        );
        return EXIT_USAGE;
    }
    if args
        .payloads
        .iter()
        .filter(|p| p.as_os_str() == "-")
        .count()
        > 1
    {
        let _ = writeln!(
            io.stderr,
            "error: `-` (standard input) may be given only once"
        );
        return EXIT_USAGE;
    }
    let reports = collect(args, amb, io.stdin);
    let run = Run::new(reports);
    let color = io.stdout_is_terminal && ambient::var(amb, "NO_COLOR").is_none_or(|v| v.is_empty());
    match render::render(&run, args.format, args.quiet, color) {
        Ok(bytes) => {
            if io
                .stdout
                .write_all(&bytes)
                .and_then(|()| io.stdout.flush())
                .is_err()
            {
                return EXIT_USAGE;
            }
            run.verdict.exit_code()
        }
        Err(e) => {
            let _ = writeln!(io.stderr, "error: could not render the report: {e}");
            EXIT_USAGE
        }
    }
}

fn subject(p: &Path) -> String {
    if p.as_os_str() == "-" {
        "<stdin>".to_owned()
    } else {
        p.display().to_string()
    }
}

fn error_reports(args: &VerifyArgs, finding: Finding) -> Vec<Report> {
    args.payloads
        .iter()
        .map(|p| {
            let mut b = ReportBuilder::new(subject(p), ReportKind::Payload);
            b.push(finding.clone());
            b.finish(false)
        })
        .collect()
}

fn rules_finding(e: &RulesError) -> Finding {
    Finding::new(Code::RulesInvalid, Some(&e.file), e.to_string()).with_detail(
        serde_json::json!({"file": e.file, "pointer": e.pointer, "problem": e.problem}),
    )
}

fn collect(args: &VerifyArgs, amb: &dyn Ambient, stdin: &mut dyn Read) -> Vec<Report> {
    let dir = match amb.open_dir(&args.root) {
        Ok(d) => d,
        Err(e) => {
            let root = args.root.display().to_string();
            return error_reports(
                args,
                Finding::new(
                    Code::RootUnavailable,
                    Some(&root),
                    format!("cannot open the root directory `{root}`: {e}"),
                ),
            );
        }
    };
    let extra = match &args.rules {
        Some(path) => match ambient::read_file(amb, path, 4 * 1024 * 1024) {
            Ok(bytes) => Some((path.display().to_string(), bytes)),
            Err(e) => {
                let name = path.display().to_string();
                return error_reports(
                    args,
                    Finding::new(
                        Code::RulesInvalid,
                        Some(&name),
                        format!("cannot read the rules file `{name}`: {e}"),
                    ),
                );
            }
        },
        None => None,
    };
    let rules = match load_workspace(
        &dir,
        extra.as_ref().map(|(n, b)| Layer { name: n, bytes: b }),
    ) {
        Ok(r) => r,
        Err(e) => return error_reports(args, rules_finding(&e)),
    };
    let root = match rules
        .family::<EvidenceRules>()
        .and_then(|r| Root::new(dir, &r))
    {
        Ok(r) => r,
        Err(e) => return error_reports(args, rules_finding(&e)),
    };
    let max = root.max_payload_bytes();
    args.payloads
        .iter()
        .map(|p| {
            let name = subject(p);
            let bytes = if p.as_os_str() == "-" {
                ambient::read_capped(&mut *stdin, max)
            } else {
                ambient::read_file(amb, p, max)
            };
            let mut b = ReportBuilder::new(name.clone(), ReportKind::Payload);
            match bytes {
                Ok(bytes) => match evidence::payload::parse(&bytes, max) {
                    Ok(payload) => {
                        evidence::verify_payload(&root, &payload, &name, VerifyOptions::default())
                    }
                    Err(f) => {
                        b.push(*f);
                        b.finish(false)
                    }
                },
                Err(ReadError::TooLarge { size }) => {
                    b.push(Finding::new(
                        Code::EvidenceParseError,
                        None,
                        format!("the payload is over the {max}-byte limit (read {size} bytes)"),
                    ));
                    b.finish(false)
                }
                Err(e) => {
                    b.push(Finding::new(
                        Code::PayloadUnreadable,
                        None,
                        format!("cannot read the payload `{name}`: {e}"),
                    ));
                    b.finish(false)
                }
            }
        })
        .collect()
}
