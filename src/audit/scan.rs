//! Opening state files through the sandbox and verifying a ledger's chain
//! with [`crate::ledger::verify_chain`] (the one chain implementation).

use std::io::BufReader;

use cap_std::fs::{Dir, File};
use serde_json::{Value, json};

use super::progress::{CountingReader, Progress};
use crate::finding::problem_finding;
use crate::finding::{Code, Finding};
use crate::ledger::{ChainReport, Extract, ForeignSeverity, verify_chain_split};
use crate::sandbox::open::{self, FileChecks, FileProblem};

/// A state file opened without following symlinks, or why it could not be.
pub(crate) enum Opened {
    /// Nothing at that name.
    Absent,
    /// A regular file and its size.
    File(File, u64),
    /// Symlink, not a regular file, I/O error: a finding about `display`.
    Problem(Finding),
}

/// Opens `name` in `dir` (no-follow, non-blocking) and checks it is a
/// regular file. Hard links and empty files are not problems for state files.
pub(crate) fn open_state_file(dir: &Dir, name: &str, display: &str) -> Opened {
    let checks = FileChecks {
        reject_hard_links: false,
        max_bytes: u64::MAX,
        reject_empty: false,
    };
    match open::open_in(dir, name, display)
        .and_then(|(f, m)| open::check_handle(&m, &checks).map(|()| (f, m.len())))
    {
        Ok((f, len)) => Opened::File(f, len),
        Err(FileProblem::Missing) => Opened::Absent,
        Err(p) => {
            let (code, why) = problem_finding(&p);
            Opened::Problem(Finding::new(
                code,
                Some(display),
                format!("state file `{display}`: {why}"),
            ))
        }
    }
}

/// A verified ledger: the chain summary and its findings, each located at the
/// ledger file (`detail.line` is a line of that file).
pub(crate) struct Scanned {
    pub(crate) chain: ChainReport,
    pub(crate) findings: Vec<Finding>,
}

/// Streams the whole ledger through the chain verifier; `visit` sees every
/// record that is a JSON object, with its 1-based line number.
pub(crate) fn scan_ledger(
    file: File,
    display: &str,
    foreign: ForeignSeverity,
    progress: &mut dyn Progress,
    visit: &mut dyn FnMut(u64, &Value),
) -> Result<Scanned, Box<Finding>> {
    let whole = &Extract::WHOLE;
    scan_ledger_split(
        file,
        display,
        foreign,
        progress,
        whole,
        &mut |line, v, ()| visit(line, v),
    )
}

/// [`scan_ledger`] for a caller that needs only the chain's verdict: each
/// record's chain members are built, nothing else.
pub(crate) fn scan_chain(
    file: File,
    display: &str,
    foreign: ForeignSeverity,
    progress: &mut dyn Progress,
) -> Result<Scanned, Box<Finding>> {
    let chain = &Extract::CHAIN;
    scan_ledger_split(file, display, foreign, progress, chain, &mut |_, _, ()| {})
}

/// [`scan_ledger`] with the visit split as [`verify_chain_split`] splits it:
/// `extract` reads each record where it was parsed, `fold` sees it in order.
pub(crate) fn scan_ledger_split<T: Send>(
    file: File,
    display: &str,
    foreign: ForeignSeverity,
    progress: &mut dyn Progress,
    extract: &Extract<'_, T>,
    fold: &mut dyn FnMut(u64, &Value, T),
) -> Result<Scanned, Box<Finding>> {
    let mut reader = CountingReader::new(BufReader::with_capacity(256 * 1024, file), progress);
    let chain = verify_chain_split(&mut reader, foreign, extract, fold).map_err(|e| {
        Box::new(
            Finding::new(
                Code::IoError,
                Some(display),
                format!("could not read the ledger `{display}`: {e}"),
            )
            .with_detail(json!({"os": e.to_string()})),
        )
    })?;
    let findings = chain
        .findings
        .iter()
        .map(|cf| {
            let mut f = cf.finding.clone();
            f.path = Some(display.to_owned());
            f
        })
        .collect();
    Ok(Scanned { chain, findings })
}

/// `kind` of an entry (`event` in Ultragoal-style ledgers).
pub(crate) fn entry_kind(entry: &Value) -> Option<&str> {
    entry
        .get("kind")
        .or_else(|| entry.get("event"))
        .and_then(Value::as_str)
}
