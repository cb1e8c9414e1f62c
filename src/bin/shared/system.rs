//! The ambient capability the binaries grant the library: the only place that
//! touches paths on the process's own authority.

#![allow(clippy::disallowed_methods)]

use std::ffi::OsString;
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;
use evidence_gate::ambient::{Ambient, GitOutput};

// The unwinder, linked statically on linux-gnu (libgcc's `libgcc_eh.a`, under
// the GCC runtime library exception) instead of loading `libgcc_s.so.1`, whose
// constructor probes the CPU on every start: a dozen `cpuid` instructions,
// about 0.15 ms per process in a virtual machine (docs/performance.md#start-up).
// Panics unwind and are caught as before. Only the binaries do this; the
// library leaves the choice to whoever links it. The static build
// (`crt-static`) links it statically already.
#[cfg(all(
    target_os = "linux",
    target_env = "gnu",
    not(target_feature = "crt-static")
))]
#[link(name = "gcc_eh", kind = "static", modifiers = "-bundle")]
unsafe extern "C" {}

// `pow`, the one function of glibc's `libm.so.6` the binaries call (the
// progress bar's rate estimate, in `indicatif`), defined here from the `libm`
// crate (a port of musl's), so that the dynamic loader does not open, map and
// relocate `libm.so.6` on every start (docs/performance.md#start-up).
#[cfg(all(
    target_os = "linux",
    target_env = "gnu",
    not(target_feature = "crt-static")
))]
#[unsafe(no_mangle)]
extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

#[path = "small_alloc.rs"]
mod small_alloc;

#[global_allocator]
static ALLOCATOR: small_alloc::SmallAlloc = small_alloc::SmallAlloc;

/// glibc's heap, tuned for a short-lived process (docs/performance.md#allocator).
mod heap {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub fn tune() {
        use std::ffi::c_void;
        // mallopt(3) parameters and madvise(2) advice.
        const M_TRIM_THRESHOLD: i32 = -1;
        const M_TOP_PAD: i32 = -2;
        const M_MMAP_THRESHOLD: i32 = -3;
        const MADV_HUGEPAGE: i32 = 14;
        const HUGE_PAGE: usize = 2 << 20;
        // The heap a small call uses (a 5-goal hook touches about 0.3 MiB)
        // stays in ordinary pages: see below.
        const SMALL_CALL_HEAP: usize = 1 << 20;
        unsafe extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
            fn malloc(size: usize) -> *mut c_void;
            fn free(ptr: *mut c_void);
            fn sbrk(increment: isize) -> *mut c_void;
            fn madvise(addr: *mut c_void, len: usize, advice: i32) -> i32;
        }
        // SAFETY: `mallopt` only sets allocator parameters and is called
        // before any other thread exists; the block is freed at once; `sbrk(0)`
        // only reads the break; `madvise` is given whole pages inside the
        // heap, and MADV_HUGEPAGE only changes how they are backed.
        unsafe {
            // Grow the heap 32 MiB at a time (address space only; pages are
            // touched as used): a 1,000-goal plan's tree took about 150
            // `brk` calls at the default 128 KiB.
            mallopt(M_TOP_PAD, 32 << 20);
            // Never give the top of the heap back while running: the process
            // ends soon, and trimming after a large plan is freed costs
            // system calls and page faults for the next allocation.
            mallopt(M_TRIM_THRESHOLD, i32::MAX);
            // Blocks up to 4 MiB (a large plan's read buffer and its
            // serialisation) come from the heap too, not from a mapping of
            // their own that is faulted in page by page and unmapped on free.
            mallopt(M_MMAP_THRESHOLD, 4 << 20);
            // Make that growth now (a block the initial 132 KiB heap cannot
            // hold), and let the kernel back the grown heap past its first
            // MiB with transparent huge pages where the system allows them
            // on request (`madvise` mode): a 1,000-goal plan's tree then takes
            // about half the page faults. A huge page may stall its first
            // touch while the kernel compacts fragmented memory, so the first
            // MiB, all a small call (every hook on a small plan) uses, stays
            // in ordinary pages. Any failure leaves the heap as it was.
            let before = sbrk(0) as usize;
            // (Opaque to the optimiser, which would drop an unused pair.)
            let block = std::hint::black_box(malloc(256 << 10));
            free(block);
            let end = sbrk(0) as usize;
            // `sbrk` answers (void *) -1 on failure: check before any sum.
            let from = before
                .checked_add(SMALL_CALL_HEAP)
                .and_then(|b| b.checked_next_multiple_of(HUGE_PAGE));
            if let Some(from) = from
                && end != usize::MAX
            {
                let to = end - end % HUGE_PAGE;
                if to > from {
                    madvise(from as *mut c_void, to - from, MADV_HUGEPAGE);
                }
            }
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub fn tune() {}
}

pub struct System {
    authority: cap_std::AmbientAuthority,
}

impl System {
    pub fn new() -> System {
        System {
            authority: cap_std::ambient_authority(),
        }
    }
}

impl Ambient for System {
    fn open_dir(&self, path: &Path) -> io::Result<Dir> {
        Dir::open_ambient_dir(path, self.authority)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        Dir::create_ambient_dir_all(path, self.authority)
    }
    fn current_dir(&self) -> io::Result<PathBuf> {
        std::env::current_dir()
    }
    fn var_os(&self, key: &str) -> Option<OsString> {
        std::env::var_os(key)
    }
    fn current_exe(&self) -> io::Result<PathBuf> {
        std::env::current_exe()
    }
    fn terminate(&self, code: i32) -> ! {
        std::process::exit(code)
    }
    fn git(&self, dir: &Path, args: &[&str]) -> io::Result<GitOutput> {
        // Plumbing only (`rev-parse`, `ls-tree`, `cat-file blob`): no pager,
        // no optional locks, no prompt, pathspecs taken literally.
        let out = std::process::Command::new("git")
            .arg("--no-pager")
            .arg("--literal-pathspecs")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(std::process::Stdio::null())
            .output()?;
        Ok(GitOutput {
            success: out.status.success(),
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }
}

/// Runs the CLI on the real process streams; returns the exit code.
pub fn run() -> u8 {
    heap::tune();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // A hook decides while its watchdog thread runs, so every `free` takes
    // the allocator's lock, and it ends right after its answer: a large
    // plan's tree is left to the operating system instead of freed node by
    // node, up to this estimate (two copies of a 2,000-goal plan). The other
    // commands run on one thread and go on allocating after a plan is done
    // with, reusing what it freed: leaving it there costs them fresh pages
    // (`record-evidence` at 1,000 goals +1.5 ms), so they free.
    if evidence_gate::cli::is_hook_call(&args) {
        evidence_gate::goals::leave_plans_to_process_end(64 << 20);
    }
    // Threads hashing and parsing ledger records (0 or unset: every core);
    // `1` times the same code on one thread (benches/perf.rs). Findings do
    // not depend on it.
    if let Some(n) = std::env::var("EVIDENCE_GATE_AUDIT_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        evidence_gate::audit::set_verify_threads(n);
    }
    let system = System::new();
    let stdin = io::stdin();
    let stdout = io::stdout();
    let stderr = io::stderr();
    let mut io = evidence_gate::cli::Io {
        stdin_is_terminal: stdin.is_terminal(),
        stdout_is_terminal: stdout.is_terminal(),
        stderr_is_terminal: stderr.is_terminal(),
        stdin: &mut stdin.lock(),
        stdout: &mut stdout.lock(),
        stderr: &mut stderr.lock(),
    };
    evidence_gate::cli::main(args, &system, &mut io)
}

/// The entry point where the standard library starts the process.
#[cfg(any(test, not(all(target_os = "linux", target_env = "gnu"))))]
pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run())
}

/// The entry point the C runtime calls on linux-gnu, where the binaries are
/// `no_main`: [`entry`].
#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    entry()
}

/// The process's entry on linux-gnu, called by the C runtime instead of the
/// standard library's (the binaries are `no_main` there).
///
/// The standard library's start-up and exit cost about 0.1 ms per process
/// here, most of it installing its stack overflow handler: finding the main
/// thread's stack reads and parses `/proc/self/maps`, then an alternate
/// signal stack is mapped, guarded, and unmapped at exit
/// (docs/performance.md#start-up). This keeps what the binaries rely on:
///
/// - standard input, output and error are open: one that is closed is
///   opened on `/dev/null` before anything else, so that no file the call
///   opens (a ledger, a plan) can take its number and receive its output;
/// - `SIGPIPE` is ignored, so writing to a closed pipe is an error the
///   caller handles, not the end of the process;
/// - a panic that escapes ends the process with status 101;
/// - standard output is flushed before the process exits.
///
/// A stack overflow ends the process with `SIGSEGV` instead of a message
/// and `SIGABRT`.
#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
fn entry() -> std::ffi::c_int {
    use std::io::Write;
    stdio::keep_open();
    stdio::ignore_sigpipe();
    let code = std::panic::catch_unwind(run).unwrap_or(101);
    let _ = io::stdout().flush();
    std::ffi::c_int::from(code)
}

#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
mod stdio {
    use std::ffi::{c_char, c_int, c_short, c_ulong};

    #[repr(C)]
    struct PollFd {
        fd: c_int,
        events: c_short,
        revents: c_short,
    }

    const POLLNVAL: c_short = 0x20;
    const O_RDWR: c_int = 2;
    const F_GETFD: c_int = 1;
    const EINTR: c_int = 4;
    const EBADF: c_int = 9;
    const SIGPIPE: c_int = 13;
    const SIG_IGN: usize = 1;

    unsafe extern "C" {
        fn poll(fds: *mut PollFd, nfds: c_ulong, timeout: c_int) -> c_int;
        fn open(path: *const c_char, flags: c_int, ...) -> c_int;
        fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
        fn signal(signum: c_int, handler: usize) -> usize;
        fn __errno_location() -> *mut c_int;
        fn abort() -> !;
    }

    /// Opens `/dev/null` on each of descriptors 0, 1 and 2 that is closed
    /// (in order, so each open takes the lowest closed number); aborts when
    /// that fails, as the standard library's start-up does.
    pub fn keep_open() {
        let mut fds = [0, 1, 2].map(|fd| PollFd {
            fd,
            events: 0,
            revents: 0,
        });
        // SAFETY: `poll` reads and writes the three entries it is given;
        // `__errno_location` is the calling thread's errno.
        let closed: [bool; 3] = loop {
            if unsafe { poll(fds.as_mut_ptr(), 3, 0) } != -1 {
                break fds.map(|p| p.revents & POLLNVAL != 0);
            }
            match unsafe { *__errno_location() } {
                EINTR => continue,
                // `poll` unavailable (a sandbox, a resource limit): ask each.
                // SAFETY: F_GETFD only reads the descriptor's flags.
                _ => {
                    break [0, 1, 2].map(|fd| {
                        let failed = unsafe { fcntl(fd, F_GETFD) } == -1;
                        failed && unsafe { *__errno_location() } == EBADF
                    });
                }
            }
        };
        for is_closed in closed {
            // SAFETY: a NUL-terminated path; the descriptor is kept open
            // for the life of the process on purpose.
            if is_closed && unsafe { open(c"/dev/null".as_ptr(), O_RDWR) } == -1 {
                unsafe { abort() }
            }
        }
    }

    /// `SIGPIPE` ignored: a write to a closed pipe fails with `EPIPE`.
    pub fn ignore_sigpipe() {
        // SAFETY: setting a signal's disposition to "ignore" installs no
        // handler; no other thread exists yet.
        unsafe {
            signal(SIGPIPE, SIG_IGN);
        }
    }
}
