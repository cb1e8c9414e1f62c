//! The plan body's digest (docs/threat-model.md#i7): the plan object without
//! its `lastMutation`, serialised as [`super::Plan::encode`] writes plans.

use std::io;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The plan object without `lastMutation`, serialised in place (no copy of
/// a large plan).
struct Body<'a>(&'a Map<String, Value>);

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0.len() - usize::from(self.0.contains_key("lastMutation"));
        let mut m = s.serialize_map(Some(n))?;
        for (k, v) in self.0 {
            if k != "lastMutation" {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

struct HashWriter(Sha256);

impl io::Write for HashWriter {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.update(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// SHA-256 of the plan body (the document without `lastMutation`, as the
/// engine serialises plans).
pub fn body_sha256(doc: &Map<String, Value>) -> String {
    let mut w = HashWriter(Sha256::new());
    serde_json::to_writer_pretty(&mut w, &Body(doc)).expect("JSON values serialise");
    w.0.update(b"\n");
    crate::digest::hex(&w.0.finalize())
}
