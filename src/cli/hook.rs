//! `evidence-gate hook <event> …` and the multi-call names
//! `evidence-gate-hook-<event>`: dispatched before clap, because a hook must
//! exit 0 even on a usage error.

use std::ffi::OsString;

use super::Io;
use crate::ambient::Ambient;

/// The multi-call prefix (docs/hook-contracts.md#h-1).
pub(crate) const MULTI_CALL_PREFIX: &str = "evidence-gate-hook-";

/// Runs a hook from `argv` (after the program name and, for the plain form,
/// after `hook`). Non-UTF-8 arguments become usage errors inside the runner.
pub(crate) fn run(
    event: Option<&str>,
    rest: &[OsString],
    amb: &dyn Ambient,
    io: &mut Io<'_>,
) -> u8 {
    let mut args: Vec<String> = Vec::with_capacity(rest.len() + 3);
    if let Some(e) = event {
        args.extend([e.to_owned(), "--host".to_owned(), "auto".to_owned()]);
    }
    args.extend(rest.iter().map(|a| {
        a.to_str()
            .map_or_else(|| "--non-utf8-argument".to_owned(), str::to_owned)
    }));
    crate::hooks::run(&args, amb, io)
}
