//! agy's argument-free commands (docs/hook-contracts.md#h-7): some agy builds run only a
//! bare executable path, so `init --write` links the binary as
//! `evidence-gate-hook-<event>` (the multi-call names of docs/hook-contracts.md#h-1) and
//! points each command at its link by absolute path.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::wiring::{self, Binary, Row};
use super::{Error, Options, Scope};
use crate::ambient::{self, Ambient};
use crate::hooks::host::Host;

/// How the rows' commands are formed.
pub(super) enum Commands {
    /// `<binary> hook <event> --host <h> …` for every row.
    Shared(Binary),
    /// One linked executable per row's event.
    Links(Vec<(crate::hooks::event::HookEvent, String)>),
}

impl Commands {
    /// The hooks object for these commands.
    pub(super) fn hooks_object(&self, host: Host, rows: &[Row]) -> Map<String, Value> {
        match self {
            Commands::Shared(b) => wiring::hooks_object(host, b, rows),
            Commands::Links(links) => wiring::hooks_object_with(
                host,
                rows,
                &|r| {
                    links
                        .iter()
                        .find(|(e, _)| *e == r.event)
                        .map(|(_, p)| Binary::Path(p.clone()).token())
                        .unwrap_or_default()
                },
                false,
            ),
        }
    }
}

fn link_dir(o: &Options, amb: &dyn Ambient) -> Result<PathBuf, Error> {
    match o.scope {
        Scope::User => ambient::var(amb, "HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map(|h| h.join(".gemini/config/bin"))
            .ok_or_else(|| Error::Usage("user scope needs HOME".into())),
        _ => amb
            .current_dir()
            .map(|d| d.join(".agents/bin"))
            .map_err(|e| Error::Io(e.to_string())),
    }
}

/// Creates `evidence-gate-hook-<event>` next to each other in the link
/// directory (hard links, copies where linking fails). A binary named by a
/// bare word (resolved on `PATH` later) cannot be linked: the commands then
/// keep their arguments.
pub(super) fn links(
    o: &Options,
    amb: &dyn Ambient,
    binary: &Binary,
    rows: &[Row],
    notes: &mut Vec<String>,
) -> Result<Commands, Error> {
    let Binary::Path(exe) = binary else {
        notes.push(
            "agy: a binary named by a bare word cannot be linked; the commands keep their arguments"
                .into(),
        );
        return Ok(Commands::Shared(binary.clone()));
    };
    let io = |e: std::io::Error| Error::Io(e.to_string());
    // Link the binary itself: a hard link to a relative symlink would
    // dangle in the link directory.
    let exe = ambient::resolve_leaf_links(amb, Path::new(exe)).map_err(io)?;
    let (src_parent, src_name) =
        ambient::split(&exe).ok_or_else(|| Error::Io("no binary file name".into()))?;
    let src_dir = amb.open_dir(&src_parent).map_err(io)?;
    let dir = link_dir(o, amb)?;
    amb.create_dir_all(&dir).map_err(io)?;
    let dst = amb.open_dir(&dir).map_err(io)?;
    let mut out = Vec::new();
    for r in rows {
        let name = format!("evidence-gate-hook-{}", r.event.name());
        match dst.remove_file(&name) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
        if src_dir.hard_link(&src_name, &dst, &name).is_err() {
            src_dir.copy(&src_name, &dst, &name).map_err(io)?;
            notes.push(format!(
                "agy: {name} is a copy of the binary (hard linking failed); rerun init after upgrading"
            ));
        }
        let path = dir.join(&name);
        let text = path
            .to_str()
            .ok_or_else(|| Error::Io("non-UTF-8 link path".into()))?
            .to_owned();
        out.push((r.event, text));
    }
    notes.push(format!(
        "agy: the commands run argument-free links in {} (they act as `hook <event> --host auto --profile auto`)",
        dir.display()
    ));
    Ok(Commands::Links(out))
}
