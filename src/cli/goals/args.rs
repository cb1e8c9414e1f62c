//! The goal-engine argument rules (docs/differences.md#r-3 with docs/engine.md#ge-4): flags
//! anywhere after the subcommand, `--flag value` or `--flag=value`, a value
//! that starts with `--` only through `=`, `--` ends flag parsing, a
//! single-valued flag repeated with different values is a conflict, and
//! unknown flags are reported as warnings instead of being silently dropped.

use std::collections::BTreeMap;

use crate::goals::GoalError;

/// One accepted flag.
#[derive(Debug, Clone)]
pub(crate) struct Flag {
    /// Canonical name (`--goal-id`).
    pub name: String,
    /// Accepted synonyms.
    pub aliases: Vec<String>,
    /// Takes a value.
    pub value: bool,
    /// May be given several times.
    pub repeatable: bool,
}

impl Flag {
    /// A value flag.
    pub(crate) fn value(name: &str) -> Flag {
        Flag {
            name: name.to_owned(),
            aliases: Vec::new(),
            value: true,
            repeatable: false,
        }
    }
    /// A boolean flag.
    pub(crate) fn switch(name: &str) -> Flag {
        Flag {
            value: false,
            ..Flag::value(name)
        }
    }
    /// A repeatable value flag.
    pub(crate) fn repeated(name: &str) -> Flag {
        Flag {
            repeatable: true,
            ..Flag::value(name)
        }
    }
    /// With synonyms.
    pub(crate) fn aliases(mut self, aliases: &[String]) -> Flag {
        self.aliases = aliases.to_vec();
        self
    }
}

/// The parsed command line of one subcommand.
#[derive(Debug, Default)]
pub(crate) struct Args {
    values: BTreeMap<String, Vec<Option<String>>>,
    conflicts: Vec<String>,
    /// Words that are neither flags nor flag values.
    pub positionals: Vec<String>,
    /// Unknown `--flags`, in order.
    pub unknown: Vec<String>,
}

/// Parses `tokens` against `flags`.
pub(crate) fn parse(tokens: &[String], flags: &[Flag]) -> Args {
    let find = |name: &str| {
        flags
            .iter()
            .find(|f| f.name == name || f.aliases.iter().any(|a| a == name))
    };
    let mut out = Args::default();
    let mut i = 0;
    let mut rest_positional = false;
    while i < tokens.len() {
        let t = &tokens[i];
        i += 1;
        if rest_positional {
            out.positionals.push(t.clone());
            continue;
        }
        if t == "--" {
            rest_positional = true;
            continue;
        }
        let Some(body) = t.strip_prefix("--") else {
            out.positionals.push(t.clone());
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (format!("--{n}"), Some(v.to_owned())),
            None => (t.clone(), None),
        };
        let Some(flag) = find(&name) else {
            out.unknown.push(name);
            continue;
        };
        let value = if !flag.value {
            Some(String::new())
        } else if inline.is_some() {
            inline
        } else if i < tokens.len() && !tokens[i].starts_with("--") {
            i += 1;
            Some(tokens[i - 1].clone())
        } else {
            None
        };
        let seen = out.values.entry(flag.name.clone()).or_default();
        if !flag.repeatable && seen.first().is_some_and(|first| *first != value) {
            out.conflicts.push(flag.name.clone());
        }
        seen.push(value);
    }
    out
}

impl Args {
    /// Whether the flag (or a synonym) appeared.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// The single value of a flag: `Ok(None)` when absent, `Ok(Some(None))`
    /// when present without a value; repeated with different values is
    /// `ULW_LOOP_ARGUMENT_CONFLICT`.
    pub(crate) fn one(&self, name: &str) -> Result<Option<Option<&str>>, GoalError> {
        let Some(list) = self.values.get(name) else {
            return Ok(None);
        };
        if self.conflicts.iter().any(|c| c == name) {
            return Err(GoalError::conflict(
                vec![name.to_owned()],
                "the flag (or a synonym of it) is given more than once with different values",
            ));
        }
        Ok(Some(list[0].as_deref()))
    }

    /// The trimmed, non-blank value of a flag (blank — nothing shows after
    /// [`crate::text::fold`] — or missing ⇒ `None`).
    pub(crate) fn text(&self, name: &str) -> Result<Option<String>, GoalError> {
        Ok(self
            .one(name)?
            .flatten()
            .map(str::trim)
            .filter(|v| !crate::text::is_blank(v))
            .map(str::to_owned))
    }

    /// The raw value of a flag (present with a value).
    pub(crate) fn raw(&self, name: &str) -> Result<Option<String>, GoalError> {
        Ok(self.one(name)?.flatten().map(str::to_owned))
    }

    /// Every value of a repeatable flag, in order (occurrences without a value skipped).
    pub(crate) fn all(&self, name: &str) -> Vec<String> {
        self.values
            .get(name)
            .map(|l| l.iter().flatten().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn arbitrary_tokens_never_panic(tokens in proptest::collection::vec("(--)?[a-z=-]{0,8}", 0..12)) {
            let flags = [Flag::value("--goal-id"), Flag::switch("--json"), Flag::repeated("--evidence-file")];
            let a = parse(&tokens, &flags);
            let _ = a.one("--goal-id");
            let _ = a.all("--evidence-file");
        }
    }

    fn toks(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn values_switches_and_terminator() {
        let flags = [
            Flag::value("--goal-id"),
            Flag::switch("--json"),
            Flag::repeated("--evidence-file"),
        ];
        let a = parse(
            &toks(&[
                "x",
                "--goal-id",
                "--json",
                "--evidence-file=a",
                "--evidence-file",
                "b",
                "--",
                "--goal-id",
            ]),
            &flags,
        );
        assert_eq!(a.one("--goal-id").unwrap(), Some(None));
        assert!(a.has("--json"));
        assert_eq!(a.all("--evidence-file"), vec!["a", "b"]);
        assert_eq!(a.positionals, vec!["x", "--goal-id"]);
        let a = parse(&toks(&["--goal-id", "a", "--goal-id=b", "--nope"]), &flags);
        assert_eq!(
            a.one("--goal-id").unwrap_err().code(),
            "ULW_LOOP_ARGUMENT_CONFLICT"
        );
        assert_eq!(a.unknown, vec!["--nope"]);
        let a = parse(&toks(&["--goal-id=--x"]), &flags);
        assert_eq!(a.one("--goal-id").unwrap(), Some(Some("--x")));
    }
}
