//! `EVIDENCE_GATE_IO_REPORT=<file>` (docs/hook-contracts.md#h-8; tests and benchmarks
//! only): at exit, append the process's read-byte count (Linux
//! `/proc/self/io` `rchar`), the stdin bytes, and the tracked file reads.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Mutex;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::OpenOptions;
use serde_json::{Value, json};

use crate::ambient::{self, Ambient};

/// The environment variable naming the report file.
pub(crate) const ENV: &str = "EVIDENCE_GATE_IO_REPORT";

static READS: Mutex<Vec<Value>> = Mutex::new(Vec::new());

/// Records a bounded read of a file outside the sandboxed receipt checks.
pub(crate) fn note_read(kind: &str, path: &Path, bytes: u64) {
    if let Ok(mut r) = READS.lock() {
        r.push(json!({"kind": kind, "path": path.display().to_string(), "bytes": bytes}));
    }
}

/// Appends the report line when the variable is set.
pub(crate) fn write(amb: &dyn Ambient, stdin_bytes: u64) {
    let Some(target) = amb.var_os(ENV) else {
        return;
    };
    let rchar = read_rchar(amb);
    let reads = READS.lock().map(|r| r.clone()).unwrap_or_default();
    let line = json!({
        "rchar": rchar,
        "stdin_bytes": stdin_bytes,
        "file_bytes": rchar.map(|r| r.saturating_sub(stdin_bytes)),
        "reads": reads,
    });
    let Some((parent, name)) = ambient::split(Path::new(&target)) else {
        return;
    };
    let Ok(dir) = amb.open_dir(&parent) else {
        return;
    };
    let mut opts = OpenOptions::new();
    opts.append(true).create(true).follow(FollowSymlinks::No);
    if let Ok(mut f) = dir.open_with(&name, &opts) {
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        let _ = f.write_all(&bytes);
    }
}

fn read_rchar(amb: &dyn Ambient) -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let dir = amb.open_dir(Path::new("/proc/self")).ok()?;
    let mut text = String::new();
    dir.open("io").ok()?.read_to_string(&mut text).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .and_then(|v| v.trim().parse().ok())
}
