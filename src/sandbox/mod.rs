//! The capability sandbox: the workspace root as a `cap_std::fs::Dir`,
//! lexical path validation, confined no-follow non-blocking opens, handle
//! metadata checks and streaming SHA-256.
//!
//! Nothing here takes a `&Path` from callers: every path is a [`RelPath`]
//! resolved against a `Dir`, one component at a time, never following a
//! symlink. This module never prints and never decides policy; callers map
//! [`FileProblem`]s to their own finding codes.

pub mod open;
pub(crate) mod parallel;
pub(crate) mod path;
pub(crate) mod walk;

pub use open::{FileChecks, FileProblem, HashedFile};
pub use path::{LexicalProblem, PathLimits, RelPath};
