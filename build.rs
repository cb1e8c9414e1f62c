//! Build script: links the command-line binaries as static, position-dependent
//! executables on Linux with glibc, and compiles the routing view of the
//! embedded profiles into a table.
//!
//! A hook runs the binary on every agent turn, so what happens before `main`
//! is paid every time (docs/performance.md#start-up):
//!
//! - A position-independent executable (the toolchain's default) is relocated
//!   on every start: about 17,600 pointers in 330 KB of
//!   read-only-after-relocation data, which copies about 80 pages per process,
//!   0.3 ms of a 2 ms call. A position-dependent executable has those
//!   pointers resolved at link time.
//! - A dynamically linked one has the dynamic loader map `libc.so.6`,
//!   relocate it and resolve every C function the binary calls: 0.17 to
//!   0.31 ms per call. A static executable starts at its own entry point.
//!
//! The library and the tests are unaffected (the flags are given to binaries
//! only). Set `EVIDENCE_GATE_DYNAMIC=1` when building to link `libc`
//! dynamically (still position-dependent), or `EVIDENCE_GATE_PIE=1` to keep
//! the toolchain's default, a dynamic position-independent executable (for
//! example where a distribution requires every executable to be PIE). The
//! build tells the crates which it chose in `EVIDENCE_GATE_LINKAGE`
//! (`static` or `dynamic`), which a test checks against the binaries.
//!
//! The functions a call runs are laid out together (`link_order`).
//!
//! Every goal-engine command line is routed by the profiles' names, their
//! multi-call names and parent commands (`rules/profiles/*.json`). Decoding
//! those files took about 0.09 ms of a 2.7 ms call, every call; the build
//! writes what routing reads as Rust data (`$OUT_DIR/route_table.rs`), and a
//! unit test checks it against the embedded files. The same goes for what
//! every goal-loop hook reads of each profile before it knows which one
//! applies (`$OUT_DIR/profile_heads.rs`).

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let profiles = read_profiles();
    route_table(&profiles);
    profile_heads(&profiles);
    println!("cargo::rerun-if-env-changed=EVIDENCE_GATE_PIE");
    println!("cargo::rerun-if-env-changed=EVIDENCE_GATE_DYNAMIC");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let static_crt = var("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|f| f == "crt-static");
    let mut linkage = if static_crt { "static" } else { "dynamic" };
    if var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && !static_crt
        && std::env::var_os("EVIDENCE_GATE_PIE").is_none()
    {
        println!("cargo::rustc-link-arg-bins=-no-pie");
        if std::env::var_os("EVIDENCE_GATE_DYNAMIC").is_none()
            && var("HOST") == var("TARGET")
            && link_bins_statically()
        {
            linkage = "static";
        }
    }
    println!("cargo::rustc-env=EVIDENCE_GATE_LINKAGE={linkage}");
    let order = link_order();
    println!(
        "cargo::rustc-env=EVIDENCE_GATE_LINK_ORDER={}",
        if order { "on" } else { "off" }
    );
}

/// The functions a call runs, listed in `src/bin/shared/link-order.txt`, are
/// laid out together at the start of the binaries' code, in that order
/// (`--symbol-ordering-file`). Left where the compiler put them, the few
/// thousand functions a 5-goal call runs are spread over most of its 9 MB of
/// code: about 80 page faults, each mapping 64 KiB around the page, and a
/// translation-cache miss on most calls. Together they fit in about 1.7 MB
/// (docs/performance.md#code-layout): 0.1 to 0.5 ms of a 1 to 2.5 ms call.
///
/// The file names functions by their mangled names, which change with the
/// compiler's version and a dependency's, and for some functions with the
/// code around them: a name the binary no longer has is skipped, and
/// `.ci/link-order` (through `PERF_LINK_ORDER`, benches/perf.rs) writes the
/// file anew. The
/// option is LLD's, the linker Rust uses by default for
/// x86_64-unknown-linux-gnu from 1.90 on; with another linker configured (or
/// `EVIDENCE_GATE_LINK_ORDER=0`) the layout is left to the linker.
fn link_order() -> bool {
    println!("cargo::rerun-if-env-changed=EVIDENCE_GATE_LINK_ORDER");
    println!("cargo::rerun-if-changed=src/bin/shared/link-order.txt");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let rustflags = var("CARGO_ENCODED_RUSTFLAGS");
    let other_linker = std::env::var_os("RUSTC_LINKER").is_some()
        || ["linker", "link-self-contained", "fuse-ld"]
            .iter()
            .any(|f| rustflags.contains(f));
    let minor = std::process::Command::new(var("RUSTC"))
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            let v = String::from_utf8(o.stdout).ok()?;
            v.split_whitespace()
                .nth(1)?
                .split('.')
                .nth(1)?
                .parse::<u32>()
                .ok()
        })
        .unwrap_or(0);
    let file =
        std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("src/bin/shared/link-order.txt");
    if var("TARGET") != "x86_64-unknown-linux-gnu"
        || minor < 90
        || other_linker
        || var("EVIDENCE_GATE_LINK_ORDER") == "0"
        || !file.is_file()
    {
        return false;
    }
    println!(
        "cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        file.display()
    );
    println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    true
}

/// The C libraries that the standard library and `libc` name on linux-gnu
/// (`-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc`), each with the static
/// archive that stands in for it.
const STATIC_ARCHIVES: &[(&str, &str)] = &[
    ("c", "libc.a"),
    ("m", "libm.a"),
    ("pthread", "libpthread.a"),
    ("dl", "libdl.a"),
    ("rt", "librt.a"),
    ("util", "libutil.a"),
    // The unwinder comes from `libgcc_eh.a` (src/bin/shared/system.rs);
    // `libgcc.a` holds the rest of what `libgcc_s.so.1` gives.
    ("gcc_s", "libgcc.a"),
    // Not named by the standard library: `libc.a` calls into these, and
    // GNU ld searches an archive only for what is undefined when it reaches
    // it, so `-lc` stands for a group of the three (below).
    ("gcc_eh", "libgcc_eh.a"),
];

/// Links the binaries as static executables, as `-C target-feature=+crt-static`
/// would, but for the binaries only: `crt-static` in `RUSTFLAGS` applies to
/// procedural macros too, which cannot be built so unless every build names
/// `--target`.
///
/// The standard library asks for its C libraries by name after
/// `-Bdynamic`. A directory of this build's own, searched before the
/// system's, holds the static archive under each of those names (a symbolic
/// link to the archive the C compiler would use), so the linker finds no
/// shared library, and `-static` makes the compiler driver link a static
/// executable with the start files for one. Returns false, leaving the
/// binaries dynamic, where an archive is missing (a system without glibc's
/// static libraries, such as Fedora without `glibc-static`).
#[cfg(unix)]
#[allow(clippy::disallowed_methods)]
fn link_bins_statically() -> bool {
    use std::path::PathBuf;
    let archive = |name: &str| -> Option<PathBuf> {
        let out = std::process::Command::new("cc")
            .arg(format!("-print-file-name={name}"))
            .output()
            .ok()?;
        let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        (out.status.success() && path.is_absolute() && path.is_file()).then_some(path)
    };
    let Some(found) = STATIC_ARCHIVES
        .iter()
        .map(|(lib, file)| archive(file).map(|path| (lib, path)))
        .collect::<Option<Vec<_>>>()
    else {
        println!(
            "cargo::warning=glibc's static archives were not found: the binaries link libc dynamically"
        );
        return false;
    };
    // A path a link script cannot quote leaves the binaries dynamic.
    if found
        .iter()
        .any(|(_, p)| p.to_str().is_none_or(|s| s.contains(['"', '\n'])))
    {
        println!(
            "cargo::warning=a static archive's path cannot be quoted: the binaries link libc dynamically"
        );
        return false;
    }
    let dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("static-libs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the static archive directory");
    for (lib, path) in &found {
        if **lib == "c" {
            continue;
        }
        std::os::unix::fs::symlink(path, dir.join(format!("lib{lib}.a")))
            .expect("link a static archive");
    }
    // `-lc` finds a linker script (GNU ld and LLD read a library file that
    // is neither an object nor an archive as one) that groups the C library
    // with the compiler's runtime: GNU ld searches a group until nothing new
    // resolves, as LLD does any archive.
    let quoted = |name: &str| {
        let (_, p) = found.iter().find(|(l, _)| **l == name).expect("found");
        format!("\"{}\"", p.display())
    };
    let group = format!(
        "/* evidence-gate build.rs: the C library with the compiler's runtime */\n\
         GROUP ( {} {} {} )\n",
        quoted("c"),
        quoted("gcc_s"),
        quoted("gcc_eh")
    );
    std::fs::write(dir.join("libc.a"), group).expect("write the C library's link script");
    println!("cargo::rustc-link-arg-bins=-L{}", dir.display());
    println!("cargo::rustc-link-arg-bins=-static");
    true
}

#[cfg(not(unix))]
fn link_bins_statically() -> bool {
    false
}

/// The embedded profile files (`rules/profiles/*.json`), parsed, in
/// file-name order. (A build script reads the source tree and writes its
/// output directory by path: the sandboxed handles are for the runtime.)
#[allow(clippy::disallowed_methods)]
fn read_profiles() -> Vec<(std::path::PathBuf, serde_json::Value)> {
    println!("cargo::rerun-if-changed=rules/profiles");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir("rules/profiles")
        .expect("rules/profiles")
        .map(|e| e.expect("rules/profiles entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            println!("cargo::rerun-if-changed={}", f.display());
            let text = std::fs::read_to_string(&f).expect("profile file");
            let v: serde_json::Value = serde_json::from_str(&text).expect("profile JSON");
            (f, v)
        })
        .collect()
}

/// `&["a", "b"]` for a JSON array of strings (absent: empty).
fn str_slice(v: Option<&serde_json::Value>) -> String {
    let items: Vec<String> = v
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| format!("{:?}", s.as_str().expect("a string")))
                .collect()
        })
        .unwrap_or_default();
    format!("&[{}]", items.join(", "))
}

/// A profile's string field `k`.
fn str_field<'a>(f: &std::path::Path, v: &'a serde_json::Value, k: &str) -> &'a str {
    v.pointer(k)
        .and_then(serde_json::Value::as_str)
        .unwrap_or_else(|| panic!("{}: `{k}` must be a string", f.display()))
}

/// Writes `$OUT_DIR/<name>`.
#[allow(clippy::disallowed_methods)]
fn write_out(name: &str, text: &str) {
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join(name);
    std::fs::write(dest, text).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

/// Writes `$OUT_DIR/route_table.rs`: one `RouteInfo` per profile file, in
/// file-name order.
fn route_table(profiles: &[(std::path::PathBuf, serde_json::Value)]) {
    let mut out = String::from(
        "// Generated by build.rs from rules/profiles/*.json: do not edit.\n\
         pub(super) static ROUTES: &[RouteInfo] = &[\n",
    );
    for (f, v) in profiles {
        let word = v
            .pointer("/compat/subcommandWord")
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| "None".to_owned(), |w| format!("Some({w:?})"));
        out.push_str(&format!(
            "    RouteInfo {{ name: {:?}, display_name: {:?}, invocation_names: {}, parent_commands: {}, subcommand_word: {word} }},\n",
            str_field(f, v, "/name"),
            str_field(f, v, "/displayName"),
            str_slice(v.get("invocationNames")),
            str_slice(v.get("parentCommands")),
        ));
    }
    out.push_str("];\n");
    write_out("route_table.rs", &out);
}

/// Writes `$OUT_DIR/profile_heads.rs`: what a goal-loop hook reads of every
/// profile before it knows which applies (its name, state directory,
/// steering markers and team-worker environment markers), one `HeadInfo` per
/// profile file, in file-name order.
fn profile_heads(profiles: &[(std::path::PathBuf, serde_json::Value)]) {
    let mut out = String::from(
        "// Generated by build.rs from rules/profiles/*.json: do not edit.\n\
         pub(super) static HEADS: &[HeadInfo] = &[\n",
    );
    for (f, v) in profiles {
        let env: Vec<String> = v
            .pointer("/team/workerEnv")
            .and_then(serde_json::Value::as_array)
            .unwrap_or_else(|| panic!("{}: `/team/workerEnv` must be an array", f.display()))
            .iter()
            .map(|w| {
                format!(
                    "({:?}, {})",
                    str_field(f, w, "/name"),
                    str_slice(w.get("values"))
                )
            })
            .collect();
        out.push_str(&format!(
            "    HeadInfo {{ name: {:?}, state_dir: {:?}, directive_markers: {}, worker_env: &[{}] }},\n",
            str_field(f, v, "/name"),
            str_field(f, v, "/stateDir"),
            str_slice(v.pointer("/steering/directiveMarkers")),
            env.join(", "),
        ));
    }
    out.push_str("];\n");
    write_out("profile_heads.rs", &out);
}
