//! Reading a worker's shell command for the team boundary guard
//! (hooks.md §6.4): split at command separators, skip environment
//! assignments and launchers, find a goal-engine command word and its
//! subcommand. Best effort by design — the engine's own refusal of worker
//! mutations is authoritative.

use serde_json::Value;

/// One profile's command words.
pub struct ProfileWords<'a> {
    /// Words that run the profile (`ulw-loop`, `ulw`, `omo-ulw-loop`).
    pub cli_words: &'a [String],
    /// Parent commands that take the profile name or a bare subcommand (`omo`).
    pub parents: &'a [String],
    /// The profile's name (`omo ulw-loop …`).
    pub name: &'a str,
    /// Subcommands only the leader may run.
    pub mutating: &'a [String],
}

/// What the guard looks for.
pub struct Grammar<'a> {
    /// Every candidate profile.
    pub profiles: Vec<ProfileWords<'a>>,
    /// Words that run the next word as a command.
    pub launchers: &'a [String],
    /// Flags that make a command read-only.
    pub exempt: &'a [String],
}

/// The command text of a shell tool call: `command` or `cmd`, a string or
/// an array of strings joined by spaces, cut to `max` bytes.
pub fn command_text(input: &Value, max: usize) -> Option<String> {
    let v = input.get("command").or_else(|| input.get("cmd"))?;
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    Some(crate::hooks::host::encode::cap_bytes(&text, max))
}

fn file_name(token: &str) -> &str {
    token.rsplit(['/', '\\']).next().unwrap_or(token)
}

fn is_assignment(token: &str) -> bool {
    token.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty()
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !k.as_bytes()[0].is_ascii_digit()
    })
}

fn tokens(segment: &str) -> Vec<&str> {
    segment
        .split_whitespace()
        .map(|t| t.trim_matches(|c| c == '"' || c == '\''))
        .filter(|t| !t.is_empty())
        .collect()
}

/// The first mutating goal-engine command in `cmd`, as `(word, subcommand)`.
pub fn mutation(cmd: &str, g: &Grammar<'_>) -> Option<(String, String)> {
    cmd.split([';', '&', '|', '\n', '(', ')', '`'])
        .find_map(|segment| segment_mutation(&tokens(segment), g))
}

fn segment_mutation(t: &[&str], g: &Grammar<'_>) -> Option<(String, String)> {
    let mut i = 0;
    while let Some(tok) = t.get(i) {
        let name = file_name(tok);
        let skip = is_assignment(tok)
            || tok.starts_with('-')
            || g.launchers.iter().any(|l| l == name)
            || name == "evidence-gate";
        if !skip {
            break;
        }
        i += 1;
    }
    let word = file_name(t.get(i)?);
    let (p, word, after) = if let Some(p) = g
        .profiles
        .iter()
        .find(|p| p.cli_words.iter().any(|w| w == word))
    {
        (p, word, i + 1)
    } else if let Some(p) = g
        .profiles
        .iter()
        .find(|p| p.parents.iter().any(|w| w == word))
    {
        let j = (i + 1..t.len())
            .find(|&j| !t[j].starts_with('-'))
            .unwrap_or(t.len());
        match t.get(j) {
            Some(next) if *next == p.name || p.cli_words.iter().any(|w| w == file_name(next)) => {
                (p, file_name(next), j + 1)
            }
            _ => (p, word, i + 1),
        }
    } else {
        return None;
    };
    let rest = &t[after.min(t.len())..];
    let exempt = |tok: &&str| {
        let flag = tok.split_once('=').map_or(*tok, |(f, _)| f);
        g.exempt.iter().any(|e| e == flag)
    };
    if rest.iter().any(exempt) {
        return None;
    }
    let mut after_flag = false;
    for tok in rest {
        if tok.starts_with('-') {
            after_flag = !tok.contains('=');
            continue;
        }
        if p.mutating.iter().any(|m| m == tok) {
            return Some((word.to_owned(), (*tok).to_owned()));
        }
        if !after_flag {
            return None;
        }
        after_flag = false;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    fn check(cmd: &str) -> Option<String> {
        let words = v(&["ulw-loop", "ulw", "omo-ulw-loop"]);
        let parents = v(&["omo", "omo-agent-toolkit"]);
        let muts = v(&["checkpoint", "steer", "record-evidence", "create-goals"]);
        let launchers = v(&["bash", "sh", "env", "npx", "sudo"]);
        let exempt = v(&["--print-template", "--help", "-h"]);
        let g = Grammar {
            profiles: vec![ProfileWords {
                cli_words: &words,
                parents: &parents,
                name: "ulw-loop",
                mutating: &muts,
            }],
            launchers: &launchers,
            exempt: &exempt,
        };
        mutation(cmd, &g).map(|(w, s)| format!("{w} {s}"))
    }

    #[test]
    fn mutating_commands_are_found() {
        for (cmd, want) in [
            (
                "omo ulw-loop checkpoint --goal-id G1",
                "ulw-loop checkpoint",
            ),
            ("ulw checkpoint --status complete", "ulw checkpoint"),
            (
                "cd x && OMO_X=1 /usr/bin/omo-ulw-loop steer --kind annotate_ledger",
                "omo-ulw-loop steer",
            ),
            (
                "bash -lc \"omo ulw-loop record-evidence --goal-id G1\"",
                "ulw-loop record-evidence",
            ),
            (
                "npx omo ulw-loop --session-id s1 checkpoint",
                "ulw-loop checkpoint",
            ),
            (
                "evidence-gate ulw-loop create-goals brief",
                "ulw-loop create-goals",
            ),
            ("omo checkpoint --goal-id G1", "omo checkpoint"),
            ("ls | ulw steer", "ulw steer"),
        ] {
            assert_eq!(check(cmd).as_deref(), Some(want), "{cmd}");
        }
    }

    #[test]
    fn read_only_and_unrelated_commands_pass() {
        for cmd in [
            "omo ulw-loop status --json",
            "omo ulw-loop checkpoint --print-template --goal-id G1",
            "ulw checkpoint --help",
            "git commit -m \"ulw checkpoint done\"",
            "echo ulw-loop checkpoint",
            "cargo test",
            "omo ulw-loop criteria --goal-id G1",
        ] {
            assert_eq!(check(cmd), None, "{cmd}");
        }
    }

    #[test]
    fn command_text_forms() {
        let a = serde_json::json!({"command": ["bash", "-lc", "ulw steer"]});
        assert_eq!(command_text(&a, 100).unwrap(), "bash -lc ulw steer");
        let b = serde_json::json!({"cmd": "x".repeat(300)});
        assert_eq!(command_text(&b, 256).unwrap().len(), 256);
        assert_eq!(command_text(&serde_json::json!({"command": 5}), 10), None);
    }
}
