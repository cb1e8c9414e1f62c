//! `evidence-gate hook <event> …` and the multi-call names
//! `evidence-gate-hook-<event>`: dispatched before clap, because a hook must
//! exit 0 even on a usage error.
//!
//! This is the process edge of the hooks (docs/hook-contracts.md#h-1): argument parsing,
//! the output latch, the watchdog that allows a call past its deadline, panic
//! capture (a panic hook installed for the run and the previous one restored
//! after it) and the one write of the decision. The decision itself is
//! [`crate::hooks::handle`]. Every path exits 0, except a Claude Code
//! Stop/SubagentStop block, which exits 2 with the reason on standard error
//! once it is written.

mod args;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use super::Io;
use crate::ambient::{self, Ambient};
use crate::hooks::diagnostics::Diagnostics;
use crate::hooks::host::encode::{Output, cap_bytes};
use crate::hooks::{
    DEBUG_ENV, DeadlineSink, Env, Fault, HookCall, HookCode, Trace, handle, io_report,
};
use args::{Parsed, SYNOPSIS};

/// The multi-call prefix (docs/hook-contracts.md#h-1).
pub(crate) const MULTI_CALL_PREFIX: &str = "evidence-gate-hook-";

/// Until the rules name `hooks.deadline_ms`, a run is allowed after this.
const FIRST_DEADLINE: Duration = Duration::from_millis(4000);

/// Runs a hook from `argv` (after the program name and, for the plain form,
/// after `hook`). Non-UTF-8 arguments become usage errors.
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
    run_args(&args, amb, io)
}

/// How long the watchdog waits for its `HOOK_DEADLINE` record before it
/// ends the process.
const RECORD_GRACE: Duration = Duration::from_millis(500);

/// The output latch: the first of main path, watchdog or panic path to take
/// it writes (or writes nothing) and ends the run.
struct Latch(AtomicBool);

impl Latch {
    fn take(&self) -> bool {
        !self.0.swap(true, Ordering::SeqCst)
    }
}

/// A re-armable deadline; `None` disarms it.
struct Watchdog {
    deadline: Mutex<Option<Instant>>,
    cv: Condvar,
}

impl DeadlineSink for Watchdog {
    fn arm(&self, at: Instant) {
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = Some(at);
        self.cv.notify_all();
    }
}

impl Watchdog {
    fn disarm(&self) {
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.cv.notify_all();
    }

    /// Waits until the deadline passes (true) or the watchdog is disarmed.
    fn wait(&self) -> bool {
        let mut g = self.deadline.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let Some(at) = *g else {
                return false;
            };
            let now = Instant::now();
            if now >= at {
                return true;
            }
            g = self
                .cv
                .wait_timeout(g, at - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Where a caught panic happened: message, file, line.
type PanicInfo = Option<(String, String, u32)>;

/// A process panic hook, as `std::panic::take_hook` returns it.
type PanicHook = Box<dyn Fn(&panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Installs a panic hook that records where a panic happened (instead of
/// printing it: a hook's standard error may reach the model), and restores
/// the previous hook when dropped.
struct PanicCapture {
    info: Arc<Mutex<PanicInfo>>,
    previous: Option<PanicHook>,
}

impl PanicCapture {
    fn install() -> PanicCapture {
        let info: Arc<Mutex<PanicInfo>> = Arc::default();
        let previous = panic::take_hook();
        let sink = Arc::clone(&info);
        panic::set_hook(Box::new(move |p| {
            let message = p
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| p.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            let (file, line) = p
                .location()
                .map(|l| (l.file().to_owned(), l.line()))
                .unwrap_or_default();
            if let Ok(mut g) = sink.lock() {
                *g = Some((message, file, line));
            }
        }));
        PanicCapture {
            info,
            previous: Some(previous),
        }
    }

    fn taken(&self) -> (String, String, u32) {
        self.info
            .lock()
            .ok()
            .and_then(|g| g.clone())
            .unwrap_or_default()
    }
}

impl Drop for PanicCapture {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            panic::set_hook(previous);
        }
    }
}

/// Counts the bytes the decision read from standard input (for
/// `EVIDENCE_GATE_IO_REPORT`), also when the decision panics.
struct Counting<'a> {
    inner: &'a mut dyn Read,
    read: &'a AtomicU64,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

fn park_forever() -> ! {
    loop {
        thread::park();
    }
}

/// Runs `evidence-gate hook <args…>`; returns 0, or 2 once a Claude Code
/// block reached standard error.
fn run_args(args: &[String], amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    let start = Instant::now();
    let label = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .cloned()
        .unwrap_or_default();
    let diag = Diagnostics::new(amb, &label, start);
    if let Ok(p) = amb.current_dir() {
        diag.set_root(&p);
    }
    let mut call = match args::parse(args) {
        Ok(Parsed::Run(a)) => a,
        Ok(Parsed::Help) => {
            let _ = writeln!(io.stderr, "{SYNOPSIS}");
            return 0;
        }
        Err(msg) => {
            let _ = writeln!(io.stderr, "evidence-gate hook: {msg} ({SYNOPSIS})");
            diag.write(
                HookCode::HookUsage,
                "allow",
                &msg,
                Some(json!({"args": args.len()})),
            );
            return 0;
        }
    };
    if io.stdin_is_terminal {
        let _ = writeln!(
            io.stderr,
            "evidence-gate hook {}: reads the host's JSON payload on standard input; run it from a host's hook configuration (see `evidence-gate init`)",
            call.event.name()
        );
        return 0;
    }
    call.fault = Fault::from_env(amb);
    let capture = PanicCapture::install();
    let latch = Latch(AtomicBool::new(false));
    let watchdog = Watchdog {
        deadline: Mutex::new(Some(start + FIRST_DEADLINE)),
        cv: Condvar::new(),
    };
    let stdin_bytes = AtomicU64::new(0);
    // 0 unless a whole exit-2 block reached standard error: every failure
    // to decide or to write stays a fail-open exit 0.
    let mut status = 0u8;
    thread::scope(|s| {
        s.spawn(|| {
            if watchdog.wait() && latch.take() {
                let (tx, rx) = mpsc::channel();
                let diag = &diag;
                s.spawn(move || {
                    diag.write(
                        HookCode::HookDeadline,
                        "allow",
                        "the hook did not finish before hooks.deadline_ms; the call was allowed",
                        Some(json!({"elapsed_ms": start.elapsed().as_millis() as u64})),
                    );
                    let _ = tx.send(());
                });
                // The record may take a while on a loaded machine; the
                // deadline (4 s) plus this wait stays below the 5 s host
                // timeout `init` writes (docs/hook-contracts.md#h-1).
                let _ = rx.recv_timeout(RECORD_GRACE);
                amb.terminate(0);
            }
        });
        let env = Env {
            amb,
            diag: &diag,
            deadline: &watchdog,
            start,
        };
        let mut stdin = Counting {
            inner: &mut *io.stdin,
            read: &stdin_bytes,
        };
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| handle(&call, &env, &mut stdin)));
        match outcome {
            Ok(handled) => {
                if !latch.take() {
                    park_forever();
                }
                if let Some(t) = handled.trace {
                    debug_line(amb, io, &call, t, start);
                }
                let (stream, bytes, code): (&mut dyn Write, &[u8], u8) = match &handled.output {
                    None => (&mut *io.stdout, &[], 0),
                    Some(Output::Stdout(b)) => (&mut *io.stdout, b, 0),
                    Some(Output::Exit2(b)) => (&mut *io.stderr, b, 2),
                };
                if !bytes.is_empty() {
                    if stream
                        .write_all(bytes)
                        .and_then(|()| stream.flush())
                        .is_err()
                    {
                        diag.write(
                            HookCode::HookOutputWrite,
                            "allow",
                            "the decision could not be written to standard output",
                            Some(json!({"bytes": bytes.len()})),
                        );
                    } else {
                        status = code;
                    }
                }
            }
            Err(_) => {
                if !latch.take() {
                    park_forever();
                }
                let (message, file, line) = capture.taken();
                diag.write(
                    HookCode::HookPanic,
                    "allow",
                    "a panic was caught; the call was allowed",
                    Some(json!({"panic": cap_bytes(&message, 500), "file": file, "line": line})),
                );
            }
        }
        watchdog.disarm();
    });
    drop(capture);
    io_report::write(amb, stdin_bytes.load(Ordering::Relaxed));
    status
}

/// `EVIDENCE_GATE_DEBUG=1`: one trace line on standard error.
fn debug_line(amb: &dyn Ambient, io: &mut Io<'_>, call: &HookCall, t: Trace, start: Instant) {
    if ambient::var(amb, DEBUG_ENV).as_deref() == Some("1") {
        let _ = writeln!(
            io.stderr,
            "evidence-gate hook {}: host={} ({}) outcome={} elapsed_us={}",
            call.event.name(),
            t.host.name(),
            t.host_source.name(),
            t.outcome,
            start.elapsed().as_micros()
        );
    }
}
