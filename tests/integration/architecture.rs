//! The module graph of the library (docs/architecture.md#module-graph): every
//! `crate::…`, `super::…` and `self::…` path in `src/**/*.rs` (comments and
//! string literals removed) is an edge between modules. The top-level modules
//! form no cycle, the command-line edge (`cli`, `doctor`, `init`) is imported
//! by nothing below it, and the children of each top-level module form no
//! cycle among themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules that drive the library from the command line; nothing below them
/// imports them.
const EDGE: &[&str] = &["cli", "doctor", "init"];

/// A module path relative to the crate root: `["goals", "steer", "apply"]`.
type ModPath = Vec<String>;

struct Source {
    /// The module the file defines.
    module: ModPath,
    /// Its text without comments and with every string and char literal
    /// emptied.
    code: String,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn sources() -> Vec<Source> {
    fn walk(dir: &Path, rel: &mut Vec<String>, out: &mut Vec<Source>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if path.is_dir() {
                if rel.is_empty() && name == "bin" {
                    continue;
                }
                rel.push(name);
                walk(&path, rel, out);
                rel.pop();
            } else if let Some(stem) = name.strip_suffix(".rs") {
                if rel.is_empty() && stem == "lib" {
                    continue;
                }
                let mut module = rel.clone();
                if stem != "mod" {
                    module.push(stem.to_string());
                }
                let text = std::fs::read_to_string(&path).unwrap();
                out.push(Source {
                    module,
                    code: strip(&text),
                });
            }
        }
    }
    let mut out = Vec::new();
    walk(&src_dir(), &mut Vec::new(), &mut out);
    assert!(out.len() > 50, "the source tree was not found");
    out
}

/// Removes comments and empties string and char literals, keeping lifetimes.
fn strip(s: &str) -> String {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            continue;
        }
        let prev_ident = i > 0 && ident(b[i - 1]);
        // Raw strings: r"…", r#"…"#, br#"…"#.
        if !prev_ident && (c == 'r' || (c == 'b' && next == Some('r'))) {
            let mut j = if c == 'b' { i + 2 } else { i + 1 };
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) == Some(&'"') {
                j += 1;
                loop {
                    if b[j] == '"' && (1..=hashes).all(|k| b.get(j + k) == Some(&'#')) {
                        i = j + 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.push_str("\"\"");
                continue;
            }
        }
        if c == '"' {
            let mut j = i + 1;
            while b[j] != '"' {
                j += if b[j] == '\\' { 2 } else { 1 };
            }
            i = j + 1;
            out.push_str("\"\"");
            continue;
        }
        if c == '\'' {
            // A char literal ('x', '\n', '\u{..}'); otherwise a lifetime.
            let end = if next == Some('\\') {
                (i + 3..b.len()).find(|&j| b[j] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                i = end + 1;
                out.push_str("' '");
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Every module path a file names, resolved against the file's module
/// (inline `mod name { … }` blocks included).
fn referenced_paths(src: &Source) -> Vec<ModPath> {
    let b: Vec<char> = src.code.chars().collect();
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    let word_at = |i: usize| -> String {
        b[i..]
            .iter()
            .take_while(|c| ident_char(**c))
            .collect::<String>()
    };
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_whitespace() {
            i += 1;
        }
        i
    };
    let mut out = Vec::new();
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == '{' {
            depth += 1;
            if let Some(name) = pending_mod.take() {
                inline.push((depth, name));
            }
            i += 1;
            continue;
        }
        if c == '}' {
            if inline.last().is_some_and(|(d, _)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
            i += 1;
            continue;
        }
        if c == ';' {
            pending_mod = None;
        }
        let starts_word = ident_char(c) && (i == 0 || !(ident_char(b[i - 1]) || b[i - 1] == ':'));
        if !starts_word {
            i += 1;
            continue;
        }
        let word = word_at(i);
        let after = i + word.len();
        if word == "mod" {
            let j = skip_ws(after);
            pending_mod = Some(word_at(j));
            i = after;
            continue;
        }
        if !matches!(word.as_str(), "crate" | "super" | "self") {
            i = after;
            continue;
        }
        // Collect `head::seg::seg…`, stopping at a group or glob.
        let mut segs = vec![word.clone()];
        let mut j = after;
        loop {
            let k = skip_ws(j);
            if b.get(k) == Some(&':') && b.get(k + 1) == Some(&':') {
                let k = skip_ws(k + 2);
                let w = word_at(k);
                if w.is_empty() {
                    if b.get(k) == Some(&'{') {
                        // `crate::{a, b::c}`: the first segment of every item.
                        let mut d = 0;
                        let mut item_start = true;
                        let mut m = k;
                        while m < b.len() {
                            match b[m] {
                                '{' => {
                                    d += 1;
                                    item_start = d == 1;
                                }
                                '}' => {
                                    d -= 1;
                                    if d == 0 {
                                        break;
                                    }
                                }
                                ',' if d == 1 => item_start = true,
                                ch if item_start && ident_char(ch) => {
                                    let name = word_at(m);
                                    let mut p = segs.clone();
                                    p.push(name.clone());
                                    out.push(resolve(src, &inline, &p));
                                    item_start = false;
                                    m += name.len();
                                    continue;
                                }
                                _ => {}
                            }
                            m += 1;
                        }
                    }
                    break;
                }
                segs.push(w.clone());
                j = k + w.len();
            } else {
                break;
            }
        }
        if segs.len() > 1 {
            out.push(resolve(src, &inline, &segs));
        }
        i = j.max(after);
    }
    out
}

fn resolve(src: &Source, inline: &[(usize, String)], segs: &[String]) -> ModPath {
    let mut here: ModPath = src.module.clone();
    here.extend(inline.iter().map(|(_, n)| n.clone()));
    let mut rest = segs;
    let mut path = match rest[0].as_str() {
        "crate" => {
            rest = &rest[1..];
            Vec::new()
        }
        "self" => {
            rest = &rest[1..];
            here
        }
        _ => here,
    };
    while rest.first().is_some_and(|s| s == "super") {
        path.pop();
        rest = &rest[1..];
    }
    path.extend(rest.iter().cloned());
    path
}

/// Whether `path` names a module file or directory under `src/`.
fn is_module(parts: &[String]) -> bool {
    let mut p = src_dir();
    for part in parts {
        p.push(part);
    }
    p.is_dir() || p.with_extension("rs").is_file()
}

/// Edges between the top-level modules, and between the children of each
/// top-level module (its root file excluded: the root re-exports its
/// children and they share its types).
type Graph = BTreeMap<String, BTreeSet<String>>;

fn graphs() -> (Graph, BTreeMap<String, Graph>) {
    let mut top = Graph::new();
    let mut inner: BTreeMap<String, Graph> = BTreeMap::new();
    for src in sources() {
        let from = &src.module;
        top.entry(from[0].clone()).or_default();
        for to in referenced_paths(&src) {
            if to.is_empty() || !is_module(&to[..1]) {
                continue;
            }
            if to[0] != from[0] {
                top.entry(from[0].clone())
                    .or_default()
                    .insert(to[0].clone());
            } else if from.len() >= 2 && to.len() >= 2 && from[1] != to[1] && is_module(&to[..2]) {
                inner
                    .entry(from[0].clone())
                    .or_default()
                    .entry(from[1].clone())
                    .or_default()
                    .insert(to[1].clone());
            }
        }
    }
    (top, inner)
}

/// Strongly connected components with more than one member (Tarjan).
fn cycles(g: &Graph) -> Vec<BTreeSet<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = BTreeSet::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                comp.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn the_parser_sees_paths_and_ignores_comments_and_strings() {
    let src = Source {
        module: vec!["goals".into(), "steer".into(), "apply".into()],
        code: strip(
            "use crate::{rules::X, sandbox};\n\
             // use crate::cli::Io;\n\
             let s = \"crate::doctor::run\"; let r = r#\"crate::init\"#; let c = '\"';\n\
             fn f<'a>(x: &'a super::super::plan::Plan) { self::inner::g(); }\n\
             mod tests { use super::super::txn; }\n",
        ),
    };
    let got: BTreeSet<ModPath> = referenced_paths(&src).into_iter().collect();
    let want: BTreeSet<ModPath> = [
        vec!["rules"],
        vec!["sandbox"],
        vec!["goals", "plan", "Plan"],
        vec!["goals", "steer", "apply", "inner", "g"],
        vec!["goals", "steer", "txn"],
    ]
    .into_iter()
    .map(|p| p.into_iter().map(String::from).collect())
    .collect();
    assert_eq!(got, want);
}

#[test]
fn the_top_level_modules_form_no_cycle() {
    let (top, _) = graphs();
    // The graph is real: the engine uses the rules and the rules use the sandbox.
    assert!(top["goals"].contains("rules"), "{top:#?}");
    assert!(top["rules"].contains("sandbox"), "{top:#?}");
    assert_eq!(cycles(&top), Vec::<BTreeSet<String>>::new(), "{top:#?}");
    assert!(!top["rules"].contains("goals"), "{top:#?}");
}

#[test]
fn only_the_command_line_edge_imports_the_command_line_edge() {
    let (top, _) = graphs();
    for (from, tos) in &top {
        if EDGE.contains(&from.as_str()) {
            continue;
        }
        for edge in EDGE {
            assert!(!tos.contains(*edge), "{from} imports {edge}");
        }
    }
    // `finding` sits at the bottom: it imports nothing that imports it back
    // (the cycle check) and nothing of the engine or the adapters.
    for above in ["evidence", "gate", "goals", "hooks", "audit", "rules"] {
        assert!(!top["finding"].contains(above), "finding imports {above}");
    }
}

#[test]
fn the_children_of_a_top_level_module_form_no_cycle() {
    let (_, inner) = graphs();
    // The graph is real: the engine's commands use its plan codec.
    assert!(inner["goals"]["ops"].contains("plan"), "{inner:#?}");
    let found: BTreeMap<&String, Vec<BTreeSet<String>>> = inner
        .iter()
        .map(|(module, g)| (module, cycles(g)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    assert!(
        found.is_empty(),
        "children of a top-level module on a cycle: {found:#?}"
    );
}

#[test]
fn the_steering_kinds_a_profile_may_enable_are_the_engines() {
    assert_eq!(
        evidence_gate::rules::profiles::STEERING_KINDS,
        evidence_gate::goals::steer::Kind::names().as_slice()
    );
}
