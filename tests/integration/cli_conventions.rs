//! Command-line conventions: did-you-mean for mistyped
//! subcommands, `--json` on `verify`, plurals, errors that name their fix,
//! completions and the man page, colour variables, a read-only `doctor`,
//! the repository root found from a subdirectory, and exit 130 on Ctrl-C.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{Repo, bin, run_in};

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/payloads/example")
}

#[test]
fn a_mistyped_subcommand_names_the_closest_one_and_exits_2() {
    let r = Repo::new();
    let run = r.run("evidence-gate", &["vrify"], None);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: unknown subcommand `vrify`; did you mean `verify`?"),
        "{}",
        run.stderr
    );
    let run = r.run("evidence-gate", &["gate", "chek", "g.json"], None);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("unknown subcommand `chek`; did you mean `check`?"),
        "{}",
        run.stderr
    );
    // Nothing close: no guess, still the fix.
    let run = r.run("evidence-gate", &["zzzzzz"], None);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("unknown subcommand `zzzzzz`"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);
    assert!(run.stderr.contains("--help"), "{}", run.stderr);
}

/// The goal engine exits 1 on every error (goal-engine.md §4.1), the
/// unknown subcommand included; the guess is on stderr, the help on stdout.
#[test]
fn the_goal_engine_suggests_a_subcommand_too() {
    let r = Repo::new();
    let run = r.run("evidence-gate", &["ulw-loop", "stauts"], None);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "[ulw-loop] unknown subcommand `stauts`; did you mean `status`?\n"
    );
    assert!(
        run.stdout.contains("create-goals"),
        "the help: {}",
        run.stdout
    );
    let run = r.run("evidence-gate", &["ulw-loop", "stauts", "--json"], None);
    assert_eq!(run.code, 1);
    let v = run.json();
    assert_eq!(v["error"]["code"], "ULW_LOOP_SUBCOMMAND_UNKNOWN");
    assert_eq!(
        v["error"]["message"],
        "Unknown ulw-loop subcommand: stauts. Did you mean `status`?"
    );
}

#[test]
fn verify_takes_json_like_every_other_command() {
    let r = Repo::new();
    let root = example();
    let payload = root.join("evidence.json");
    let args = |extra: &str| {
        vec![
            "verify".to_owned(),
            "--root".to_owned(),
            root.to_str().unwrap().to_owned(),
            payload.to_str().unwrap().to_owned(),
            extra.to_owned(),
        ]
    };
    let a = args("--json");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let json = r.run("evidence-gate", &a, None);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let b = args("--format=json");
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    let format = r.run("evidence-gate", &b, None);
    assert_eq!(json.stdout, format.stdout);
    assert_eq!(json.json()["verdict"], "pass");
    assert_eq!(json.stderr, "", "no progress bar without a terminal");
    let run = r.run(
        "verify-evidence",
        &["--json", "--format", "sarif", payload.to_str().unwrap()],
        None,
    );
    assert_eq!(run.code, 2, "--json and another --format conflict");
}

/// `NOTHING_TO_VERIFY` names the flag that accepts an empty repository.
#[test]
fn nothing_to_verify_names_allow_empty() {
    let r = Repo::new();
    r.mkdir(".git");
    let run = r.run("verify-evidence", &[], None);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("NOTHING_TO_VERIFY"), "{}", run.stdout);
    assert!(run.stdout.contains("pass --allow-empty"), "{}", run.stdout);
    assert_eq!(r.run("verify-evidence", &["--allow-empty"], None).code, 0);
}

/// `verify-evidence` and the goal engine work on the repository
/// root from a subdirectory; `--root` still wins.
#[test]
fn the_repository_root_is_found_from_a_subdirectory() {
    let r = Repo::new();
    r.mkdir(".git");
    let sub = r.mkdir("src/deep");
    let home = tempfile::tempdir().unwrap();
    let mut env = crate::goals_support::clean_env();
    let home_s = home.path().to_str().unwrap().to_owned();
    let config_s = r.config.path().to_str().unwrap().to_owned();
    env.retain(|(k, _)| !matches!(*k, "HOME" | "XDG_STATE_HOME" | "XDG_CONFIG_HOME"));
    let mut env: Vec<(&str, &str)> = env;
    env.extend([
        ("HOME", home_s.as_str()),
        ("XDG_STATE_HOME", home_s.as_str()),
        ("XDG_CONFIG_HOME", config_s.as_str()),
    ]);
    let created = run_in(
        &sub,
        "evidence-gate",
        &["ulw-loop", "create-goals", "--brief", "- a", "--json"],
        None,
        &env,
    );
    assert_eq!(created.code, 0, "{}{}", created.stdout, created.stderr);
    assert!(
        r.join(".omo/ulw-loop/goals.json").is_file(),
        "state at the root"
    );
    assert!(!sub.join(".omo").exists(), "nothing in the subdirectory");
    let status = run_in(
        &sub,
        "evidence-gate",
        &["ulw-loop", "status", "--json"],
        None,
        &env,
    );
    assert_eq!(status.code, 0, "{}", status.stdout);
    // The audit from the subdirectory sees the root's state.
    let audit = run_in(&sub, "verify-evidence", &["--format", "json"], None, &env);
    let v = audit.json();
    assert_ne!(
        audit.codes(),
        ["NOTHING_TO_VERIFY"],
        "the root's state was audited: {v}"
    );
    // `--root .` names the subdirectory itself: nothing there.
    let here = run_in(
        &sub,
        "verify-evidence",
        &["--root", ".", "--format", "json"],
        None,
        &env,
    );
    assert_eq!(here.codes(), ["NOTHING_TO_VERIFY"]);
}

#[test]
fn completions_and_the_man_page_cover_every_command() {
    let r = Repo::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = r.run("evidence-gate", &["completions", shell], None);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        for word in [
            "verify",
            "doctor",
            "ulw-loop",
            "create-goals",
            "subagent-stop",
            "allow-empty",
        ] {
            assert!(run.stdout.contains(word), "{shell} lacks {word}");
        }
    }
    let run = r.run("evidence-gate", &["completions", "tcsh"], None);
    assert_eq!(run.code, 2);
    let man = r.run("evidence-gate", &["man"], None);
    assert_eq!(man.code, 0, "{}", man.stderr);
    assert!(
        man.stdout.starts_with(".ie") || man.stdout.contains(".TH"),
        "{}",
        &man.stdout[..200.min(man.stdout.len())]
    );
    for word in [
        "evidence\\-gate",
        "verify",
        "Exit status",
        "130",
        "NO_COLOR",
    ] {
        assert!(man.stdout.contains(word), "man page lacks {word}");
    }
}

#[test]
fn help_documents_the_exit_codes() {
    let r = Repo::new();
    let run = r.run("evidence-gate", &["--help"], None);
    assert_eq!(run.code, 0);
    for line in [
        "  0    success",
        "  1    blocked",
        "  2    usage error",
        "  130  interrupted",
    ] {
        assert!(run.stdout.contains(line), "{line}: {}", run.stdout);
    }
    let run = r.run("verify-evidence", &["--help"], None);
    assert!(run.stdout.contains("130 interrupted"), "{}", run.stdout);
}

/// What the help says about 130: Ctrl-C (SIGINT) ends the process at once,
/// and the shell reports 128 + 2.
#[cfg(unix)]
#[test]
fn ctrl_c_ends_the_process_with_sigint() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    unsafe extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    // A process started with SIGINT ignored keeps ignoring it (a background
    // job of a non-interactive shell, `nohup`): give the children the default
    // action, as a terminal's foreground job has it.
    let sigint_default = |c: &mut Command| {
        // SAFETY: signal() is async-signal-safe; SIGINT (2) to SIG_DFL (0).
        unsafe {
            c.pre_exec(|| {
                signal(2, 0);
                Ok(())
            })
        };
    };
    let mut verify = Command::new(bin("verify-evidence"));
    sigint_default(&mut verify);
    let mut child = verify
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(2), "{status:?}");
    let mut sh = Command::new("sh");
    sigint_default(&mut sh);
    let sh = sh.args(["-c", "kill -INT $$"]).status().unwrap();
    assert_eq!(sh.signal(), Some(2), "the shell reports it as 130");
}

#[test]
fn colour_follows_no_color_clicolor_force_and_term() {
    let r = Repo::new();
    r.write("evidence.json", "{}");
    let run = |env: &[(&str, &str)]| r.run_env("verify-evidence", &["evidence.json"], None, env);
    let forced = run(&[("CLICOLOR_FORCE", "1")]);
    assert_ne!(forced.code, 0);
    assert!(
        forced.stdout.contains("\u{1b}["),
        "forced colour: {:?}",
        forced.stdout
    );
    let plain = run(&[]);
    assert!(!plain.stdout.contains('\u{1b}'), "no terminal, no colour");
    let off = run(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!off.stdout.contains('\u{1b}'), "NO_COLOR wins");
    assert_eq!(off.stdout, plain.stdout);
}

/// Doctor is read-only: on a fresh home and a fresh repository
/// it creates no directory or file anywhere.
#[test]
fn doctor_creates_nothing() {
    let r = Repo::new();
    r.mkdir(".git");
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    let config = home.path().join("config");
    let before_repo = r.snapshot();
    let tree = |p: &Path| {
        let mut out = Vec::new();
        for e in walk(p) {
            out.push(e);
        }
        out.sort();
        out
    };
    let before_home = tree(home.path());
    for args in [
        &["doctor"][..],
        &["doctor", "--json"],
        &["doctor", "--host", "codex"],
    ] {
        let run = run_in(
            r.path(),
            "evidence-gate",
            args,
            None,
            &[
                ("HOME", home.path().to_str().unwrap()),
                ("XDG_STATE_HOME", state.to_str().unwrap()),
                ("XDG_CONFIG_HOME", config.to_str().unwrap()),
            ],
        );
        assert!(run.code <= 1, "{}", run.stderr);
        assert!(
            !run.stdout.contains("Os {") && !run.stdout.contains("kind:"),
            "no Debug text: {}",
            run.stdout
        );
    }
    assert_eq!(r.snapshot(), before_repo, "the repository is unchanged");
    assert_eq!(tree(home.path()), before_home, "the home is unchanged");
}

fn walk(p: &Path) -> Vec<String> {
    let mut out = vec![p.display().to_string()];
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

/// No Rust `Debug` formatting of errors in the command-line, doctor and
/// init modules: every message is written for a person.
#[test]
fn no_debug_formatting_of_errors_in_user_facing_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut bad = Vec::new();
    for dir in ["cli", "doctor", "init"] {
        for f in walk(&root.join(dir)) {
            if !f.ends_with(".rs") {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            for (i, line) in code.lines().enumerate() {
                if line.contains("{e:?}") || line.contains("{err:?}") || line.contains("{error:?}")
                {
                    bad.push(format!("{f}:{}: {line}", i + 1));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// On Linux with glibc the binaries are linked position-dependent (build.rs):
/// the loader has no pointers to relocate at start. `EVIDENCE_GATE_PIE` at
/// build time keeps the toolchain's position-independent default.
#[test]
#[cfg(all(
    target_os = "linux",
    target_env = "gnu",
    not(target_feature = "crt-static")
))]
fn the_binaries_start_without_relocating_themselves() {
    use std::io::Read;
    for name in ["evidence-gate", "verify-evidence"] {
        let mut header = [0u8; 18];
        std::fs::File::open(bin(name))
            .and_then(|mut f| f.read_exact(&mut header))
            .unwrap();
        assert_eq!(&header[..4], b"\x7fELF", "{name}");
        // e_type: 2 = ET_EXEC (position-dependent), 3 = ET_DYN (PIE).
        let e_type = u16::from_le_bytes([header[16], header[17]]);
        let want = if option_env!("EVIDENCE_GATE_PIE").is_some() {
            3
        } else {
            2
        };
        assert_eq!(e_type, want, "{name}: ELF type");
    }
}

/// On Linux with glibc the binaries are static executables (build.rs): no
/// dynamic loader, no library to map or symbols to resolve at start
/// (docs/performance.md#static-linking). Built with `EVIDENCE_GATE_DYNAMIC`
/// or `EVIDENCE_GATE_PIE`, or where glibc's static archives are missing, they
/// load `libc.so.6` and nothing else: the unwinder is linked statically (no
/// `libgcc_s.so.1`) and `pow`, the one `libm` function they call, is defined
/// in them (no `libm.so.6`). The dynamic loader lists what it would load when
/// `LD_TRACE_LOADED_OBJECTS` is set, as `ldd` does.
#[test]
#[cfg(all(
    target_os = "linux",
    target_env = "gnu",
    not(target_feature = "crt-static")
))]
fn the_binaries_load_no_library_but_libc() {
    use std::io::Read;
    let asked_dynamic = option_env!("EVIDENCE_GATE_DYNAMIC").is_some()
        || option_env!("EVIDENCE_GATE_PIE").is_some();
    let archives_found = [
        "libc.a",
        "libm.a",
        "libpthread.a",
        "libdl.a",
        "librt.a",
        "libutil.a",
        "libgcc.a",
        "libgcc_eh.a",
    ]
    .iter()
    .all(|a| {
        Command::new("cc")
            .arg(format!("-print-file-name={a}"))
            .output()
            .is_ok_and(|o| {
                std::path::Path::new(String::from_utf8_lossy(&o.stdout).trim()).is_absolute()
            })
    });
    let linkage = env!("EVIDENCE_GATE_LINKAGE");
    assert_eq!(
        linkage,
        if asked_dynamic || !archives_found {
            "dynamic"
        } else {
            "static"
        },
        "the build's choice of linkage"
    );
    for name in ["evidence-gate", "verify-evidence"] {
        // Program header types: 2 = PT_DYNAMIC, 3 = PT_INTERP.
        let mut elf = Vec::new();
        std::fs::File::open(bin(name))
            .and_then(|mut f| f.read_to_end(&mut elf))
            .unwrap();
        let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
        let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]);
        let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
        let types: Vec<u32> = (0..usize::from(phnum))
            .map(|i| {
                let o = phoff + i * usize::from(phentsize);
                u32::from_le_bytes(elf[o..o + 4].try_into().unwrap())
            })
            .collect();
        let dynamic = types.contains(&2) || types.contains(&3);
        assert_eq!(
            dynamic,
            linkage == "dynamic",
            "{name}: program headers {types:?}"
        );
        let out = Command::new(bin(name))
            .arg("--version")
            .env("LD_TRACE_LOADED_OBJECTS", "1")
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&out.stdout);
        if !dynamic {
            // Nothing loads it, so nothing lists: the binary just runs.
            assert!(out.status.success(), "{name}: {out:?}");
            assert!(listed.starts_with(name), "{name}: {listed}");
            continue;
        }
        let libs: Vec<&str> = listed
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|l| l.contains(".so"))
            .collect();
        assert!(
            libs.iter().any(|l| l.starts_with("libc.so")),
            "{name}: {listed}"
        );
        let other: Vec<&&str> = libs
            .iter()
            .filter(|l| {
                !l.starts_with("libc.so") && !l.contains("ld-linux") && !l.starts_with("linux-vdso")
            })
            .collect();
        assert!(other.is_empty(), "{name} loads {other:?}:\n{listed}");
    }
}

/// The functions a call runs are laid out together, in the order
/// `src/bin/shared/link-order.txt` lists them (build.rs, `link_order`), where
/// the build could give the linker that order. The test binaries are built
/// without optimisation, so most of the file's names (from the release
/// build) are not in them; those that are (the standard library's and the C
/// library's) must lie close together, in the file's order, instead of
/// spread over the code.
#[test]
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn the_functions_a_call_runs_are_laid_out_together() {
    if env!("EVIDENCE_GATE_LINK_ORDER") != "on" {
        return;
    }
    let listed: Vec<String> = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin/shared/link-order.txt"),
    )
    .unwrap()
    .lines()
    .filter(|l| !l.starts_with('#') && !l.is_empty())
    .map(str::to_owned)
    .collect();
    for name in ["evidence-gate", "verify-evidence"] {
        let elf = std::fs::read(bin(name)).unwrap();
        let functions = elf_functions(&elf);
        let (text_start, text_end) = elf_section(&elf, ".text");
        let at: std::collections::HashMap<&str, (u64, u64)> = functions
            .iter()
            .map(|(n, a, z)| (n.as_str(), (*a, *z)))
            .collect();
        let found: Vec<(u64, u64)> = listed
            .iter()
            .filter_map(|n| at.get(n.as_str()).copied())
            .filter(|(a, _)| (text_start..text_end).contains(a))
            .collect();
        // The C library's functions keep their names whatever the compiler,
        // so a static binary always has some hundreds of them; a dynamic one
        // has only the standard library's, whose names hash the compiler
        // version (none after an upgrade: nothing to judge).
        if found.len() < 100 && env!("EVIDENCE_GATE_LINKAGE") == "dynamic" {
            continue;
        }
        assert!(
            found.len() >= 100,
            "{name}: only {} listed functions found",
            found.len()
        );
        let first = found.iter().map(|f| f.0).min().unwrap();
        let last = found.iter().map(|f| f.0 + f.1).max().unwrap();
        let listed_bytes: u64 = found.iter().map(|f| f.1).sum();
        // Together: they start the code and span little more than their own
        // size (functions that share a section with one come along).
        assert!(
            first - text_start < 4096,
            "{name}: the first listed function is at +{}",
            first - text_start
        );
        assert!(
            last - first < 3 * listed_bytes + (64 << 10),
            "{name}: {} listed functions ({listed_bytes} B) spread over {} B of {} B of code",
            found.len(),
            last - first,
            text_end - text_start
        );
        // In the file's order, but for functions that share a section (a C
        // library object holds several): 84% of neighbours here, about half
        // in any other order.
        let ascending = found.windows(2).filter(|w| w[0].0 < w[1].0).count();
        assert!(
            ascending * 3 >= (found.len() - 1) * 2,
            "{name}: {ascending} of {} neighbours in the file's order",
            found.len() - 1
        );
    }
}

/// `(start, end)` of the named section of an ELF64 little-endian file.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn elf_section(elf: &[u8], want: &str) -> (u64, u64) {
    elf_sections(elf)
        .into_iter()
        .find(|s| s.0 == want)
        .map(|s| (s.1, s.1 + s.2))
        .unwrap_or_else(|| panic!("no {want} section"))
}

/// Each section's name, address, size, file offset, type and link.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn elf_sections(elf: &[u8]) -> Vec<(String, u64, u64, usize, u32, u32)> {
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
    let (shoff, shentsize, shnum, shstrndx) = (
        u64_at(0x28) as usize,
        usize::from(u16_at(0x3a)),
        usize::from(u16_at(0x3c)),
        usize::from(u16_at(0x3e)),
    );
    let header = |i: usize| shoff + i * shentsize;
    let names = u64_at(header(shstrndx) + 0x18) as usize;
    let c_str = |o: usize| {
        let end = elf[o..].iter().position(|&b| b == 0).unwrap();
        String::from_utf8_lossy(&elf[o..o + end]).into_owned()
    };
    (0..shnum)
        .map(|i| {
            let h = header(i);
            (
                c_str(names + u32_at(h) as usize),
                u64_at(h + 0x10),
                u64_at(h + 0x20),
                u64_at(h + 0x18) as usize,
                u32_at(h + 4),
                u32_at(h + 0x28),
            )
        })
        .collect()
}

/// The function symbols (`STT_FUNC`) of the symbol table: name, address, size.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn elf_functions(elf: &[u8]) -> Vec<(String, u64, u64)> {
    let sections = elf_sections(elf);
    // SHT_SYMTAB = 2; its link is the string table.
    let Some(symtab) = sections.iter().find(|s| s.4 == 2) else {
        return Vec::new();
    };
    let strtab = sections[symtab.5 as usize].3;
    let (off, size) = (symtab.3, symtab.2 as usize);
    (off..off + size)
        .step_by(24)
        .filter(|&o| elf[o + 4] & 0xf == 2)
        .map(|o| {
            let name = strtab + u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) as usize;
            let end = elf[name..].iter().position(|&b| b == 0).unwrap();
            (
                String::from_utf8_lossy(&elf[name..name + end]).into_owned(),
                u64::from_le_bytes(elf[o + 8..o + 16].try_into().unwrap()),
                u64::from_le_bytes(elf[o + 16..o + 24].try_into().unwrap()),
            )
        })
        .collect()
}

/// A closed standard output is reopened on `/dev/null` before the binary
/// opens anything: otherwise the first file it opens (the workspace, a
/// ledger) would take descriptor 1 and receive what it prints. An agent can
/// start the tool with its output closed; the hook waiting for its payload
/// shows which file descriptor 1 is.
#[test]
#[cfg(target_os = "linux")]
fn a_closed_standard_output_is_reopened_on_dev_null() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new("sh")
        .args(["-c", "exec \"$0\" hook stop --host codex >&-"])
        .arg(bin("evidence-gate"))
        .current_dir(tmp.path())
        .env("HOME", tmp.path())
        .env("XDG_STATE_HOME", tmp.path().join("state"))
        .env("XDG_CONFIG_HOME", tmp.path().join("config"))
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // `sh` replaces itself with the binary: the child's pid is the binary's
    // once its executable is.
    let exe = std::path::PathBuf::from(format!("/proc/{}/exe", child.id()));
    let fd1 = std::path::PathBuf::from(format!("/proc/{}/fd/1", child.id()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut seen = None;
    while std::time::Instant::now() < deadline {
        let is_binary = std::fs::read_link(&exe)
            .is_ok_and(|p| p.file_name() == bin("evidence-gate").file_name());
        // The binary has started reading its payload once it has a
        // descriptor 1 at all (it had none after `>&-`).
        if is_binary && let Ok(target) = std::fs::read_link(&fd1) {
            seen = Some(target);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(b"{}");
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(
        seen.as_deref(),
        Some(Path::new("/dev/null")),
        "descriptor 1 of the running hook"
    );
    assert!(status.success(), "{status:?}");
}

/// Writing to a pipe nobody reads is an error the binary reports, not a
/// `SIGPIPE` that ends it.
#[test]
#[cfg(unix)]
fn a_pipe_nobody_reads_does_not_end_the_process_by_signal() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = Command::new(bin("evidence-gate"))
        .arg("--help")
        .stdout(writer)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.signal(), None, "{status:?}");
    assert!(status.code().is_some(), "{status:?}");
}
