//! The hook command line (docs/hook-contracts.md#h-1): flags anywhere after `hook`;
//! anything unknown is a usage error (which still exits 0).

use std::path::PathBuf;

use crate::hooks::event::HookEvent;
use crate::hooks::host::Host;
use crate::hooks::{Fault, HookCall};

/// The synopsis printed for `--help`.
pub(crate) const SYNOPSIS: &str = "usage: evidence-gate hook <event> [--host auto|codex|claude-code|gemini|agy] \
[--profile ulw-loop|ultragoal|auto] [--with-ultrawork] [--rules FILE]; events: subagent-stop, stop, \
user-prompt-submit, pre-tool-use, pre-tool-use-spawn";

/// What the command line asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// Run a hook.
    Run(HookCall),
    /// `--help`.
    Help,
}

/// Parses the arguments after `hook`.
pub(crate) fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut event = None;
    let mut host = None;
    let mut profile = "auto".to_owned();
    let mut with_ultrawork = false;
    let mut rules = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
            _ => (a.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("`{name}` needs a value"))
        };
        match flag {
            "-h" | "--help" => return Ok(Parsed::Help),
            "--host" => {
                let v = value("--host")?;
                host = match v.as_str() {
                    "auto" => None,
                    other => Some(Host::from_name(other).ok_or_else(|| {
                        format!(
                            "unknown host `{other}`; use auto, codex, claude-code, gemini or agy"
                        )
                    })?),
                };
            }
            "--profile" => {
                let v = value("--profile")?;
                if !["ulw-loop", "ultragoal", "auto"].contains(&v.as_str()) {
                    return Err(format!(
                        "unknown profile `{v}`; use ulw-loop, ultragoal or auto"
                    ));
                }
                profile = v;
            }
            "--rules" => rules = Some(PathBuf::from(value("--rules")?)),
            "--with-ultrawork" if inline.is_none() => with_ultrawork = true,
            f if f.starts_with('-') => return Err(format!("unknown flag `{a}`")),
            name => {
                if event.is_some() {
                    return Err(format!("unexpected argument `{name}`"));
                }
                event = match HookEvent::from_name(name) {
                    Some(e) => Some(e),
                    None => return Err(format!("unknown hook event `{name}`")),
                };
            }
        }
        i += 1;
    }
    let event = event.ok_or_else(|| "no hook event given".to_owned())?;
    Ok(Parsed::Run(HookCall {
        event,
        host,
        profile,
        with_ultrawork,
        rules,
        fault: Fault::None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[&str]) -> Result<Parsed, String> {
        parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn flags_anywhere() {
        let Parsed::Run(a) = p(&["--host=codex", "subagent-stop", "--with-ultrawork"]).unwrap()
        else {
            panic!()
        };
        assert_eq!(a.host, Some(Host::Codex));
        assert!(a.with_ultrawork);
        let Parsed::Run(a) = p(&["subagent-stop", "--host", "auto", "--rules", "r.json"]).unwrap()
        else {
            panic!()
        };
        assert_eq!(a.host, None);
        assert_eq!(a.rules, Some(PathBuf::from("r.json")));
    }

    #[test]
    fn usage_errors() {
        for bad in [
            &["subagent-stop", "--hots", "codex"][..],
            &["subagent-stop", "--host"],
            &["subagent-stop", "--host", "vim"],
            &["subagent-stop", "--profile", "x"],
            &["nope"],
            &[],
            &["subagent-stop", "extra"],
        ] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
        for e in [
            "stop",
            "user-prompt-submit",
            "pre-tool-use",
            "pre-tool-use-spawn",
        ] {
            assert!(matches!(p(&[e]).unwrap(), Parsed::Run(_)), "{e}");
        }
        assert_eq!(p(&["--help"]).unwrap(), Parsed::Help);
    }
}
