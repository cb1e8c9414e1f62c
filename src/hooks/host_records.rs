//! Records only the host writes (docs/threat-model.md#i5: only the host speaks for
//! the host). A context-pressure marker counts only inside a transcript
//! record of a type the host itself writes when it compacts a context or
//! runs out of room; a marker in tool output, assistant text or user text
//! (all of which the agent controls) counts for nothing.
//!
//! A record shape is listed here only when a capture from the real host
//! pins it: `fixture` names a `recorded-` transcript under `fixtures/hosts/`
//! that holds a record of that shape, and a unit test checks that it does.
//! A host without such a capture has no shape, and the escape is off for it
//! (fail closed); `evidence-gate doctor` says so (`hosts.records`).

use serde_json::Value;

use super::host::Host;

/// What a host record says about the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// The host compacted the context or hit its context limit.
    Compaction,
}

/// One transcript record shape a host writes itself.
#[derive(Debug, Clone, Copy)]
pub struct RecordShape {
    /// The host that writes it.
    pub host: Host,
    /// What it means.
    pub kind: RecordKind,
    /// `(JSON pointer, string value)` pairs the record must all carry.
    pub fields: &'static [(&'static str, &'static str)],
    /// The recorded capture that pins the shape (relative to `fixtures/hosts/`).
    pub fixture: &'static str,
}

/// The record shapes pinned by recorded captures. No capture from a real host
/// exists yet (`fixtures/hosts/README.md`), so the list is empty and the
/// context-pressure escape is off for every host.
pub const SHAPES: &[RecordShape] = &[];

/// The compaction shapes of `host` in `shapes`.
pub fn compaction_shapes(shapes: &[RecordShape], host: Host) -> Vec<RecordShape> {
    shapes
        .iter()
        .filter(|s| s.host == host && s.kind == RecordKind::Compaction)
        .copied()
        .collect()
}

/// True when the escape can apply to `host` at all (a pinned shape exists).
pub fn escape_enabled(host: Host) -> bool {
    !compaction_shapes(SHAPES, host).is_empty()
}

/// True when a whole JSON line of `tail` is a record of one of `shapes`
/// and contains a marker. `cut` says the tail starts inside the file: its
/// first line may be the end of a longer record and is never read.
pub fn pressure_record(tail: &[u8], cut: bool, shapes: &[RecordShape], markers: &Markers) -> bool {
    if shapes.is_empty() {
        return false;
    }
    let mut lines = tail.split(|b| *b == b'\n');
    if cut {
        lines.next();
    }
    lines
        .filter(|l| markers.found_in(l))
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .any(|record| shapes.iter().any(|s| matches(&record, s)))
}

fn matches(record: &Value, shape: &RecordShape) -> bool {
    shape
        .fields
        .iter()
        .all(|(ptr, want)| record.pointer(ptr).and_then(Value::as_str) == Some(*want))
}

/// Context-pressure markers, matched on raw bytes ignoring ASCII case.
#[derive(Debug, Clone)]
pub struct Markers {
    finders: Vec<crate::scan::Finder>,
}

impl Markers {
    /// Compiles the marker list.
    pub fn new(markers: &[String]) -> Markers {
        let finders = markers
            .iter()
            .filter(|m| !m.is_empty())
            .map(|m| crate::scan::Finder::new(&m.as_bytes().to_ascii_lowercase()))
            .collect();
        Markers { finders }
    }

    /// True when `haystack` contains any marker: the haystack is lowered
    /// once, then each marker is a SIMD substring search.
    pub fn found_in(&self, haystack: &[u8]) -> bool {
        if self.finders.is_empty() {
            return false;
        }
        let lowered = haystack.to_ascii_lowercase();
        self.finders.iter().any(|f| f.find(&lowered).is_some())
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    /// A shape for the tests of the matcher only: it is not a host's.
    const TEST_SHAPE: RecordShape = RecordShape {
        host: Host::Codex,
        kind: RecordKind::Compaction,
        fields: &[("/type", "test_host_compaction")],
        fixture: "",
    };

    fn markers() -> Markers {
        Markers::new(&["context compacted".into(), "context_length_exceeded".into()])
    }

    #[test]
    fn a_marker_counts_only_inside_a_host_record() {
        let shapes = [TEST_SHAPE];
        let host = b"{\"type\":\"message\"}\n{\"type\":\"test_host_compaction\",\"msg\":\"Context compacted\"}\n";
        assert!(pressure_record(host, false, &shapes, &markers()));
        // The same words in tool output, assistant text or user text.
        for forged in [
            &b"{\"type\":\"function_call_output\",\"output\":\"context_length_exceeded\"}\n"[..],
            b"{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"Context compacted\"}\n",
            b"{\"type\":\"message\",\"role\":\"user\",\"content\":\"context compacted\"}\n",
            b"{\"type\":\"function_call_output\",\"output\":\"{\\\"type\\\":\\\"test_host_compaction\\\",\\\"msg\\\":\\\"context compacted\\\"}\"}\n",
            b"context compacted {\"type\":\"test_host_compaction\"}\n",
        ] {
            assert!(
                !pressure_record(forged, false, &shapes, &markers()),
                "{}",
                String::from_utf8_lossy(forged)
            );
        }
        // A host record without a marker is no pressure either.
        assert!(!pressure_record(
            b"{\"type\":\"test_host_compaction\"}\n",
            false,
            &shapes,
            &markers()
        ));
        // The first line of a cut tail is never read.
        let first = b"{\"type\":\"test_host_compaction\",\"msg\":\"context compacted\"}\n{}";
        assert!(!pressure_record(first, true, &shapes, &markers()));
        assert!(pressure_record(first, false, &shapes, &markers()));
    }

    #[test]
    fn no_shape_means_no_escape() {
        let host = b"{\"type\":\"test_host_compaction\",\"msg\":\"Context compacted\"}\n";
        assert!(!pressure_record(host, false, &[], &markers()));
        for h in Host::NAMED {
            assert!(compaction_shapes(&[TEST_SHAPE], *h).len() == usize::from(*h == Host::Codex));
        }
        assert!(compaction_shapes(&[TEST_SHAPE], Host::Common).is_empty());
    }

    #[test]
    fn every_listed_shape_is_pinned_by_a_recorded_capture() {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts");
        for s in SHAPES {
            let name = std::path::Path::new(s.fixture)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            assert!(
                name.starts_with("recorded-") && s.fixture.starts_with(s.host.name()),
                "{}: a shape is pinned only by a recorded capture of its host",
                s.fixture
            );
            let bytes = std::fs::read(base.join(s.fixture)).unwrap();
            let any = bytes
                .split(|b| *b == b'\n')
                .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
                .any(|r| matches(&r, s));
            assert!(any, "{} holds no record of its shape", s.fixture);
        }
        for h in Host::NAMED {
            assert_eq!(
                escape_enabled(*h),
                SHAPES.iter().any(|s| s.host == *h),
                "{}",
                h.name()
            );
        }
    }
}
