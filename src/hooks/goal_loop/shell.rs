//! Reading a worker's shell command for the team boundary guard
//! (docs/hook-contracts.md#h-6, docs/threat-model.md#i13): the command is split into shell
//! words the way a POSIX shell would before running it — single and double
//! quotes, `$'…'`, backslash escapes and line continuations are resolved, so
//! `ulw''-loop`, `ulw\-loop` and `"ulw-loop"` are all the word `ulw-loop` —
//! and into command segments at unquoted separators (`;`, `&`, `|`, newline,
//! parentheses, backquotes, `$(`). In each segment, environment assignments
//! (`X=1`, `X="a b"`), launchers (`env -u NAME`, `sudo -u user`, `nice -n 5`)
//! with their options are skipped before looking for a goal-engine command
//! word; a quoted argument of a launcher (`bash -lc "…"`, `eval "…"`,
//! `env -S "…"`) is read as a nested command. A `--flag=value` option is read
//! as the flag and its value. What a command guard cannot see (variables,
//! aliases, functions, scripts, decoding) is out of its reach; the engine's
//! refusal of worker mutations (its environment marker) is a second layer.

use serde_json::Value;

/// One profile's command words.
pub(crate) struct ProfileWords<'a> {
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
pub(crate) struct Grammar<'a> {
    /// Every candidate profile.
    pub profiles: Vec<ProfileWords<'a>>,
    /// Words that run the next word as a command.
    pub launchers: &'a [String],
    /// Flags that make the goal command read-only when they stand where the
    /// engine reads its subcommand (`ulw-loop --help`).
    pub exempt: &'a [String],
}

/// The command text of a shell tool call: `command` or `cmd`, a string or
/// an array of strings joined by spaces, cut to `max` bytes.
pub(crate) fn command_text(input: &Value, max: usize) -> Option<String> {
    let v = input.get("command").or_else(|| input.get("cmd"))?;
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(Value::as_str)
            .map(quote_word)
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    Some(crate::hooks::host::encode::cap_bytes(&text, max))
}

/// An argv element as one shell word (an argv array is already split).
fn quote_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// One shell word after quote removal; `quoted` when any part of it was
/// quoted or escaped (so it may hold whitespace or separators).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    quoted: bool,
}

/// Splits `cmd` into segments of words (quotes and escapes resolved).
fn segments(cmd: &str) -> Vec<Vec<Word>> {
    let mut out: Vec<Vec<Word>> = Vec::new();
    let mut seg: Vec<Word> = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = cmd.chars().peekable();
    macro_rules! end_word {
        () => {
            if in_word {
                seg.push(Word {
                    text: std::mem::take(&mut cur),
                    quoted,
                });
                in_word = false;
                quoted = false;
            }
        };
    }
    macro_rules! end_segment {
        () => {
            end_word!();
            if !seg.is_empty() {
                out.push(std::mem::take(&mut seg));
            }
        };
    }
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => {
                    cur.push(n);
                    in_word = true;
                    quoted = true;
                }
            },
            '\'' => {
                in_word = true;
                quoted = true;
                for n in chars.by_ref() {
                    if n == '\'' {
                        break;
                    }
                    cur.push(n);
                }
            }
            '$' if chars.peek() == Some(&'\'') => {
                chars.next();
                in_word = true;
                quoted = true;
                while let Some(n) = chars.next() {
                    match n {
                        '\'' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                cur.push(e);
                            }
                        }
                        _ => cur.push(n),
                    }
                }
            }
            '$' if chars.peek() == Some(&'(') => {
                chars.next();
                end_segment!();
            }
            '"' => {
                in_word = true;
                quoted = true;
                while let Some(n) = chars.next() {
                    match n {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some('\n') | None => {}
                            Some(e @ ('"' | '\\' | '$' | '`')) => cur.push(e),
                            Some(e) => {
                                cur.push('\\');
                                cur.push(e);
                            }
                        },
                        _ => cur.push(n),
                    }
                }
            }
            ';' | '&' | '|' | '\n' | '(' | ')' | '`' => {
                end_segment!();
            }
            c if c.is_whitespace() => end_word!(),
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        seg.push(Word { text: cur, quoted });
    }
    if !seg.is_empty() {
        out.push(seg);
    }
    out
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

/// Nesting bound for quoted commands inside quoted commands.
const MAX_NESTING: usize = 8;

/// The first mutating goal-engine command in `cmd`, as `(word, subcommand)`.
pub(crate) fn mutation(cmd: &str, g: &Grammar<'_>) -> Option<(String, String)> {
    nested_mutation(cmd, g, 0)
}

fn nested_mutation(cmd: &str, g: &Grammar<'_>, depth: usize) -> Option<(String, String)> {
    if depth > MAX_NESTING {
        return None;
    }
    segments(cmd)
        .iter()
        .find_map(|segment| segment_mutation(segment, g, depth))
}

fn is_cli_word(g: &Grammar<'_>, name: &str) -> bool {
    name == "evidence-gate"
        || g.profiles
            .iter()
            .any(|p| p.cli_words.iter().any(|w| w == name) || p.parents.iter().any(|w| w == name))
}

fn segment_mutation(seg: &[Word], g: &Grammar<'_>, depth: usize) -> Option<(String, String)> {
    let t: Vec<&str> = seg.iter().map(|w| w.text.as_str()).collect();
    let mut i = 0;
    // Inside a launcher's arguments: its options (and their values) are
    // skipped, a quoted command string is read as a nested command.
    let mut launched = false;
    let mut expect_value = false;
    while let Some(tok) = t.get(i) {
        let name = file_name(tok);
        if is_cli_word(g, name) && name != "evidence-gate" {
            break;
        }
        if launched
            && seg[i].quoted
            && tok.contains(char::is_whitespace)
            && let Some(found) = nested_mutation(tok, g, depth + 1)
        {
            return Some(found);
        }
        let skip = if is_assignment(tok) || name == "evidence-gate" {
            true
        } else if name == "eval" || g.launchers.iter().any(|l| l == name) {
            launched = true;
            true
        } else if launched && tok.starts_with('-') {
            // A launcher's option; without `=` it may take the next word
            // (`env -u NAME`, `sudo -u user`, `nice -n 5`, `bash -lc "…"`).
            expect_value = !tok.contains('=');
            i += 1;
            continue;
        } else {
            launched && (expect_value || tok.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        };
        expect_value = false;
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
    let mut after_flag = false;
    for (k, tok) in rest.iter().enumerate() {
        if tok.starts_with('-') {
            // `--flag=value` is the flag with its value: never the bare
            // switch (`--help=no` is not `--help`).
            let (flag, value) = tok
                .split_once('=')
                .map_or((*tok, None), |(f, v)| (f, Some(v)));
            if value.is_none() && g.exempt.iter().any(|e| e == flag) {
                // Where the engine reads its subcommand, `--help` prints help.
                return None;
            }
            after_flag = value.is_none();
            continue;
        }
        if p.mutating.iter().any(|m| m == tok) {
            let args: Vec<String> = rest[k + 1..].iter().map(|s| (*s).to_owned()).collect();
            // Read-only forms are the engine's own (goals::team), so the
            // guard and the engine agree on what a worker may run.
            if crate::goals::team::worker_may_run(tok, &args) {
                return None;
            }
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
        let muts = v(&[
            "checkpoint",
            "steer",
            "record-evidence",
            "create-goals",
            "add-goal",
        ]);
        let launchers = v(&["bash", "sh", "env", "npx", "sudo", "nice", "time"]);
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
            // docs/threat-model.md#i13: shell quoting, escapes, assignments, launcher options
            // and `--flag=value` no longer hide the command words.
            (
                "env -u OMO_TEAM_ROLE evidence-gate ulw-loop add-goal --title x",
                "ulw-loop add-goal",
            ),
            ("ulw''-loop steer --kind x", "ulw-loop steer"),
            (r"ulw\-loop steer", "ulw-loop steer"),
            ("\"ulw-loop\" 'steer'", "ulw-loop steer"),
            ("$'ulw-loop' steer", "ulw-loop steer"),
            ("X=1 evidence-gate ulw-loop add-goal", "ulw-loop add-goal"),
            (
                "X=\"a b\" Y='c d' evidence-gate ulw-loop add-goal",
                "ulw-loop add-goal",
            ),
            ("ulw-loop add-goal --help=no --title x", "ulw-loop add-goal"),
            ("ulw-loop add-goal --title x --help", "ulw-loop add-goal"),
            ("ulw checkpoint --help", "ulw checkpoint"),
            ("sudo -u bob nice -n 5 ulw steer", "ulw steer"),
            ("bash -c 'cd x; ulw steer'", "ulw steer"),
            ("eval \"ulw-loop steer\"", "ulw-loop steer"),
            ("echo $(ulw steer)", "ulw steer"),
            ("ulw \\\n steer", "ulw steer"),
        ] {
            assert_eq!(check(cmd).as_deref(), Some(want), "{cmd}");
        }
    }

    #[test]
    fn read_only_and_unrelated_commands_pass() {
        for cmd in [
            "omo ulw-loop status --json",
            "omo ulw-loop checkpoint --print-template --goal-id G1",
            "ulw --help checkpoint",
            "ulw-loop --help",
            "ulw-loop checkpoint --print-template=yes --goal-id G1",
            "git commit -m \"ulw checkpoint done\"",
            "echo \"ulw-loop steer\"",
            "echo 'a; ulw-loop steer'",
            "time git commit -m 'ulw steer'",
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
        assert_eq!(command_text(&a, 100).unwrap(), "bash -lc 'ulw steer'");
        let b = serde_json::json!({"cmd": "x".repeat(300)});
        assert_eq!(command_text(&b, 256).unwrap().len(), 256);
        assert_eq!(command_text(&serde_json::json!({"command": 5}), 10), None);
    }
}
