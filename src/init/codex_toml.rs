//! The line-based, format-preserving edit of Codex's `config.toml` that
//! `init --write` makes (`[features] hooks = true`, plus the plugin switches
//! for plugin scope), and the matching read `doctor` makes. Only the
//! `[features]` table is looked at; every other line stays as it is.

/// `[features] hooks = true`, plus the plugin switches for plugin scope.
fn wanted(plugin: bool) -> Vec<&'static str> {
    let mut v = vec!["hooks = true"];
    if plugin {
        v.extend(["plugin_hooks = true", "plugins = true"]);
    }
    v
}

fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

/// The name of the standard table a line opens (`[features]`,
/// `[ features ]  # switches`, `["features"]`), or `None` for any other line
/// (array-of-tables headers `[[…]]` included: they never open `[features]`).
pub fn table_header(line: &str) -> Option<String> {
    let l = line.trim();
    let inner = l.strip_prefix('[')?;
    if inner.starts_with('[') {
        return None;
    }
    let (name, rest) = inner.split_once(']')?;
    let rest = rest.trim_start();
    if !(rest.is_empty() || rest.starts_with('#')) {
        return None;
    }
    Some(unquote(name.trim()).to_owned())
}

fn is_header_line(line: &str) -> bool {
    line.trim_start().starts_with('[')
}

/// The bare key of a `key = value` line (`"hooks"` unquoted).
fn key_of(line: &str) -> Option<&str> {
    let l = line.trim_start();
    if l.starts_with('#') {
        return None;
    }
    let (k, _) = l.split_once('=')?;
    Some(unquote(k.trim()))
}

/// True when the root table defines `features` itself (`features.hooks =
/// true`, `features = { … }`): a `[features]` table added after that would
/// define it twice, which makes the whole file invalid TOML.
pub fn features_outside_table(text: &str) -> bool {
    text.lines()
        .take_while(|l| !is_header_line(l))
        .filter_map(key_of)
        .any(|k| k == "features" || k.starts_with("features.") || k.starts_with("\"features\"."))
}

/// The value text of `key` in the `[features]` table (or a root dotted key
/// `features.<key>`), comment removed.
pub fn feature_value(text: &str, key: &str) -> Option<String> {
    let dotted = format!("features.{key}");
    let mut table: Option<String> = None;
    for line in text.lines() {
        if is_header_line(line) {
            table = table_header(line);
            continue;
        }
        let Some(k) = key_of(line) else { continue };
        let hit = match table.as_deref() {
            None => k.replace(' ', "") == dotted,
            Some("features") => k == key,
            Some(_) => false,
        };
        if hit {
            let v = line.split_once('=').map(|(_, v)| v).unwrap_or_default();
            return Some(v.split('#').next().unwrap_or_default().trim().to_owned());
        }
    }
    None
}

/// True when `text` marks the project at `path` trusted
/// (`[projects."<path>"]` with `trust_level = "trusted"`): Codex loads a
/// project's `.codex/` layer, hooks included, only then.
pub fn project_trusted(text: &str, path: &str) -> bool {
    let wanted = [
        format!("[projects.\"{path}\"]"),
        format!("[projects.'{path}']"),
    ];
    let mut inside = false;
    for line in text.lines() {
        if is_header_line(line) {
            let head = line.split('#').next().unwrap_or_default().trim();
            inside = wanted.iter().any(|w| w == head);
            continue;
        }
        if inside && key_of(line) == Some("trust_level") {
            let v = line.split_once('=').map(|(_, v)| v).unwrap_or_default();
            let v = v.split('#').next().unwrap_or_default().trim();
            if v == "\"trusted\"" || v == "'trusted'" {
                return true;
            }
        }
    }
    false
}

/// The keys of the `[hooks.state."<key>"]` tables (Codex's per-hook trust
/// records, `<hooks.json path>:<event>:<group>:<handler>`).
pub fn hook_state_keys(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("[hooks.state.")?;
            let (key, _) = rest.rsplit_once(']')?;
            Some(
                key.trim()
                    .trim_matches(|c| c == '"' || c == '\'')
                    .to_owned(),
            )
        })
        .collect()
}

/// Adds the missing `[features]` keys without touching anything else. An
/// explicit choice (`hooks = false`) is kept, and a root that defines
/// `features` with a dotted key or an inline table is left as it is (see
/// [`features_outside_table`]).
pub fn edit(existing: &str, plugin: bool) -> String {
    if features_outside_table(existing) {
        return existing.to_owned();
    }
    let lines: Vec<&str> = existing.lines().collect();
    let header = lines
        .iter()
        .position(|l| table_header(l).as_deref() == Some("features"));
    let wanted = wanted(plugin);
    match header {
        Some(h) => {
            let end = lines[h + 1..]
                .iter()
                .position(|l| is_header_line(l))
                .map_or(lines.len(), |i| h + 1 + i);
            let present = |key: &str| lines[h + 1..end].iter().any(|l| key_of(l) == Some(key));
            let add: Vec<&str> = wanted
                .iter()
                .filter(|w| !present(w.split('=').next().unwrap_or_default().trim()))
                .copied()
                .collect();
            let mut out: Vec<&str> = lines[..=h].to_vec();
            out.extend(add);
            out.extend(&lines[h + 1..]);
            let mut s = out.join("\n");
            s.push('\n');
            s
        }
        None => {
            let mut s = existing.to_owned();
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            if !s.is_empty() {
                s.push('\n');
            }
            s.push_str("[features]\n");
            for w in wanted {
                s.push_str(w);
                s.push('\n');
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_preserves_the_rest() {
        assert_eq!(edit("", false), "[features]\nhooks = true\n");
        let s = "model = \"x\" # keep\n\n[features]\nweb = true\n\n[other]\na = 1\n";
        assert_eq!(
            edit(s, true),
            "model = \"x\" # keep\n\n[features]\nhooks = true\nplugin_hooks = true\nplugins = true\nweb = true\n\n[other]\na = 1\n"
        );
        let has = "[features]\nhooks = false\n";
        assert_eq!(edit(has, false), has, "an explicit choice is kept");
    }

    #[test]
    fn headers_with_spaces_comments_or_quotes_are_the_features_table() {
        for s in [
            "[features] # switches\nweb = true\n",
            "[ features ]\nweb = true\n",
            "[\"features\"]\nweb = true\n",
        ] {
            let out = edit(s, false);
            assert_eq!(out.matches("features").count(), 1, "{out}");
            assert!(out.contains("\nhooks = true\n"), "{out}");
        }
        assert_eq!(table_header("[[features]]"), None);
        assert_eq!(table_header("[features] x = 1"), None);
    }

    #[test]
    fn root_dotted_or_inline_features_are_left_alone() {
        for s in ["features.web = true\n", "features = { web = true }\n[x]\n"] {
            assert!(features_outside_table(s));
            assert_eq!(edit(s, false), s);
        }
        assert!(!features_outside_table("[x]\nfeatures.web = true\n"));
    }

    #[test]
    fn project_trust_and_hook_state_are_read() {
        let t = "[projects.\"/w/repo\"]\ntrust_level = \"trusted\" # yes\n[hooks.state.\"/w/repo/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:1\"\n";
        assert!(project_trusted(t, "/w/repo"));
        assert!(!project_trusted(t, "/w/other"));
        assert!(!project_trusted(
            "[projects.\"/w/repo\"]\ntrust_level = \"untrusted\"\n",
            "/w/repo"
        ));
        assert!(!project_trusted(
            "[other]\ntrust_level = \"trusted\"\n",
            "/w/repo"
        ));
        assert_eq!(hook_state_keys(t), ["/w/repo/.codex/hooks.json:stop:0:0"]);
    }

    #[test]
    fn feature_values() {
        assert_eq!(
            feature_value("[features] # c\nhooks = false # off\n", "hooks").as_deref(),
            Some("false")
        );
        assert_eq!(
            feature_value("features.hooks = false\n", "hooks").as_deref(),
            Some("false")
        );
        assert_eq!(feature_value("[other]\nhooks = false\n", "hooks"), None);
    }
}
