//! Host adapters: detection (docs/hook-contracts.md#h-1), payload decoding into the
//! normalized events (docs/hook-contracts.md#h-2) and decision encoding (docs/hook-contracts.md#h-2).

pub mod decode;
pub mod detect;
pub mod encode;
pub(crate) mod schema;

pub use super::host_id::{Host, HostSource};
