//! The warning a command reply carries: a leaf, so the gate checks and the
//! subcommands can both build one without depending on each other.

use serde::Serialize;

/// A warning of a command reply (`{code, message}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// The warning code.
    pub code: String,
    /// The sentence.
    pub message: String,
}

impl Warning {
    /// A warning.
    pub fn new(code: &str, message: String) -> Warning {
        Warning {
            code: code.to_owned(),
            message,
        }
    }
}
