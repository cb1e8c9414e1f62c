//! The JSON shapes of the goal-engine outcomes that are not a plain
//! serialisation of their typed values (docs/differences.md#r-3 key orders):
//! the `status` ledger, which joins the head with the consistency and the
//! binding, and the scheduler report, whose `instruction` depends on the
//! profile.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::goals::ops::status::StatusOutcome;

/// The serialised shape of a typed outcome value.
pub(super) fn to_value<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).expect("outcome values serialise")
}

/// `status`'s `ledger`: `{records, lastSeq, head, consistency,
/// mutationInProgress, binding, forceSwitchPending?}`.
pub(super) fn status_ledger(out: &StatusOutcome) -> Value {
    let l = &out.ledger;
    let mut m = Map::new();
    m.insert("records".into(), json!(l.records));
    m.insert("lastSeq".into(), json!(l.last_seq));
    m.insert("head".into(), json!(l.head));
    m.insert("consistency".into(), json!(out.consistency.as_str()));
    m.insert("mutationInProgress".into(), json!(l.mutation_in_progress));
    m.insert("binding".into(), out.binding.to_json());
    if let Some(p) = &l.force_switch_pending {
        m.insert("forceSwitchPending".into(), to_value(p));
    }
    Value::Object(m)
}
