//! The plan as `status` reads it (docs/state-formats.md#status-view): the
//! plan body with each criterion cut down to the members `status` and the
//! plan's field rules read, kept next to the plan as `.goals.status` so that
//! `status` on a large plan decodes a fraction of it.
//!
//! **Binding.** The file's SHA-256 is recorded in the Stop view's bound line
//! (`statusSha256`, next to `planSha256`), which the ledger's newest records
//! vouch for ([`super::read_bound`]). `status` trusts the file only when
//! that chain holds, its digest is the recorded one, and the plan file's
//! bytes with `lastMutation` cut out hash to the vouched body digest: the
//! plan file is then exactly the body this file was cut from plus the
//! `lastMutation` read from the file ([`crate::goals::plan::Plan::from_status_view`]).
//!
//! **What is cut.** Of each criterion only `id`, `status`, `userModel` and
//! `essential` stay ([`super::CRITERIA_READ`]), with `seeded: true` where the
//! criterion is seeded under the writer's seeded markers (recorded in the
//! file: a reader with other markers reads the plan). Every other member of
//! the plan and of each goal is kept as written. Any doubt — the file
//! missing, torn, oversized, of another version, not the recorded one — is
//! not a verdict: `status` reads the plan.

use cap_std::fs::Dir;
use serde::Deserialize;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use crate::goals::plan::{Criterion, Plan};
use crate::goals::state::{self, ReadOutcome, StatePaths};

/// The file in the state directory.
pub(crate) const FILE: &str = crate::goals::plan::STATUS_FILE;
/// The format version (a file of another version is not trusted).
const VERSION: u32 = 1;

/// The first (only) line of the file.
struct Line<'a> {
    markers: &'a [String],
    plan: &'a Map<String, Value>,
}

impl Serialize for Line<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("v", &VERSION)?;
        m.serialize_entry("seededMarkers", self.markers)?;
        m.serialize_entry(
            "plan",
            &Body {
                doc: self.plan,
                markers: self.markers,
            },
        )?;
        m.end()
    }
}

/// The plan body (no `lastMutation`) with its goals cut down.
struct Body<'a> {
    doc: &'a Map<String, Value>,
    markers: &'a [String],
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (k, v) in self.doc {
            match (k.as_str(), v) {
                ("lastMutation", _) => {}
                (key, Value::Array(goals)) if key == super::CRITERIA_READ.key => {
                    m.serialize_entry(k, &Each(goals, self.markers, goal))?;
                }
                _ => m.serialize_entry(k, v)?,
            }
        }
        m.end()
    }
}

/// Each of a list, serialised by `f`.
struct Each<'a>(
    &'a [Value],
    &'a [String],
    fn(&'a Value, &'a [String]) -> Reduced<'a>,
);

/// One element of a cut-down list.
enum Reduced<'a> {
    /// Kept as written (not an object: the field rules refuse it anyway).
    Whole(&'a Value),
    /// A goal with its criteria cut down.
    Goal(&'a Map<String, Value>, &'a [String]),
    /// A criterion cut down.
    Criterion(&'a Map<String, Value>, bool),
}

impl Serialize for Each<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for v in self.0 {
            seq.serialize_element(&(self.2)(v, self.1))?;
        }
        seq.end()
    }
}

fn goal<'a>(v: &'a Value, markers: &'a [String]) -> Reduced<'a> {
    match v {
        Value::Object(g) => Reduced::Goal(g, markers),
        _ => Reduced::Whole(v),
    }
}

fn criterion<'a>(v: &'a Value, markers: &'a [String]) -> Reduced<'a> {
    match v {
        Value::Object(c) => Reduced::Criterion(c, Criterion(c).seeded(markers)),
        _ => Reduced::Whole(v),
    }
}

impl Serialize for Reduced<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Reduced::Whole(v) => v.serialize(s),
            Reduced::Goal(g, markers) => {
                let mut m = s.serialize_map(None)?;
                for (k, v) in *g {
                    match v {
                        Value::Array(list) if k == super::CRITERIA_READ.list => {
                            m.serialize_entry(k, &Each(list, markers, criterion))?;
                        }
                        _ => m.serialize_entry(k, v)?,
                    }
                }
                m.end()
            }
            Reduced::Criterion(c, seeded) => {
                let mut m = s.serialize_map(None)?;
                for (k, v) in *c {
                    if super::CRITERIA_READ.keep.contains(&k.as_str()) {
                        m.serialize_entry(k, v)?;
                    }
                }
                if *seeded {
                    m.serialize_entry("seeded", &true)?;
                }
                m.end()
            }
        }
    }
}

/// The file's line for `plan` under the seeded markers `markers` (without
/// its final newline).
pub(crate) fn line(plan: &Plan, markers: &[String]) -> Vec<u8> {
    // About 500 bytes a goal of three criteria.
    let mut out = Vec::with_capacity(256 + 512 * plan.goal_count());
    serde_json::to_writer(
        &mut out,
        &Line {
            markers,
            plan: plan.doc(),
        },
    )
    .expect("JSON values serialise");
    out
}

/// One goal (a plan's element) as the file holds it: cut down under
/// `markers`, serialised.
pub(crate) fn cut_goal(goal: &Value, markers: &[String]) -> Vec<u8> {
    serde_json::to_vec(&self::goal(goal, markers)).expect("JSON values serialise")
}

/// What a reader decodes.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Read {
    v: u32,
    seeded_markers: Vec<String>,
    plan: Map<String, Value>,
}

/// The cut-down plan body in `dir`, when the file's line hashes to `sha256`
/// and was cut under the seeded markers `markers`; `None` otherwise. At
/// most `max` bytes are read.
pub(crate) fn read(
    dir: &Dir,
    paths: &StatePaths,
    sha256: &str,
    markers: &[String],
    max: u64,
) -> Option<Map<String, Value>> {
    let bytes = match state::read_file(dir, FILE, &paths.file(FILE), max).ok()?? {
        ReadOutcome::Bytes(b) => b,
        ReadOutcome::TooLarge { .. } => return None,
    };
    let line = bytes.strip_suffix(b"\n")?;
    if crate::digest::sha256_hex(line) != sha256 {
        return None;
    }
    let read: Read = serde_json::from_slice(line).ok()?;
    (read.v == VERSION && read.seeded_markers == markers).then_some(read.plan)
}
