//! Surface resolution (docs/gates.md#qg-2) as a pure function, shared by `gate check` and
//! `create-goals` (which stores the result as the plan's `gateRules`, so a
//! later change of environment cannot move a run to a laxer gate).

use serde::Serialize;
use serde_json::Value;

use crate::rules::gates::SurfaceResolution;

/// The profile `gate/final` value that means "resolve the surface".
pub(crate) const RESOLVE_SURFACE: &str = "surface";

/// The inputs, each already read by the caller.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SurfaceInputs<'a> {
    /// `--surface` (names any gate rule file; the caller checks it exists).
    pub flag: Option<&'a str>,
    /// The value of the variable named by `surfaceResolution.env`.
    pub env: Option<&'a str>,
    /// The repository's `gate.surface` (validated at rules load).
    pub repo: Option<&'a str>,
    /// The content of the `surfaceResolution.marker` file next to the
    /// running executable, when it could be read.
    pub marker: Option<&'a [u8]>,
}

/// Which input decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SurfaceSource {
    /// `--surface`.
    Flag,
    /// The profile's `gate/final` named a rule file directly.
    Profile,
    /// The environment variable.
    Env,
    /// `gate.surface` in the repository rules.
    Repo,
    /// The marker file next to the executable.
    Marker,
    /// `surfaceResolution.default`.
    Default,
}

/// The gate rule name chosen and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolvedRules {
    /// The gate rule-file name.
    pub name: String,
    /// The deciding input.
    pub source: SurfaceSource,
}

/// Selects the gate rules: `--surface`, else the profile's `gate/final`,
/// where [`RESOLVE_SURFACE`] means [`resolve`].
pub(crate) fn select(
    gate_final: &str,
    res: &SurfaceResolution,
    inputs: &SurfaceInputs<'_>,
) -> ResolvedRules {
    if let Some(flag) = inputs.flag {
        return ResolvedRules {
            name: flag.trim().to_owned(),
            source: SurfaceSource::Flag,
        };
    }
    if gate_final == RESOLVE_SURFACE {
        resolve(res, inputs)
    } else {
        ResolvedRules {
            name: gate_final.to_owned(),
            source: SurfaceSource::Profile,
        }
    }
}

/// The five-section surface, in the order of docs/gates.md#qg-2: environment variable
/// (when its value is known), repository `gate.surface`, marker file
/// (`{"surface": <known>}`), default. An unknown environment value and a
/// missing or malformed marker fall through to the next step. The flag is
/// not consulted here (see [`select`]).
pub(crate) fn resolve(res: &SurfaceResolution, inputs: &SurfaceInputs<'_>) -> ResolvedRules {
    let known = |s: &str| res.known.iter().any(|k| k == s);
    let pick = |name: &str, source| ResolvedRules {
        name: name.to_owned(),
        source,
    };
    if let Some(env) = inputs.env.map(str::trim)
        && known(env)
    {
        return pick(env, SurfaceSource::Env);
    }
    if let Some(repo) = inputs.repo.map(str::trim)
        && known(repo)
    {
        return pick(repo, SurfaceSource::Repo);
    }
    if let Some(bytes) = inputs.marker
        && let Ok(Value::Object(map)) = crate::json::parse_strict(bytes)
        && let Some(Value::String(s)) = map.get("surface")
        && known(s.trim())
    {
        return pick(s.trim(), SurfaceSource::Marker);
    }
    pick(&res.default, SurfaceSource::Default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res() -> SurfaceResolution {
        SurfaceResolution {
            env: "OMO_AGENT_TOOLKIT_SURFACE".into(),
            marker: "surface.json".into(),
            default: "lazycodex".into(),
            known: vec!["lazycodex".into(), "omo-senpi".into()],
        }
    }

    fn name(inputs: SurfaceInputs<'_>) -> (String, SurfaceSource) {
        let r = select(RESOLVE_SURFACE, &res(), &inputs);
        (r.name, r.source)
    }

    #[test]
    fn order_and_fall_through() {
        let marker = br#"{"surface": "omo-senpi"}"#.as_slice();
        assert_eq!(
            name(SurfaceInputs::default()),
            ("lazycodex".into(), SurfaceSource::Default)
        );
        assert_eq!(
            name(SurfaceInputs {
                flag: Some("ultragoal"),
                env: Some("omo-senpi"),
                ..Default::default()
            }),
            ("ultragoal".into(), SurfaceSource::Flag)
        );
        assert_eq!(
            name(SurfaceInputs {
                env: Some(" omo-senpi "),
                repo: Some("lazycodex"),
                ..Default::default()
            }),
            ("omo-senpi".into(), SurfaceSource::Env)
        );
        assert_eq!(
            name(SurfaceInputs {
                env: Some("laxest"),
                repo: Some("omo-senpi"),
                ..Default::default()
            }),
            ("omo-senpi".into(), SurfaceSource::Repo)
        );
        assert_eq!(
            name(SurfaceInputs {
                env: Some("laxest"),
                marker: Some(marker),
                ..Default::default()
            }),
            ("omo-senpi".into(), SurfaceSource::Marker)
        );
        for bad in [
            b"{".as_slice(),
            br#"{"surface":"x"}"#,
            br#"["omo-senpi"]"#,
            br#"{"surface":1}"#,
        ] {
            assert_eq!(
                name(SurfaceInputs {
                    marker: Some(bad),
                    ..Default::default()
                }),
                ("lazycodex".into(), SurfaceSource::Default)
            );
        }
        let r = select(
            "ultragoal",
            &res(),
            &SurfaceInputs {
                env: Some("omo-senpi"),
                ..Default::default()
            },
        );
        assert_eq!(
            (r.name.as_str(), r.source),
            ("ultragoal", SurfaceSource::Profile)
        );
    }
}
