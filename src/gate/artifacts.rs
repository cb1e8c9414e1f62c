//! Declared artifacts (`manualQa.artifactRefs`, the ultragoal
//! `artifactRefs`) and the rows that reference them by id.

use serde_json::{Map, Value, json};

use super::check::{Checker, at, shown};
use super::outcome::{FileRole, GateFinding};
use crate::evidence::Code;
use crate::rules::gates::CommonRules;

/// The artifacts a gate declares: id → kind (when the kind is supported).
pub(super) struct ArtifactIndex {
    entries: Vec<(String, Option<String>)>,
    /// False when the list itself is missing or malformed: references to
    /// it are then not judged (their input is missing, docs/gates.md#qg-7).
    declared: bool,
}

impl ArtifactIndex {
    /// `Some(kind)` for a declared id.
    pub(super) fn kind_of(&self, id: &str) -> Option<Option<&str>> {
        self.entries
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, k)| k.as_deref())
    }
}

/// Step 4 (and the ultragoal `artifactRefs`): per element path, id, kind,
/// description; then duplicate ids.
pub(super) fn artifact_list(
    ck: &mut Checker<'_>,
    common: &CommonRules,
    items: &[Value],
    list_field: &str,
) -> ArtifactIndex {
    let mut entries: Vec<(String, Option<String>)> = Vec::new();
    for (i, v) in items.iter().enumerate() {
        let field = format!("{list_field}[{i}]");
        let Some(obj) = ck.element(v, &field) else {
            continue;
        };
        if let Some(p) = ck.text(obj, &field, "path") {
            ck.path(p, &at(&field, "path"), FileRole::GateArtifact);
        }
        let id = ck.text(obj, &field, "id");
        let mut kind = ck.text(obj, &field, "kind");
        if let Some(k) = kind
            && !common.artifact_kinds.iter().any(|a| a == k)
        {
            let kf = at(&field, "kind");
            ck.push(
                GateFinding::new(
                    Code::GateArtifactKindUnsupported,
                    &kf,
                    format!("{kf} must be a supported artifact kind."),
                )
                .with_details(json!({"field": kf, "actual": k, "expected": common.artifact_kinds})),
            );
            kind = None;
        }
        ck.text(obj, &field, "description");
        if let Some(id) = id {
            entries.push((id.to_owned(), kind.map(str::to_owned)));
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut reported: Vec<&str> = Vec::new();
    for (id, _) in &entries {
        if seen.contains(&id.as_str()) {
            if !reported.contains(&id.as_str()) {
                reported.push(id);
                ck.push(
                    GateFinding::new(
                        Code::GateArtifactIdDuplicate,
                        list_field,
                        format!("{list_field} contains duplicate {}.", shown(id)),
                    )
                    .with_details(json!({"field": list_field, "id": id})),
                );
            }
        } else {
            seen.push(id);
        }
    }
    let mut unique = Vec::new();
    for (id, kind) in entries {
        if !unique
            .iter()
            .any(|(u, _): &(String, Option<String>)| *u == id)
        {
            unique.push((id, kind));
        }
    }
    ArtifactIndex {
        entries: unique,
        declared: true,
    }
}

/// `manualQa.artifactRefs` (step 4).
pub(super) fn artifact_refs(
    ck: &mut Checker<'_>,
    common: &CommonRules,
    mqa: &Map<String, Value>,
) -> ArtifactIndex {
    match ck.array(mqa, "manualQa", "artifactRefs") {
        Some(items) => artifact_list(ck, common, items, "manualQa.artifactRefs"),
        None => ArtifactIndex {
            entries: Vec::new(),
            declared: false,
        },
    }
}

/// Checks a row's `artifactRefs` ids; returns the kinds of known ones.
pub(super) fn row_refs(
    ck: &mut Checker<'_>,
    obj: &Map<String, Value>,
    field: &str,
    artifacts: &ArtifactIndex,
    required: bool,
) -> Vec<(usize, Option<String>)> {
    let mut out = Vec::new();
    for (j, id) in ck
        .text_array(obj, field, "artifactRefs", required)
        .unwrap_or_default()
    {
        match artifacts.kind_of(id) {
            Some(kind) => out.push((j, kind.map(str::to_owned))),
            None if !artifacts.declared => {}
            None => {
                let rf = format!("{field}.artifactRefs[{j}]");
                ck.push(
                    GateFinding::new(
                        Code::GateArtifactRefUnknown,
                        &rf,
                        format!(
                            "{field}.artifactRefs references unknown artifact {}.",
                            shown(id)
                        ),
                    )
                    .with_details(json!({"field": rf, "id": id})),
                );
            }
        }
    }
    out
}
