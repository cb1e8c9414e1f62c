//! evidence_fs
