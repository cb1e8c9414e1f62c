//! Evidence payload v1 (docs/verify.md#ev-1): strict parsing into typed values.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use super::code::Code;
use super::report::Finding;

/// An evidence payload: what an agent claims to have produced and how it was
/// verified. Unknown fields and duplicate keys are errors.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "evidence payload v1")]
pub struct Payload {
    /// Schema version and discriminator; must be `1`.
    #[schemars(range(min = 1, max = 1))]
    pub evidence: u64,
    /// What was done, in 1–4000 characters; not a placeholder.
    #[schemars(extend("minLength" = 1, "pattern" = crate::text::visible_pattern()))]
    pub summary: String,
    /// Goal the evidence is for (checked against the plan in plan context).
    #[serde(default)]
    pub goal_id: Option<String>,
    /// Criteria the evidence is for (checked against the goal in plan context).
    #[serde(default)]
    pub criterion_ids: Option<Vec<String>>,
    /// Binding to the producing agent; hooks compare each declared value.
    #[serde(default)]
    pub agent: Option<AgentBinding>,
    /// At least one deliverable.
    #[schemars(length(min = 1))]
    pub deliverables: Vec<Deliverable>,
    /// Supporting artifacts under the evidence root.
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// The verdict and how it was reached.
    pub verification: Verification,
}

/// Identifiers of the agent that produced the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentBinding {
    /// Agent type (for example `lazycodex-worker-high`).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Agent id.
    #[serde(default)]
    pub id: Option<String>,
    /// Session id.
    #[serde(default)]
    pub session: Option<String>,
    /// Turn id.
    #[serde(default)]
    pub turn: Option<String>,
}

/// One deliverable: a single file (optionally with its digest) or a glob.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
#[serde(untagged)]
pub enum Deliverable {
    /// `{path, sha256?}`.
    File(FileDeliverable),
    /// `{glob, min?, max?}`.
    Glob(GlobDeliverable),
}

/// A single-file deliverable.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileDeliverable {
    /// Repo-relative path.
    pub path: String,
    /// Expected lowercase hex SHA-256.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: Option<String>,
}

/// A glob deliverable.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobDeliverable {
    /// Pattern relative to the root (`*` never crosses `/`).
    pub glob: String,
    /// Minimum matches (default 1; must be ≥ 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub min: Option<u64>,
    /// Maximum matches (default unlimited; not below `min`).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max: Option<u64>,
}

impl<'de> Deserialize<'de> for Deliverable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let Value::Object(map) = &value else {
            return Err(D::Error::custom("a deliverable must be an object"));
        };
        match (map.contains_key("path"), map.contains_key("glob")) {
            (true, true) => Err(D::Error::custom(
                "a deliverable has either `path` or `glob`, not both",
            )),
            (true, false) => FileDeliverable::deserialize(value)
                .map(Deliverable::File)
                .map_err(D::Error::custom),
            (false, true) => GlobDeliverable::deserialize(value)
                .map(Deliverable::Glob)
                .map_err(D::Error::custom),
            (false, false) => Err(D::Error::custom("a deliverable needs `path` or `glob`")),
        }
    }
}

/// A supporting artifact.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// Unique id referenced by checks.
    pub id: String,
    /// One of the rules' `artifactKinds`.
    pub kind: String,
    /// Repo-relative path under the evidence root.
    pub path: String,
}

/// The verdict and the checks behind it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Verification {
    /// `passed`, `failed` or `blocked`.
    pub verdict: ClaimedVerdict,
    /// Who verified (an agent role or a person).
    #[schemars(extend("pattern" = crate::text::visible_pattern()))]
    pub by: String,
    /// Commands run and their exit codes.
    #[serde(default)]
    pub checks: Vec<Check>,
}

/// The verdict the payload claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClaimedVerdict {
    /// Verified and passing.
    Passed,
    /// Verified and failing.
    Failed,
    /// Could not be verified.
    Blocked,
}

impl ClaimedVerdict {
    /// The lowercase wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Blocked => "blocked",
        }
    }
}

/// One verification command.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Check {
    /// The command line.
    #[schemars(extend("pattern" = crate::text::visible_pattern()))]
    pub command: String,
    /// Its exit code.
    pub exit_code: i64,
    /// Id of the artifact holding its output.
    #[serde(default)]
    pub artifact: Option<String>,
}

/// The JSON Schema of [`Payload`], generated from the types.
pub fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Payload)).expect("schemas serialise")
}

/// Parses payload bytes strictly: size cap, UTF-8, JSON without duplicate
/// keys, then the typed shape with unknown fields rejected.
pub fn parse(bytes: &[u8], max_bytes: u64) -> Result<Payload, Box<Finding>> {
    if bytes.len() as u64 > max_bytes {
        return Err(Box::new(
            Finding::new(
                Code::EvidenceParseError,
                None,
                format!(
                    "the payload is {} bytes; the limit is {max_bytes}",
                    bytes.len()
                ),
            )
            .with_detail(json!({"size": bytes.len(), "max": max_bytes})),
        ));
    }
    let value = crate::json::parse_strict(bytes).map_err(|e| {
        Box::new(
            Finding::new(
                Code::EvidenceParseError,
                None,
                format!("the payload is not valid JSON: {e}"),
            )
            .with_detail(json!({"line": e.line, "column": e.column})),
        )
    })?;
    from_value(value)
}

/// Converts an already strictly parsed value into a payload.
pub fn from_value(value: Value) -> Result<Payload, Box<Finding>> {
    if !value.is_object() {
        return Err(Box::new(Finding::new(
            Code::EvidenceSchemaInvalid,
            None,
            "the payload must be a JSON object",
        )));
    }
    let payload: Payload = serde_path_to_error::deserialize(value).map_err(|e| {
        let at = e.path().to_string();
        let msg = e.into_inner().to_string();
        let message = if at == "." {
            msg
        } else {
            format!("{at}: {msg}")
        };
        Box::new(
            Finding::new(Code::EvidenceSchemaInvalid, None, message).with_detail(json!({"at": at})),
        )
    })?;
    if payload.evidence != 1 {
        return Err(Box::new(Finding::new(
            Code::EvidenceSchemaInvalid,
            None,
            format!(
                "evidence: unsupported payload version {}; expected 1",
                payload.evidence
            ),
        )));
    }
    Ok(payload)
}

/// True when a JSON document identifies itself as an evidence payload (an
/// object with `"evidence": 1`), the discriminator hooks and CI use.
pub fn is_payload_document(value: &Value) -> bool {
    value.get("evidence").and_then(Value::as_u64) == Some(1)
}
