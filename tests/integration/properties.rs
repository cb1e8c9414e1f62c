//! Property tests: path validation cannot name anything outside the root, and
//! arbitrary bytes never panic a parser of outside input.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;

use evidence_gate::evidence::payload;
use evidence_gate::rules::{Layer, RuleSet};
use evidence_gate::sandbox::open::{FileChecks, open_leaf};
use evidence_gate::sandbox::{PathLimits, RelPath};
use proptest::prelude::*;

fn component() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just(String::new()),
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("in".to_owned()),
        Just("link".to_owned()),
        Just("out".to_owned()),
        Just("file.txt".to_owned()),
        Just("C:".to_owned()),
        Just("a\\..".to_owned()),
        Just("\u{0}".to_owned()),
        "[a-z.]{1,4}",
    ]
}

fn path_string() -> impl Strategy<Value = String> {
    (
        prop::bool::ANY,
        prop::collection::vec(component(), 1..6),
        prop::bool::ANY,
    )
        .prop_map(|(abs, comps, trailing)| {
            let mut s = comps.join("/");
            if abs {
                s.insert(0, '/');
            }
            if trailing {
                s.push('/');
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn accepted_paths_are_lexically_confined(s in path_string()) {
        if let Ok(p) = RelPath::parse(&s, PathLimits::default()) {
            prop_assert!(!p.as_str().starts_with('/'));
            prop_assert!(!p.as_str().contains('\\'));
            let mut depth: i64 = 0;
            for c in p.components() {
                prop_assert!(!c.is_empty() && c != "." && c != "..");
                prop_assert!(!c.chars().any(char::is_control));
                depth += 1;
            }
            prop_assert!(depth >= 1);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_payload_parser(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = payload::parse(&bytes, 1024 * 1024);
    }

    #[test]
    fn json_shaped_garbage_never_panics_the_payload_parser(s in r#"\{("[a-z]{1,8}":(1|"x"|\[\]|\{\}|null|true),?){0,6}\}"#) {
        let _ = payload::parse(s.as_bytes(), 1024 * 1024);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_rules_loader(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = RuleSet::load(&[Layer { name: "fuzz.json", bytes: &bytes }]);
    }

    #[test]
    fn rules_shaped_garbage_never_panics_the_rules_loader(s in r#"\{"evidence":\{("(evidenceRoot|hardLinks|limits|deliverables|placeholders)":("\.\./x"|1|\{\}|\[\]|"allow"),?){0,4}\}\}"#) {
        let _ = RuleSet::load(&[Layer { name: "fuzz.json", bytes: s.as_bytes() }]);
    }
}

/// Every inode physically inside `dir`, found without following symlinks.
fn inodes_inside(dir: &std::path::Path, out: &mut HashSet<(u64, u64)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        if m.file_type().is_symlink() {
            continue;
        }
        out.insert((m.dev(), m.ino()));
        if m.is_dir() {
            inodes_inside(&e.path(), out);
        }
    }
}

#[test]
fn no_accepted_path_opens_anything_outside_the_root() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("file.txt"), "outside\n").unwrap();
    std::fs::create_dir(outside.path().join("a")).unwrap();
    std::fs::write(outside.path().join("a/file.txt"), "outside\n").unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join("in/a")).unwrap();
    std::fs::write(r.join("in/file.txt"), "in\n").unwrap();
    std::fs::write(r.join("in/a/file.txt"), "in\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), r.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("file.txt"), r.join("in/link")).unwrap();
    std::os::unix::fs::symlink("../..", r.join("in/a/b")).unwrap();
    std::os::unix::fs::symlink("in", r.join("link")).unwrap();
    let mut inside = HashSet::new();
    inodes_inside(r, &mut inside);
    let dir = cap_std::fs::Dir::open_ambient_dir(r, cap_std::ambient_authority()).unwrap();
    let checks = FileChecks::default();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 2000,
        ..ProptestConfig::default()
    });
    runner
        .run(&path_string(), |s| {
            if let Ok(p) = RelPath::parse(&s, PathLimits::default())
                && let Ok((_, meta)) = open_leaf(&dir, &p)
            {
                use cap_fs_ext::MetadataExt as _;
                prop_assert!(
                    inside.contains(&(meta.dev(), meta.ino())),
                    "{s} opened something outside"
                );
                let _ = evidence_gate::sandbox::open::check_handle(&meta, &checks);
            }
            Ok(())
        })
        .unwrap();
}
