//! Host transcripts: they lie outside the workspace, so they are opened by
//! their parent directory (ambient) and a no-follow, non-blocking leaf open
//! that must yield a regular file. Only the tail is ever read.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::SystemTime;

use cap_std::fs::{File, Metadata};

pub(crate) use super::host_records::Markers;
use super::io_report;
use crate::ambient::{self, Ambient};
use crate::sandbox::open;

/// Opens a transcript; `None` when it is missing, not a regular file, a
/// symlink or otherwise unusable (every caller treats that as "no signal").
pub(crate) fn open_transcript(amb: &dyn Ambient, path: &Path) -> Option<(File, Metadata)> {
    let (parent, name) = ambient::split(path)?;
    let name = name.to_str()?;
    let dir = amb.open_dir(&parent).ok()?;
    let (file, meta) = open::open_in(&dir, name, name).ok()?;
    meta.is_file().then_some((file, meta))
}

/// The last `max` bytes of a transcript (one seek, one read).
pub(crate) fn read_tail(amb: &dyn Ambient, path: &Path, max: u64) -> Option<Vec<u8>> {
    read_tail_cut(amb, path, max).map(|(buf, _)| buf)
}

/// [`read_tail`], and whether the tail starts inside the file (its first
/// line may then be the end of a longer record).
pub(crate) fn read_tail_cut(amb: &dyn Ambient, path: &Path, max: u64) -> Option<(Vec<u8>, bool)> {
    let (mut file, meta) = open_transcript(amb, path)?;
    let len = meta.len();
    let start = len.saturating_sub(max);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    file.take(max).read_to_end(&mut buf).ok()?;
    io_report::note_read("transcript", path, buf.len() as u64);
    Some((buf, start > 0))
}

/// True when the transcript's tail holds a compaction record the host wrote
/// itself (docs/threat-model.md#i5) carrying one of `markers`. Always false for a
/// host without a recorded record shape ([`super::host_records::SHAPES`]).
pub(crate) fn host_pressure(
    amb: &dyn Ambient,
    host: super::host::Host,
    path: Option<&Path>,
    max: u64,
    markers: &Markers,
) -> bool {
    let shapes = super::host_records::compaction_shapes(super::host_records::SHAPES, host);
    if shapes.is_empty() {
        return false;
    }
    path.and_then(|p| read_tail_cut(amb, p, max))
        .is_some_and(|(tail, cut)| {
            super::host_records::pressure_record(&tail, cut, &shapes, markers)
        })
}

/// The transcript's birth time, when the platform and filesystem record it.
pub(crate) fn birth_time(amb: &dyn Ambient, path: &Path) -> Option<SystemTime> {
    let (_, meta) = open_transcript(amb, path)?;
    meta.created().ok().map(|t| t.into_std())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_ignore_ascii_case() {
        let m = Markers::new(&["Context Compacted".into()]);
        assert!(m.found_in(b"..{\"t\":\"CONTEXT compacted\"}"));
        assert!(!m.found_in(b"context  compacted"));
        assert!(
            m.found_in(b"\xff\xfe CONTEXT COMPACTED"),
            "raw bytes, not UTF-8"
        );
        assert!(m.found_in(b"context compacted"), "at the very end");
        assert!(!m.found_in(b"context compacte"));
        assert!(!Markers::new(&[]).found_in(b"context compacted"));
    }
}
