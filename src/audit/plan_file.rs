//! Reading `goals.json` for the audit through the sandbox, decoded and
//! validated by the goal engine's own plan reader (docs/state-formats.md#ge-2).

use cap_std::fs::Dir;
use serde_json::json;

use super::layout::ProfileLayout;
use super::scan::{Opened, open_state_file};
use crate::evidence::verify::problem_finding;
use crate::evidence::{Code, Finding};
use crate::goals::plan::Plan;
use crate::goals::{ErrorKind, StatePaths};
use crate::sandbox::open::{self, FileChecks};

/// Reads and decodes `goals.json` of the state directory `display` (the
/// profile's state directory or a session below it); `Ok(None)` when there
/// is none.
pub(crate) fn read(
    dir: &Dir,
    display: &str,
    layout: &ProfileLayout,
) -> Result<Option<Plan>, Box<Finding>> {
    let goals = format!("{display}/goals.json");
    let (mut file, size) = match open_state_file(dir, "goals.json", &goals) {
        Opened::Absent => return Ok(None),
        Opened::Problem(f) => return Err(Box::new(f)),
        Opened::File(f, size) => (f, size),
    };
    let corrupt = |pointer: &str, problem: String| {
        Box::new(
            Finding::new(
                Code::PlanCorrupt,
                Some(&goals),
                if pointer.is_empty() {
                    problem.clone()
                } else {
                    format!("{pointer}: {problem}")
                },
            )
            .with_detail(json!({"pointer": pointer, "problem": problem})),
        )
    };
    let max = layout.profile.limits.max_plan_bytes;
    if size > max {
        return Err(corrupt(
            "",
            format!("the plan is {size} bytes; the limit is {max}"),
        ));
    }
    let checks = FileChecks {
        reject_hard_links: false,
        max_bytes: max,
        reject_empty: false,
    };
    let meta = file.metadata().map_err(|e| {
        Box::new(Finding::new(
            Code::IoError,
            Some(&goals),
            format!("cannot read `{goals}`: {e}"),
        ))
    })?;
    let mut bytes = Vec::new();
    open::hash_handle(&mut file, &meta, &checks, None, max as usize, &mut bytes).map_err(|p| {
        let (code, why) = problem_finding(&p);
        Box::new(Finding::new(
            code,
            Some(&goals),
            format!("`{goals}`: {why}"),
        ))
    })?;
    let sid = display
        .strip_prefix(layout.state_dir.as_str())
        .and_then(|r| r.strip_prefix('/'));
    let paths = StatePaths::new(layout.state_dir.as_str(), sid);
    let now = crate::time::rfc3339_ms(std::time::SystemTime::now());
    Plan::decode(&bytes, &paths, &layout.profile, &now)
        .map(Some)
        .map_err(|e| match *e.kind {
            ErrorKind::PlanCorrupt {
                pointer, problem, ..
            } => corrupt(&pointer, problem),
            ErrorKind::PlanInvalid {
                field: Some((f, expected, actual)),
                ..
            } => corrupt(
                &format!("/{f}"),
                format!("must be {expected}, found {actual}"),
            ),
            _ => corrupt("", e.message),
        })
}
