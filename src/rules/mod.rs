//! Policy as data: the JSON rule files under `rules/`, embedded at build time,
//! merged with the repository override (`.evidence-gate/rules.json`) and
//! `--rules FILE`, and validated family by family.
//!
//! The loader knows nothing about any family's content. A family is a
//! top-level key of the merged document with a typed Rust shape
//! ([`RuleFamily`]); adding one means adding its file to [`EMBEDDED`] and its
//! validator to [`FAMILIES`], never changing the loader.

mod direct;
pub(crate) mod direction;
pub mod evidence;
pub mod gates;
pub(crate) mod goal_loop;
pub(crate) mod hooks;
pub mod profiles;
pub(crate) mod schema;
pub mod workflow;

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::digest::sha256_hex;
use crate::json::{self, deep_merge, pointer_token};

/// A validation problem inside one family, located by a JSON pointer relative
/// to the family's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// JSON pointer relative to the family object.
    pub pointer: String,
    /// What is wrong.
    pub problem: String,
}

impl Problem {
    /// A problem at `pointer`.
    pub fn at(pointer: impl Into<String>, problem: impl Into<String>) -> Problem {
        Problem {
            pointer: pointer.into(),
            problem: problem.into(),
        }
    }
}

/// A rule family: the typed shape of one top-level key of the rules document.
pub trait RuleFamily: DeserializeOwned {
    /// Top-level key in the rules document (and in override files).
    const KEY: &'static str;
    /// Checks beyond the types (ranges, globs that compile, regexes).
    fn check(&self) -> Result<(), Problem> {
        Ok(())
    }
}

/// Why the rules could not be loaded (`RULES_INVALID`, exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesError {
    /// The file that introduced the problem.
    pub file: String,
    /// JSON pointer into the merged rules document.
    pub pointer: String,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "{}: {}", self.file, self.problem)
        } else {
            write!(f, "{}: {}: {}", self.file, self.pointer, self.problem)
        }
    }
}

impl std::error::Error for RulesError {}

/// How an embedded file is mounted into the rules document.
#[derive(Debug, Clone, Copy)]
pub enum Content {
    /// A JSON document.
    Json(&'static str),
    /// A text template, mounted as a JSON string.
    Text(&'static str),
}

/// One embedded rules file.
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    /// Path in the source tree (used in error messages).
    pub file: &'static str,
    /// JSON pointer where the content is mounted (`""` merges at the top).
    pub mount: &'static str,
    /// The content.
    pub content: Content,
}

/// Every embedded rules file.
pub static EMBEDDED: &[Embedded] = &[
    Embedded {
        file: "rules/evidence.json",
        mount: "/evidence",
        content: Content::Json(include_str!("../../rules/evidence.json")),
    },
    // docs/gates.md#qg-2: one row per gate rule file, mounted under `gates`.
    Embedded {
        file: "rules/gates/common.json",
        mount: "/gates/common",
        content: Content::Json(include_str!("../../rules/gates/common.json")),
    },
    Embedded {
        file: "rules/gates/lazycodex.json",
        mount: "/gates/lazycodex",
        content: Content::Json(include_str!("../../rules/gates/lazycodex.json")),
    },
    Embedded {
        file: "rules/gates/omo-senpi.json",
        mount: "/gates/omo-senpi",
        content: Content::Json(include_str!("../../rules/gates/omo-senpi.json")),
    },
    Embedded {
        file: "rules/gates/ultragoal.json",
        mount: "/gates/ultragoal",
        content: Content::Json(include_str!("../../rules/gates/ultragoal.json")),
    },
    Embedded {
        file: "rules/gates/omx-strict.json",
        mount: "/gates/omx-strict",
        content: Content::Json(include_str!("../../rules/gates/omx-strict.json")),
    },
    Embedded {
        file: "rules/gate.json",
        mount: "/gate",
        content: Content::Json(include_str!("../../rules/gate.json")),
    },
    // Hook policy (docs/hook-contracts.md#h-1): families `hooks` and `subagent_stop`.
    Embedded {
        file: "rules/hooks.json",
        mount: "",
        content: Content::Json(include_str!("../../rules/hooks.json")),
    },
    Embedded {
        file: "rules/directives/subagent-stop.md",
        mount: "/directives/subagent-stop",
        content: Content::Text(include_str!("../../rules/directives/subagent-stop.md")),
    },
    // Goal-loop hook directives (docs/hook-contracts.md#h-4, docs/hook-contracts.md#h-5, docs/hook-contracts.md#h-6).
    Embedded {
        file: "rules/directives/stop-resume.md",
        mount: "/directives/stop-resume",
        content: Content::Text(include_str!("../../rules/directives/stop-resume.md")),
    },
    Embedded {
        file: "rules/directives/stop-resume-ultragoal.md",
        mount: "/directives/stop-resume-ultragoal",
        content: Content::Text(include_str!(
            "../../rules/directives/stop-resume-ultragoal.md"
        )),
    },
    Embedded {
        file: "rules/directives/ultrawork.md",
        mount: "/directives/ultrawork",
        content: Content::Text(include_str!("../../rules/directives/ultrawork.md")),
    },
    Embedded {
        file: "rules/directives/ultrawork-pointer.md",
        mount: "/directives/ultrawork-pointer",
        content: Content::Text(include_str!("../../rules/directives/ultrawork-pointer.md")),
    },
    Embedded {
        file: "rules/directives/create-goal-deny.md",
        mount: "/directives/create-goal-deny",
        content: Content::Text(include_str!("../../rules/directives/create-goal-deny.md")),
    },
    // Goal engine: profiles, their texts, the blocker classifier (docs/engine.md#ge-1).
    Embedded {
        file: "rules/profiles/ulw-loop.json",
        mount: "/profiles/ulw-loop",
        content: Content::Json(include_str!("../../rules/profiles/ulw-loop.json")),
    },
    Embedded {
        file: "rules/profiles/ultragoal.json",
        mount: "/profiles/ultragoal",
        content: Content::Json(include_str!("../../rules/profiles/ultragoal.json")),
    },
    Embedded {
        file: "rules/profiles/omx.json",
        mount: "/profiles/omx",
        content: Content::Json(include_str!("../../rules/profiles/omx.json")),
    },
    Embedded {
        file: "rules/texts/ulw-loop.json",
        mount: "/texts/ulw-loop",
        content: Content::Json(include_str!("../../rules/texts/ulw-loop.json")),
    },
    Embedded {
        file: "rules/texts/ultragoal.json",
        mount: "/texts/ultragoal",
        content: Content::Json(include_str!("../../rules/texts/ultragoal.json")),
    },
    Embedded {
        file: "rules/texts/omx.json",
        mount: "/texts/omx",
        content: Content::Json(include_str!("../../rules/texts/omx.json")),
    },
    Embedded {
        file: "rules/blockers.json",
        mount: "/blockers",
        content: Content::Json(include_str!("../../rules/blockers.json")),
    },
    // Workflow overlap rules (docs/engine.md#ge-9).
    Embedded {
        file: "rules/workflows.json",
        mount: "/workflows",
        content: Content::Json(include_str!("../../rules/workflows.json")),
    },
];

/// A family validator: parses the family's value into its type and checks it.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// Top-level key.
    pub key: &'static str,
    /// Validation function.
    pub validate: fn(&Value) -> Result<(), Problem>,
}

/// Every known family.
pub static FAMILIES: &[Family] = &[
    family::<evidence::EvidenceRules>(),
    // docs/gates.md#qg-2 (gate rule files) and docs/state-formats.md#ge-2 (`gate.surface`).
    family::<gates::GatesFamily>(),
    family::<gates::GateSettings>(),
    // Hook families (docs/hook-contracts.md#h-1, docs/hook-contracts.md#h-3).
    family::<hooks::HooksRules>(),
    family::<hooks::SubagentStopRules>(),
    family::<hooks::Directives>(),
    // Goal-loop hook families (docs/hook-contracts.md#h-4, docs/hook-contracts.md#h-6).
    family::<goal_loop::StopRules>(),
    family::<goal_loop::UserPromptSubmitRules>(),
    family::<goal_loop::CreateGoalGuardRules>(),
    family::<goal_loop::SpawnRules>(),
    family::<goal_loop::TeamGuardRules>(),
    // Goal engine (docs/engine.md#ge-1).
    family::<profiles::Profiles>(),
    family::<profiles::TextsFamily>(),
    family::<profiles::BlockerRules>(),
    // Workflow overlap (docs/engine.md#ge-9).
    family::<workflow::WorkflowRules>(),
];

/// The [`Family`] entry of a [`RuleFamily`] type.
pub const fn family<T: RuleFamily>() -> Family {
    Family {
        key: T::KEY,
        validate: validate_as::<T>,
    }
}

fn validate_as<T: RuleFamily>(value: &Value) -> Result<(), Problem> {
    let parsed: T = parse_family(value)?;
    parsed.check()
}

fn parse_family<T: DeserializeOwned>(value: &Value) -> Result<T, Problem> {
    // The plain decoder first (valid rules, every start); the path-tracking
    // one only to locate an error.
    if let Ok(parsed) = T::deserialize(value) {
        return Ok(parsed);
    }
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let pointer = path_to_pointer(e.path());
        Problem {
            pointer,
            problem: e.into_inner().to_string(),
        }
    })
}

fn path_to_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("/{index}")),
            Segment::Map { key } => {
                out.push('/');
                out.push_str(&pointer_token(key));
            }
            Segment::Enum { variant } => {
                out.push('/');
                out.push_str(&pointer_token(variant));
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// One override layer: a file name for messages and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Layer<'a> {
    /// Shown in errors (`.evidence-gate/rules.json`, the `--rules` path).
    pub name: &'a str,
    /// The file content.
    pub bytes: &'a [u8],
}

/// The merged, validated rules document.
#[derive(Debug, Clone)]
pub struct RuleSet {
    doc: Document,
    digest: OnceLock<String>,
    sources: Vec<String>,
    relaxations: Vec<direction::Relaxation>,
    decoded: PartCache,
}

/// Parts decoded by [`RuleSet::part_shared`], by pointer and type: a rule set
/// never changes once loaded, so one command decodes a part once however many
/// steps look it up (a goal-engine command looks its profile up four times).
#[derive(Default)]
struct PartCache(Mutex<Vec<CachedPart>>);

/// One decoded part: its pointer, its type and the value.
type CachedPart = (String, TypeId, Arc<dyn Any + Send + Sync>);

impl PartCache {
    fn get<T: Any + Send + Sync>(&self, pointer: &str) -> Option<Arc<T>> {
        let parts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        parts
            .iter()
            .find(|(p, t, _)| p == pointer && *t == TypeId::of::<T>())
            .and_then(|(_, _, v)| Arc::clone(v).downcast::<T>().ok())
    }

    fn put<T: Any + Send + Sync>(&self, pointer: &str, value: Arc<T>) {
        let mut parts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        parts.push((pointer.to_owned(), TypeId::of::<T>(), value));
    }
}

impl fmt::Debug for PartCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.lock().map(|p| p.len()).unwrap_or_default();
        write!(f, "PartCache({n} parts)")
    }
}

impl Clone for PartCache {
    /// A clone starts empty (it decodes again on first use).
    fn clone(&self) -> PartCache {
        PartCache::default()
    }
}

/// Where the families of a [`RuleSet`] come from.
#[derive(Debug, Clone)]
enum Document {
    /// The embedded defaults alone: each family is assembled from its
    /// embedded files on first use, so a command parses only the families it
    /// reads (a hook reads a few of fifteen). Their validation is the test
    /// suite's (`embedded_rules_validate`) and `doctor`'s.
    Embedded(Box<[OnceLock<Value>]>),
    /// After an override layer: the whole merged document, validated with it.
    Merged(Value),
}

impl Document {
    fn embedded() -> Document {
        Document::Embedded(FAMILIES.iter().map(|_| OnceLock::new()).collect())
    }
}

/// Parses one embedded file.
fn embedded_value(e: &Embedded) -> Result<Value, RulesError> {
    match e.content {
        Content::Json(text) => json::parse_strict_str(text).map_err(|err| RulesError {
            file: e.file.into(),
            pointer: String::new(),
            problem: err.to_string(),
        }),
        Content::Text(text) => Ok(Value::String(text.to_owned())),
    }
}

/// The embedded value of the top-level family `key`, mounted exactly as the
/// whole document mounts it (same files, same order): `Null` when no
/// embedded file provides it.
fn embedded_family_value(key: &str) -> Result<Value, RulesError> {
    let mut doc = Value::Object(Default::default());
    let quoted = format!("\"{key}\"");
    for e in EMBEDDED {
        if e.mount.is_empty() {
            // A file merged at the top provides the family only if it names
            // it: the others are not parsed (the embedded files spell every
            // key literally, as `sole_file_at` relies on too).
            if matches!(e.content, Content::Json(text) if !text.contains(&quoted)) {
                continue;
            }
            let whole = embedded_value(e)?;
            if let Some(part) = whole.get(key) {
                let mut only = serde_json::Map::new();
                only.insert(key.to_owned(), part.clone());
                mount(&mut doc, "", Value::Object(only));
            }
        } else if e.mount[1..].split('/').next() == Some(key) {
            mount(&mut doc, e.mount, embedded_value(e)?);
        }
    }
    Ok(doc
        .as_object_mut()
        .and_then(|m| m.remove(key))
        .unwrap_or(Value::Null))
}

/// The embedded file mounted exactly at `pointer`, when it alone provides
/// the value there: no other file mounts at, above or below it, and no file
/// merged at the top provides its family.
fn sole_file_at(pointer: &str) -> Option<&'static Embedded> {
    let key = pointer.get(1..)?.split('/').next()?;
    let quoted = format!("\"{key}\"");
    let mut found = None;
    for e in EMBEDDED {
        if e.mount.is_empty() {
            if let Content::Json(text) = e.content
                && text.contains(&quoted)
            {
                return None;
            }
            continue;
        }
        let related =
            e.mount == pointer || is_below(pointer, e.mount) || is_below(e.mount, pointer);
        if related {
            if e.mount != pointer || found.is_some() {
                return None;
            }
            found = Some(e);
        }
    }
    found
}

/// Whether the JSON pointer `path` lies strictly below `dir` (`/a/b` below
/// `/a`, not `/ab`).
pub(super) fn is_below(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// The whole embedded document (every file mounted).
fn embedded_document() -> Result<Value, RulesError> {
    let mut merged = Value::Object(Default::default());
    for e in EMBEDDED {
        mount(&mut merged, e.mount, embedded_value(e)?);
    }
    Ok(merged)
}

impl RuleSet {
    /// The embedded defaults alone.
    pub fn embedded() -> Result<RuleSet, RulesError> {
        RuleSet::load(&[])
    }

    /// Embedded defaults, then each layer in order, each applied in full
    /// (trusted layers: the user's configuration, `--rules FILE`). Every
    /// layer must be a JSON object whose keys are known families; the merged
    /// result must validate.
    pub fn load(layers: &[Layer<'_>]) -> Result<RuleSet, RulesError> {
        RuleSet::load_tightened(layers, None)
    }

    /// Embedded defaults, then the trusted `layers` in full, then the
    /// repository override `repo` tighten-only (docs/threat-model.md#i9): its
    /// values that do not tighten are ignored and listed in
    /// [`RuleSet::relaxations`].
    pub fn load_tightened(
        layers: &[Layer<'_>],
        repo: Option<Layer<'_>>,
    ) -> Result<RuleSet, RulesError> {
        let mut sources = vec!["embedded".to_owned()];
        if layers.is_empty() && repo.is_none() {
            // The embedded defaults alone are neither parsed as a whole nor
            // re-validated on every start (`RuleSet::validate`, run by the
            // test suite and `doctor`, does it): a hook call must stay a
            // process start plus a few reads.
            return Ok(RuleSet {
                doc: Document::embedded(),
                digest: OnceLock::new(),
                sources,
                relaxations: Vec::new(),
                decoded: PartCache::default(),
            });
        }
        // Every override layer is validated together with what it merges into.
        let mut merged = embedded_document()?;
        for layer in layers {
            let overlay = parse_layer(layer)?;
            deep_merge(&mut merged, &overlay);
            validate_all(&merged, &|_| layer.name.to_owned())?;
            sources.push(layer.name.to_owned());
        }
        let mut relaxations = Vec::new();
        if let Some(layer) = repo {
            let overlay = parse_layer(&layer)?;
            relaxations = direction::apply_tightening(&mut merged, &overlay);
            validate_all(&merged, &|_| layer.name.to_owned())?;
            sources.push(format!("{} (tighten-only)", layer.name));
        }
        Ok(RuleSet {
            doc: Document::Merged(merged),
            digest: OnceLock::new(),
            sources,
            relaxations,
            decoded: PartCache::default(),
        })
    }

    /// The value of the top-level family `key` (`None` when the document has
    /// no such key).
    fn top(&self, key: &str) -> Result<Option<&Value>, RulesError> {
        match &self.doc {
            Document::Merged(merged) => Ok(merged.get(key)),
            Document::Embedded(slots) => {
                let Some(i) = FAMILIES.iter().position(|f| f.key == key) else {
                    return Ok(None);
                };
                if slots[i].get().is_none() {
                    let value = embedded_family_value(key)?;
                    let _ = slots[i].set(value);
                }
                Ok(slots[i].get().filter(|v| !v.is_null()))
            }
        }
    }

    /// The whole merged document.
    fn whole(&self) -> Result<std::borrow::Cow<'_, Value>, RulesError> {
        match &self.doc {
            Document::Merged(merged) => Ok(std::borrow::Cow::Borrowed(merged)),
            Document::Embedded(_) => Ok(std::borrow::Cow::Owned(embedded_document()?)),
        }
    }

    /// Whether these are the embedded defaults alone (no override layer).
    pub fn is_embedded_only(&self) -> bool {
        matches!(self.doc, Document::Embedded(_))
    }

    /// Repository values that were ignored because they do not tighten
    /// (`RULES_RELAXATION_IGNORED`).
    pub fn relaxations(&self) -> &[direction::Relaxation] {
        &self.relaxations
    }

    /// The merged document.
    #[cfg(test)]
    pub(crate) fn merged(&self) -> Value {
        self.whole().expect("embedded rules parse").into_owned()
    }

    /// Validates every family of the merged document (the embedded defaults
    /// included), as `load` does for each override layer.
    pub fn validate(&self) -> Result<(), RulesError> {
        let blame_embedded = self.sources.len() == 1;
        let merged = self.whole()?;
        validate_all(&merged, &|p| {
            if blame_embedded {
                embedded_file_for(p)
            } else {
                "rules".to_owned()
            }
        })
        .map_err(|mut err| {
            if blame_embedded {
                err.file = embedded_file_for(&err.pointer);
            }
            err
        })
    }

    /// The typed value of one family.
    pub fn family<T: RuleFamily>(&self) -> Result<T, RulesError> {
        // The embedded defaults alone: decoded from the files' text when no
        // merge is needed (the tree path below locates any error).
        if let Document::Embedded(slots) = &self.doc
            && let Some(i) = FAMILIES.iter().position(|f| f.key == T::KEY)
            && slots[i].get().is_none()
            && let Some(parsed) = direct::source(T::KEY).and_then(|s| s.decode::<T>())
        {
            return Ok(parsed);
        }
        let value = self.top(T::KEY)?.unwrap_or(&Value::Null);
        parse_family(value).map_err(|p| RulesError {
            file: embedded_file_for(&format!("/{}", T::KEY)),
            pointer: format!("/{}{}", T::KEY, p.pointer),
            problem: p.problem,
        })
    }

    /// The typed value at `pointer` inside a family (`/texts/ulw-loop`),
    /// `None` when absent. With the embedded defaults alone, a pointer that
    /// is exactly one embedded file's mount point (and no other file mounts
    /// above or below it) is read from that file only, so an engine command
    /// parses one profile's texts, not every profile's.
    pub fn part<T: DeserializeOwned>(&self, pointer: &str) -> Result<Option<T>, RulesError> {
        let located = |p: Problem| RulesError {
            file: embedded_file_for(pointer),
            pointer: format!("{pointer}{}", p.pointer),
            problem: p.problem,
        };
        if let Document::Embedded(slots) = &self.doc
            && let Some(key) = pointer[1.min(pointer.len())..].split('/').next()
            && let Some(i) = FAMILIES.iter().position(|f| f.key == key)
            && slots[i].get().is_none()
            && let Some(file) = sole_file_at(pointer)
        {
            if let Content::Json(text) = file.content
                && let Ok(parsed) = serde_json::from_str::<T>(text)
            {
                return Ok(Some(parsed));
            }
            let value = embedded_value(file)?;
            return parse_family(&value).map(Some).map_err(located);
        }
        match self.pointer(pointer) {
            Some(value) => parse_family(value).map(Some).map_err(located),
            None => Ok(None),
        }
    }

    /// [`RuleSet::part`], decoded once per rule set: later calls with the
    /// same pointer and type share the first decoding. Errors are not kept
    /// (each call reports its own).
    pub fn part_shared<T: DeserializeOwned + Any + Send + Sync>(
        &self,
        pointer: &str,
    ) -> Result<Option<Arc<T>>, RulesError> {
        if let Some(hit) = self.decoded.get::<T>(pointer) {
            return Ok(Some(hit));
        }
        let Some(value) = self.part::<T>(pointer)? else {
            return Ok(None);
        };
        let value = Arc::new(value);
        self.decoded.put(pointer, Arc::clone(&value));
        Ok(Some(value))
    }

    /// A raw value by JSON pointer (for text templates and data lookups).
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        let rest = pointer.strip_prefix('/')?;
        let (key, below) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let key = key.replace("~1", "/").replace("~0", "~");
        self.top(&key).ok().flatten()?.pointer(below)
    }

    /// `sha256:<hex>` of the canonical merged document (computed on first use).
    pub fn digest(&self) -> &str {
        self.digest.get_or_init(|| {
            let merged = self.whole().map(std::borrow::Cow::into_owned);
            let merged = merged.unwrap_or(Value::Null);
            format!("sha256:{}", sha256_hex(json::canonical(&merged).as_bytes()))
        })
    }

    /// Names of the layers applied, embedded first.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }
}

fn parse_layer(layer: &Layer<'_>) -> Result<Value, RulesError> {
    let overlay = json::parse_strict(layer.bytes).map_err(|err| RulesError {
        file: layer.name.into(),
        pointer: String::new(),
        problem: format!("not valid JSON: {err}"),
    })?;
    let Value::Object(map) = &overlay else {
        return Err(RulesError {
            file: layer.name.into(),
            pointer: String::new(),
            problem: "must be a JSON object with one key per rule family".into(),
        });
    };
    for key in map.keys() {
        if !FAMILIES.iter().any(|f| f.key == key) {
            let known: Vec<&str> = FAMILIES.iter().map(|f| f.key).collect();
            return Err(RulesError {
                file: layer.name.into(),
                pointer: format!("/{}", pointer_token(key)),
                problem: format!("unknown rule family; known: {}", known.join(", ")),
            });
        }
    }
    Ok(overlay)
}

fn mount(doc: &mut Value, pointer: &str, value: Value) {
    if pointer.is_empty() {
        deep_merge(doc, &value);
        return;
    }
    let mut cur = doc;
    let tokens: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, t) in tokens.iter().enumerate() {
        let map = cur.as_object_mut().expect("rules mount points are objects");
        if i + 1 == tokens.len() {
            match map.get_mut(*t) {
                Some(existing) => deep_merge(existing, &value),
                None => {
                    map.insert((*t).to_owned(), value);
                }
            }
            return;
        }
        cur = map
            .entry((*t).to_owned())
            .or_insert_with(|| Value::Object(Default::default()));
    }
}

fn validate_all(merged: &Value, blame: &dyn Fn(&str) -> String) -> Result<(), RulesError> {
    for f in FAMILIES {
        let value = merged.get(f.key).unwrap_or(&Value::Null);
        (f.validate)(value).map_err(|p| {
            let pointer = format!("/{}{}", f.key, p.pointer);
            RulesError {
                file: blame(&pointer),
                pointer,
                problem: p.problem,
            }
        })?;
    }
    Ok(())
}

fn embedded_file_for(pointer: &str) -> String {
    EMBEDDED
        .iter()
        .filter(|e| !e.mount.is_empty() && pointer.starts_with(e.mount))
        .max_by_key(|e| e.mount.len())
        .map(|e| e.file.to_owned())
        .unwrap_or_else(|| "embedded rules".to_owned())
}

/// Repository override file, relative to the workspace root.
pub const REPO_OVERRIDE: &str = ".evidence-gate/rules.json";

/// Reads the repository override `.evidence-gate/rules.json` through the
/// sandbox (no symlink, regular file, at most 4 MiB); `None` when absent.
pub fn read_repo_override(root: &cap_std::fs::Dir) -> Result<Option<Vec<u8>>, RulesError> {
    use crate::sandbox::{FileChecks, FileProblem, PathLimits, RelPath, open};
    const MAX: u64 = 4 * 1024 * 1024;
    let path = RelPath::parse(REPO_OVERRIDE, PathLimits::default()).expect("constant path");
    let fail = |problem: String| RulesError {
        file: REPO_OVERRIDE.into(),
        pointer: String::new(),
        problem,
    };
    match open::open_leaf(root, &path) {
        Ok((mut file, meta)) => {
            let checks = FileChecks {
                reject_hard_links: false,
                max_bytes: MAX,
                reject_empty: false,
            };
            if let Err(p) = open::check_handle(&meta, &checks) {
                return Err(fail(describe_problem(&p)));
            }
            let mut kept = Vec::new();
            open::hash_handle(&mut file, &meta, &checks, None, MAX as usize, &mut kept)
                .map_err(|p| fail(describe_problem(&p)))?;
            Ok(Some(kept))
        }
        Err(FileProblem::Missing) => Ok(None),
        Err(p) => Err(fail(describe_problem(&p))),
    }
}

/// The user's rules file: `$XDG_CONFIG_HOME/evidence-gate/rules.json`, else
/// `$HOME/.config/evidence-gate/rules.json` (`None` when neither is set).
pub fn user_config_path(amb: &dyn crate::ambient::Ambient) -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let base = crate::ambient::var(amb, "XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty() && std::path::Path::new(v).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            crate::ambient::var(amb, "HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some(base.join("evidence-gate").join("rules.json"))
}

/// Reads the user's rules file (see [`user_config_path`]): `(name, bytes)`,
/// `None` when it does not exist. It may relax policy: it lies outside the
/// workspace, where the gated agent cannot write when the host sandboxes it.
pub fn read_user_config(
    amb: &dyn crate::ambient::Ambient,
) -> Result<Option<(String, Vec<u8>)>, RulesError> {
    let Some(path) = user_config_path(amb) else {
        return Ok(None);
    };
    let name = path.display().to_string();
    match crate::ambient::read_file(amb, &path, 4 * 1024 * 1024) {
        Ok(bytes) => Ok(Some((name, bytes))),
        Err(crate::ambient::ReadError::NotFound) => Ok(None),
        Err(e) => Err(RulesError {
            file: name,
            pointer: String::new(),
            problem: format!("cannot read the user's rules file: {e}"),
        }),
    }
}

/// The trusted layers of owned `(name, bytes)` pairs, in order.
pub fn layers(owned: &[(String, Vec<u8>)]) -> Vec<Layer<'_>> {
    owned
        .iter()
        .map(|(name, bytes)| Layer { name, bytes })
        .collect()
}

fn describe_problem(p: &crate::sandbox::FileProblem) -> String {
    crate::finding::problem_finding(p).1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::evidence::EvidenceRules;

    #[test]
    fn a_pointer_is_below_a_directory_only_past_a_slash() {
        assert!(is_below("/texts/ulw-loop", "/texts"));
        assert!(is_below("/a/b/c", "/a/b"));
        assert!(!is_below("/texts", "/texts"), "not strictly below");
        assert!(
            !is_below("/textsx/a", "/texts"),
            "a longer name is not below"
        );
        assert!(!is_below("/texts", "/texts/ulw-loop"));
    }

    /// A shared part decodes once per rule set: the second lookup is the
    /// first decoding; another type at the same pointer decodes its own; a
    /// clone starts empty; an absent part is `None` every time.
    #[test]
    fn a_shared_part_decodes_once() {
        for rules in [
            RuleSet::embedded().unwrap(),
            RuleSet::load(&[Layer {
                name: "user",
                bytes: br#"{"profiles": {"omx": {"commandPrefix": "omx-x ultragoal"}}}"#,
            }])
            .unwrap(),
        ] {
            let at = "/profiles/omx";
            let first = rules.part_shared::<Value>(at).unwrap().unwrap();
            let again = rules.part_shared::<Value>(at).unwrap().unwrap();
            assert!(Arc::ptr_eq(&first, &again));
            assert_eq!(*first, rules.part::<Value>(at).unwrap().unwrap());
            let name = rules.part_shared::<Named>(at).unwrap().unwrap();
            assert_eq!(name.name, "omx");
            let other = rules.clone().part_shared::<Value>(at).unwrap().unwrap();
            assert!(!Arc::ptr_eq(&first, &other));
            assert_eq!(first, other);
            for _ in 0..2 {
                assert!(
                    rules
                        .part_shared::<Value>("/profiles/nope")
                        .unwrap()
                        .is_none()
                );
            }
        }
    }

    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }

    #[test]
    fn embedded_rules_validate() {
        let rules = RuleSet::embedded().unwrap();
        rules.validate().unwrap();
        let ev: EvidenceRules = rules.family().unwrap();
        assert_eq!(ev.evidence_root, ".omo/evidence");
        assert!(rules.digest().starts_with("sha256:"));
    }

    /// A family decoded straight from its files' text is exactly the family
    /// decoded from the tree: the assembled text is the tree's value (values
    /// and key order), and both typed values are the same.
    #[test]
    fn each_family_decoded_from_its_text_equals_the_tree_decoding() {
        let mut direct = 0;
        for f in FAMILIES {
            let Some(source) = direct::source(f.key) else {
                continue;
            };
            direct += 1;
            let tree = embedded_family_value(f.key).unwrap();
            assert_eq!(
                serde_json::to_string(&source.value().expect("assembled text parses")).unwrap(),
                serde_json::to_string(&tree).unwrap(),
                "{}",
                f.key
            );
        }
        // The hook families, the profiles, the texts, the directives at least.
        assert!(direct >= 10, "{direct} families decode from their text");
        fn same<T: RuleFamily + std::fmt::Debug>() {
            let set = RuleSet::embedded().unwrap();
            let fast: T = set.family().unwrap();
            let tree: T = parse_family(&embedded_family_value(T::KEY).unwrap()).unwrap();
            assert_eq!(format!("{fast:?}"), format!("{tree:?}"), "{}", T::KEY);
        }
        same::<evidence::EvidenceRules>();
        same::<gates::GatesFamily>();
        same::<gates::GateSettings>();
        same::<hooks::HooksRules>();
        same::<hooks::SubagentStopRules>();
        same::<hooks::Directives>();
        same::<goal_loop::StopRules>();
        same::<goal_loop::UserPromptSubmitRules>();
        same::<goal_loop::CreateGoalGuardRules>();
        same::<goal_loop::SpawnRules>();
        same::<goal_loop::TeamGuardRules>();
        same::<profiles::Profiles>();
        same::<profiles::TextsFamily>();
        same::<profiles::BlockerRules>();
        same::<workflow::WorkflowRules>();
        assert_eq!(FAMILIES.len(), 15, "a new family is added to this list");
    }

    /// A top-level file is read for one key only; a key it lacks, or text
    /// that does not decode, leaves the decision to the tree path.
    #[test]
    fn a_field_source_skips_other_keys_and_declines_what_it_cannot_decode() {
        let text: &'static str = r#"{"a": {"x": [1, {"y": null}]}, "b": {"n": 1}, "b": {"n": 2}}"#;
        #[derive(serde::Deserialize)]
        struct N {
            n: u64,
        }
        let b = direct::Source::Field { text, key: "b" };
        assert_eq!(
            b.decode::<N>().map(|n| n.n),
            Some(2),
            "a later duplicate wins"
        );
        let missing = direct::Source::Field { text, key: "c" };
        assert!(missing.decode::<N>().is_none());
        let wrong = direct::Source::Field { text, key: "a" };
        assert!(wrong.decode::<N>().is_none());
        let trailing = direct::Source::Field {
            text: r#"{"b": {"n": 1}} x"#,
            key: "b",
        };
        assert!(trailing.decode::<N>().is_none());
    }

    /// Assembling one family from its embedded files gives exactly what the
    /// whole document holds under its key (values and key order).
    #[test]
    fn each_embedded_family_equals_its_part_of_the_whole_document() {
        let whole = embedded_document().unwrap();
        let keys: Vec<&String> = whole.as_object().unwrap().keys().collect();
        for f in FAMILIES {
            assert!(keys.iter().any(|k| *k == f.key), "{} is embedded", f.key);
        }
        for key in keys {
            let part = embedded_family_value(key).unwrap();
            assert_eq!(
                serde_json::to_string(&part).unwrap(),
                serde_json::to_string(&whole[key.as_str()]).unwrap(),
                "{key}"
            );
        }
        let rules = RuleSet::embedded().unwrap();
        assert_eq!(
            rules.pointer("/texts/ulw-loop"),
            whole.pointer("/texts/ulw-loop")
        );
        assert_eq!(rules.pointer("/no-such-family/x"), None);
        // One file read alone equals its part of the whole document.
        let texts: Option<Value> = RuleSet::embedded()
            .unwrap()
            .part("/texts/ulw-loop")
            .unwrap();
        assert_eq!(texts.as_ref(), whole.pointer("/texts/ulw-loop"));
        assert!(sole_file_at("/texts/ulw-loop").is_some());
        assert!(
            sole_file_at("/gates").is_none(),
            "several files mount below"
        );
        assert!(sole_file_at("/hooks").is_none(), "merged at the top");
        let none: Option<Value> = rules.part("/texts/no-such-profile").unwrap();
        assert_eq!(none, None);
        assert_eq!(
            rules.digest(),
            format!("sha256:{}", sha256_hex(json::canonical(&whole).as_bytes()))
        );
    }

    #[test]
    fn override_merges_objects_and_replaces_arrays() {
        let layer = br#"{"evidence":{"deliverables":{"deny":["secrets/**"]}}}"#;
        let rules = RuleSet::load(&[Layer {
            name: "o.json",
            bytes: layer,
        }])
        .unwrap();
        let ev: EvidenceRules = rules.family().unwrap();
        assert_eq!(ev.deliverables.deny, vec!["secrets/**".to_owned()]);
        assert_eq!(ev.deliverables.allow, vec!["**".to_owned()]);
    }

    #[test]
    fn typos_and_unknown_families_are_errors() {
        let err = RuleSet::load(&[Layer {
            name: "o.json",
            bytes: br#"{"evidence":{"deliverables":{"alow":[]}}}"#,
        }])
        .unwrap_err();
        assert_eq!(err.file, "o.json");
        assert_eq!(err.pointer, "/evidence/deliverables/alow");
        assert!(err.problem.contains("alow"), "{}", err.problem);
        let err = RuleSet::load(&[Layer {
            name: "o.json",
            bytes: br#"{"evidense":{}}"#,
        }])
        .unwrap_err();
        assert_eq!(err.pointer, "/evidense");
        let err = RuleSet::load(&[Layer {
            name: "o.json",
            bytes: b"[1]",
        }])
        .unwrap_err();
        assert!(err.problem.contains("object"));
        let err = RuleSet::load(&[Layer {
            name: "o.json",
            bytes: br#"{"evidence":{"deliverables":{"allow":["a/[b"]}}}"#,
        }])
        .unwrap_err();
        assert_eq!(err.pointer, "/evidence/deliverables/allow/0");
    }
}
