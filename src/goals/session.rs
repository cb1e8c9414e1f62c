//! Session ids: normalisation (docs/differences.md#r-1) and resolution from the flag or the
//! profile's environment list (docs/state-formats.md#ge-2).

use super::error::{ErrorKind, GoalError};

/// Normalises a raw session id; `None` means "no sid".
///
/// Trim; split on runs of `/` or `\` dropping empty, `.` and `..` segments
/// and join the rest with `-`; replace runs of characters outside
/// `[A-Za-z0-9._-]` with `-`; collapse `-`; strip leading dots and leading or
/// trailing `.`/`-`.
pub(crate) fn normalize(raw: &str) -> Option<String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return None;
    }
    let segments: Vec<&str> = trimmed
        .split(['/', '\\'])
        .filter(|s| !s.is_empty() && *s != "." && *s != "..")
        .collect();
    let joined = if segments.is_empty() {
        trimmed.to_owned()
    } else {
        segments.join("-")
    };
    let mut out = String::with_capacity(joined.len());
    let mut last_dash = false;
    for c in joined.chars() {
        let keep = c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-';
        let c = if keep { c } else { '-' };
        if c == '-' {
            if last_dash {
                continue;
            }
            last_dash = true;
        } else {
            last_dash = false;
        }
        out.push(c);
    }
    let out = out.trim_start_matches('.');
    let out = out.trim_matches(|c| c == '.' || c == '-');
    (!out.is_empty()).then(|| out.to_owned())
}

/// Where the session id of a command came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SidSource {
    /// `--session-id <value>`.
    Flag(String),
    /// The first environment variable of the profile's list that normalises.
    Env(String),
    /// Unscoped.
    None,
}

impl SidSource {
    /// The normalised sid, if any.
    pub fn sid(&self) -> Option<&str> {
        match self {
            SidSource::Flag(s) | SidSource::Env(s) => Some(s),
            SidSource::None => None,
        }
    }
}

/// Resolves the scope: an explicit flag value wins (blank ⇒
/// `ULW_LOOP_SESSION_ID_REQUIRED`, normalising to nothing ⇒
/// `ULW_LOOP_SESSION_ID_INVALID`), else the environment, else unscoped.
pub(crate) fn resolve(
    flag: &str,
    explicit: Option<Option<&str>>,
    env: &dyn Fn(&str) -> Option<String>,
    env_keys: &[String],
) -> Result<SidSource, GoalError> {
    match explicit {
        Some(None) => Err(required(flag)),
        Some(Some(v)) if v.trim().is_empty() => Err(required(flag)),
        Some(Some(v)) => match normalize(v) {
            Some(s) => Ok(SidSource::Flag(s)),
            None => Err(GoalError::new(
                ErrorKind::SessionIdInvalid {
                    flag: flag.to_owned(),
                    value: v.to_owned(),
                },
                format!(
                    "{flag} {v:?} normalises to an empty session id; pass a name made of letters, digits, `.`, `_` or `-`."
                ),
            )),
        },
        None => Ok(env_keys
            .iter()
            .find_map(|k| env(k).as_deref().and_then(normalize))
            .map_or(SidSource::None, SidSource::Env)),
    }
}

fn required(flag: &str) -> GoalError {
    GoalError::new(
        ErrorKind::SessionIdRequired {
            flag: flag.to_owned(),
        },
        format!("{flag} requires a non-empty value."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn normalised_ids_are_safe_path_components(raw in "\\PC{0,40}") {
            if let Some(s) = normalize(&raw) {
                prop_assert!(!s.is_empty());
                prop_assert!(!s.starts_with('.') && !s.starts_with('-') && !s.ends_with('.') && !s.ends_with('-'));
                prop_assert!(s.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)));
                prop_assert!(s != "..");
            }
        }
    }

    #[test]
    fn normalisation_examples() {
        assert_eq!(normalize("../bad/id").as_deref(), Some("bad-id"));
        assert_eq!(normalize("  "), None);
        assert_eq!(normalize("s1/").as_deref(), Some("s1"));
        assert_eq!(normalize("sess_abc").as_deref(), Some("sess_abc"));
        assert_eq!(normalize(".."), None);
        assert_eq!(normalize("///"), None);
        assert_eq!(normalize("a b  c").as_deref(), Some("a-b-c"));
        assert_eq!(normalize(".hidden").as_deref(), Some("hidden"));
        assert_eq!(normalize("x..").as_deref(), Some("x"));
    }

    #[test]
    fn resolution_order() {
        let env = |k: &str| (k == "B").then(|| " s2 ".to_owned());
        let keys = vec!["A".to_owned(), "B".to_owned()];
        assert_eq!(
            resolve("--session-id", Some(Some("x/y")), &env, &keys).unwrap(),
            SidSource::Flag("x-y".into())
        );
        assert_eq!(
            resolve("--session-id", None, &env, &keys).unwrap(),
            SidSource::Env("s2".into())
        );
        let err = resolve("--session-id", Some(Some(" ")), &env, &keys).unwrap_err();
        assert_eq!(err.code(), "ULW_LOOP_SESSION_ID_REQUIRED");
        let err = resolve("--session-id", Some(Some("..")), &env, &keys).unwrap_err();
        assert_eq!(err.code(), "ULW_LOOP_SESSION_ID_INVALID");
    }
}
