//! The checking primitives both families share: text, literal, role and
//! array rules with the anchor's messages (docs/differences.md#r-6), and the ordered list of
//! findings in which file checks are placeholders until the files are
//! hashed (so every distinct path is opened once, on all cores, and the
//! findings still come out in document order).

use serde_json::{Map, Value, json};

use super::files::{FileResult, Files};
use super::outcome::{FileRole, GateFile, GateFinding};
use crate::evidence::Code;
use crate::evidence::placeholder::Placeholders;

/// One slot of the ordered result.
pub(crate) enum Entry {
    /// A finding decided during the pass.
    Finding(GateFinding),
    /// The file check of one field, decided when its job has run.
    File {
        job: usize,
        field: String,
        path: String,
    },
    /// The report verdict-line rule for one report field (docs/gates.md#qg-3).
    VerdictLine {
        job: usize,
        field: String,
        expected: String,
    },
}

/// Accumulates findings in order.
pub(crate) struct Checker<'a> {
    entries: Vec<Entry>,
    placeholders: Placeholders,
    pub(crate) files: Files<'a>,
}

/// A JSON value's type name, for messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value as shown in a message: control characters escaped, clipped.
pub(crate) fn shown(s: &str) -> String {
    let escaped: String = s.escape_debug().collect();
    if escaped.chars().count() > 120 {
        let mut t: String = escaped.chars().take(120).collect();
        t.push('…');
        t
    } else {
        escaped
    }
}

/// `a`, `a or b`, `a, b or c`.
pub(crate) fn one_of(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// `prefix.key`.
pub(crate) fn at(prefix: &str, key: &str) -> String {
    format!("{prefix}.{key}")
}

impl<'a> Checker<'a> {
    pub(crate) fn new(placeholders: Placeholders, files: Files<'a>) -> Checker<'a> {
        Checker {
            entries: Vec::new(),
            placeholders,
            files,
        }
    }

    /// Adds a finding.
    pub(crate) fn push(&mut self, f: GateFinding) {
        self.entries.push(Entry::Finding(f));
    }

    fn finding(&mut self, code: Code, field: &str, message: String) {
        self.push(GateFinding::new(code, field, message).with_details(json!({"field": field})));
    }

    /// True when `s` is a placeholder (docs/gates.md#qg-2).
    pub(crate) fn is_placeholder(&self, s: &str) -> bool {
        self.placeholders.is_placeholder(s)
    }

    /// A required text field: present, a string, non-blank, not a
    /// placeholder. Returns the trimmed text.
    pub(crate) fn text<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        prefix: &str,
        key: &str,
    ) -> Option<&'v str> {
        self.text_value(obj.get(key), &at(prefix, key))
    }

    /// An optional text field: absent or `null` is fine; otherwise as
    /// [`Checker::text`]. `Some(None)` = absent.
    pub(crate) fn optional_text<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        prefix: &str,
        key: &str,
    ) -> Option<Option<&'v str>> {
        match obj.get(key) {
            None | Some(Value::Null) => Some(None),
            v => self.text_value(v, &at(prefix, key)).map(Some),
        }
    }

    /// The text rule applied to one value.
    pub(crate) fn text_value<'v>(&mut self, v: Option<&'v Value>, field: &str) -> Option<&'v str> {
        match v {
            None | Some(Value::Null) => {
                self.finding(
                    Code::GateFieldRequired,
                    field,
                    format!("Final quality gate requires non-empty {field}."),
                );
                None
            }
            Some(Value::String(s)) if crate::text::is_blank(s) => {
                self.finding(
                    Code::GateFieldRequired,
                    field,
                    format!("Final quality gate requires non-empty {field}."),
                );
                None
            }
            Some(Value::String(s)) if self.is_placeholder(s) => {
                self.finding(
                    Code::GateFieldPlaceholder,
                    field,
                    format!("Final quality gate rejects placeholder {field}."),
                );
                None
            }
            Some(Value::String(s)) => Some(s.trim()),
            Some(other) => {
                self.finding(
                    Code::GateFieldType,
                    field,
                    format!(
                        "Final quality gate requires non-empty {field} (a string, not {}).",
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    /// A literal field: a string whose trimmed value is one of `allowed`.
    pub(crate) fn literal<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        prefix: &str,
        key: &str,
        allowed: &[String],
    ) -> Option<&'v str> {
        let field = at(prefix, key);
        let message = format!("{field} must be {}.", one_of(allowed));
        match obj.get(key) {
            Some(Value::String(s)) if allowed.iter().any(|a| a == s.trim()) => Some(s.trim()),
            Some(Value::String(s)) => {
                self.push(
                    GateFinding::new(Code::GateValueMismatch, &field, message)
                        .with_details(json!({"field": field, "expected": allowed, "actual": s})),
                );
                None
            }
            None | Some(Value::Null) => {
                self.finding(Code::GateFieldRequired, &field, message);
                None
            }
            Some(other) => {
                self.push(
                    GateFinding::new(Code::GateFieldType, &field, message).with_details(
                        json!({"field": field, "expected": allowed, "actual": type_name(other)}),
                    ),
                );
                None
            }
        }
    }

    /// `by`: a text in the section's acceptors.
    pub(crate) fn role(&mut self, obj: &Map<String, Value>, prefix: &str, acceptors: &[String]) {
        let field = at(prefix, "by");
        if let Some(by) = self.text(obj, prefix, "by")
            && !acceptors.iter().any(|a| a == by)
        {
            self.push(
                GateFinding::new(
                    Code::GateRoleNotAccepted,
                    &field,
                    format!("{field} must be {}.", one_of(acceptors)),
                )
                .with_details(json!({"field": field, "expected": acceptors, "actual": by})),
            );
        }
    }

    /// A list that must be a non-empty array. Returns its elements.
    pub(crate) fn array<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        prefix: &str,
        key: &str,
    ) -> Option<&'v [Value]> {
        let field = at(prefix, key);
        match obj.get(key) {
            Some(Value::Array(items)) if items.is_empty() => {
                self.finding(
                    Code::GateArrayEmpty,
                    &field,
                    format!("Final quality gate requires {field}."),
                );
                None
            }
            Some(Value::Array(items)) => Some(items),
            None | Some(Value::Null) => {
                self.finding(
                    Code::GateFieldRequired,
                    &field,
                    format!("Final quality gate requires {field}."),
                );
                None
            }
            Some(other) => {
                self.finding(
                    Code::GateFieldType,
                    &field,
                    format!(
                        "Final quality gate requires {field} (an array, not {}).",
                        type_name(other)
                    ),
                );
                None
            }
        }
    }

    /// A string array: with `required`, present and non-empty; without it,
    /// absent is fine and empty is fine. Every element follows the text
    /// rule. Returns the valid trimmed elements with their indices.
    pub(crate) fn text_array<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        prefix: &str,
        key: &str,
        required: bool,
    ) -> Option<Vec<(usize, &'v str)>> {
        let items: &[Value] = if required {
            self.array(obj, prefix, key)?
        } else {
            match obj.get(key) {
                None | Some(Value::Null) => return Some(Vec::new()),
                Some(Value::Array(items)) => items,
                Some(other) => {
                    let field = at(prefix, key);
                    self.finding(
                        Code::GateFieldType,
                        &field,
                        format!(
                            "{field} must be an array of strings, not {}.",
                            type_name(other)
                        ),
                    );
                    return None;
                }
            }
        };
        let field = at(prefix, key);
        let mut out = Vec::new();
        for (i, v) in items.iter().enumerate() {
            if let Some(t) = self.text_value(Some(v), &format!("{field}[{i}]")) {
                out.push((i, t));
            }
        }
        Some(out)
    }

    /// `blockers`: an empty array. With `required`, absence is an error.
    pub(crate) fn blockers(&mut self, obj: &Map<String, Value>, prefix: &str, required: bool) {
        let field = at(prefix, "blockers");
        match obj.get("blockers") {
            Some(Value::Array(items)) if items.is_empty() => {}
            Some(Value::Array(items)) => self.push(
                GateFinding::new(
                    Code::GateBlockersNotEmpty,
                    &field,
                    format!("{field} must be empty."),
                )
                .with_details(json!({"field": field, "count": items.len()})),
            ),
            None | Some(Value::Null) if !required => {}
            None | Some(Value::Null) => self.finding(
                Code::GateFieldRequired,
                &field,
                format!("Final quality gate requires {field} (an empty array)."),
            ),
            Some(other) => self.finding(
                Code::GateFieldType,
                &field,
                format!("{field} must be an empty array, not {}.", type_name(other)),
            ),
        }
    }

    /// An array element that must be an object.
    pub(crate) fn element<'v>(
        &mut self,
        v: &'v Value,
        field: &str,
    ) -> Option<&'v Map<String, Value>> {
        match v {
            Value::Object(m) => Some(m),
            other => {
                self.finding(
                    Code::GateFieldType,
                    field,
                    format!("{field} must be an object, not {}.", type_name(other)),
                );
                None
            }
        }
    }

    /// A present optional section that is not an object.
    pub(crate) fn not_an_object(&mut self, field: &str, v: &Value) {
        self.finding(
            Code::GateFieldType,
            field,
            format!("{field} must be an object, not {}.", type_name(v)),
        );
    }

    /// A required section that is absent or not an object.
    pub(crate) fn section_missing(&mut self, section: &str) {
        self.finding(
            Code::GateSectionMissing,
            section,
            format!("Final quality gate is missing {section} evidence."),
        );
    }

    /// The scope and file checks of a path whose text already passed:
    /// lexical validation, strictly below the scope directory, then a file
    /// job (opened once per distinct path). Returns the job index.
    pub(crate) fn path(&mut self, raw: &str, field: &str, role: FileRole) -> Option<usize> {
        match self.files.register(raw, field, role) {
            Ok(job) => {
                self.entries.push(Entry::File {
                    job,
                    field: field.to_owned(),
                    path: raw.to_owned(),
                });
                Some(job)
            }
            Err(Some(f)) => {
                self.push(*f);
                None
            }
            Err(None) => None,
        }
    }

    /// Registers the verdict-line rule for a report job.
    pub(crate) fn verdict_line(&mut self, job: usize, field: &str, expected: String) {
        self.entries.push(Entry::VerdictLine {
            job,
            field: field.to_owned(),
            expected,
        });
    }

    /// Runs the file jobs and resolves every slot, in order.
    pub(crate) fn finish(self) -> (Vec<GateFinding>, Vec<GateFile>) {
        let (results, jobs) = self.files.run();
        let mut findings = Vec::new();
        let mut files = Vec::new();
        let mut recorded = vec![false; results.len()];
        for entry in self.entries {
            match entry {
                Entry::Finding(f) => findings.push(f),
                Entry::File { job, field, path } => match &results[job] {
                    FileResult::Ok { hashed, .. } => {
                        if !recorded[job] {
                            recorded[job] = true;
                            files.push(GateFile {
                                path: jobs[job].path.as_str().to_owned(),
                                size: hashed.size,
                                sha256: hashed.sha256.clone(),
                                role: jobs[job].role,
                            });
                        }
                    }
                    FileResult::Problem(p) => {
                        findings.push(super::files::problem_finding(p, &field, &path));
                    }
                },
                Entry::VerdictLine {
                    job,
                    field,
                    expected,
                } => {
                    if let FileResult::Ok { kept, .. } = &results[job]
                        && !has_verdict_line(kept, &expected)
                    {
                        findings.push(
                            GateFinding::new(
                                Code::GateReportVerdictMissing,
                                &field,
                                format!(
                                    "{field} ({}) must contain the line `VERDICT: {expected}`.",
                                    shown(jobs[job].path.as_str())
                                ),
                            )
                            .with_details(json!({
                                "field": field,
                                "path": jobs[job].path.as_str(),
                                "expected": format!("VERDICT: {expected}"),
                            })),
                        );
                    }
                }
            }
        }
        (findings, files)
    }
}

fn has_verdict_line(content: &[u8], expected: &str) -> bool {
    let want = format!("VERDICT: {expected}");
    content
        .split(|&b| b == b'\n')
        .any(|line| std::str::from_utf8(line).is_ok_and(|l| l.trim() == want))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(one_of(&["A".into()]), "A");
        assert_eq!(one_of(&["A".into(), "B".into()]), "A or B");
        assert_eq!(one_of(&["A".into(), "B".into(), "C".into()]), "A, B or C");
        assert_eq!(shown("a\nb"), "a\\nb");
        assert!(has_verdict_line(
            b"# Review\r\nVERDICT: APPROVE\r\n",
            "APPROVE"
        ));
        assert!(!has_verdict_line(b"VERDICT: APPROVED\n", "APPROVE"));
    }
}
