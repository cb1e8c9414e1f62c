//! evidence_cli
