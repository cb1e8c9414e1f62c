//! The team boundary (docs/engine.md#ge-10): workers run tasks and produce
//! evidence; only the leader changes the state directory. A process is a
//! worker when a `team/workerEnv` variable holds one of its values (`*`: any
//! non-blank value); on the hook channel, also when the decoded event carries
//! an agent type matching `team/workerAgentTypes` or comes from a subagent.

use globset::{Glob, GlobSetBuilder};

use super::error::{ErrorKind, GoalError};
use super::profile::Profile;

/// `env:<NAME>` when a worker environment marker is set.
pub(crate) fn env_marker(
    worker_env: &[crate::rules::profiles::WorkerEnv],
    var: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    worker_env.iter().find_map(|w| {
        let value = var(&w.name)?;
        let value = value.trim();
        w.values
            .iter()
            .any(|v| v == value || (v == "*" && !value.is_empty()))
            .then(|| format!("env:{}", w.name))
    })
}

/// `agent_type:<value>` when a hook payload's agent type matches a
/// `team/workerAgentTypes` glob. An invalid glob in the rules matches nothing.
pub(crate) fn agent_type_marker(profile: &Profile, agent_type: &str) -> Option<String> {
    let mut b = GlobSetBuilder::new();
    for g in &profile.team.worker_agent_types {
        if let Ok(glob) = Glob::new(g) {
            b.add(glob);
        }
    }
    let set = b.build().ok()?;
    set.is_match(agent_type)
        .then(|| format!("agent_type:{agent_type}"))
}

/// Whether a worker may run `sub` with these raw arguments: `help`,
/// `status`, `criteria`, `checkpoint --print-template`, `repair --check`
/// and `workflow list|check` (the caller checks the workflow action).
pub(crate) fn worker_may_run(sub: &str, tokens: &[String]) -> bool {
    let has = |flag: &str| {
        tokens
            .iter()
            .take_while(|t| *t != "--")
            .any(|t| t == flag || t.starts_with(&format!("{flag}=")))
    };
    match sub {
        "help" | "status" | "criteria" | "workflow" => true,
        "checkpoint" => has("--print-template"),
        "repair" => has("--check"),
        _ => false,
    }
}

/// `ULW_LOOP_TEAM_WORKER_FORBIDDEN`.
pub(crate) fn forbidden(profile: &Profile, command: &str, marker: &str) -> GoalError {
    GoalError::new(
        ErrorKind::TeamWorkerForbidden {
            command: command.to_owned(),
            marker: marker.to_owned(),
        },
        format!(
            "{command} changes {} state, which only the team leader may do ({marker} marks this process as a team worker). Report your evidence (an evidence payload file) to the leader, who records it with `{} checkpoint --evidence-file <payload>` or `record-evidence --evidence-file <payload>`.",
            profile.display_name, profile.command_prefix
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        let rules = crate::rules::RuleSet::embedded().unwrap();
        let p: crate::goals::profile::Profiles = rules.family().unwrap();
        p.0["ulw-loop"].clone()
    }

    #[test]
    fn markers() {
        let p = profile();
        let env = |k: &str| (k == "OMO_TEAM_ROLE").then(|| " worker ".to_owned());
        assert_eq!(
            env_marker(&p.team.worker_env, &env).as_deref(),
            Some("env:OMO_TEAM_ROLE")
        );
        let leader = |k: &str| (k == "OMO_TEAM_ROLE").then(|| "leader".to_owned());
        assert_eq!(env_marker(&p.team.worker_env, &leader), None);
        assert_eq!(
            agent_type_marker(&p, "lazycodex-worker-high").as_deref(),
            Some("agent_type:lazycodex-worker-high")
        );
        assert_eq!(agent_type_marker(&p, "lazycodex-gate-reviewer"), None);
        let t = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(worker_may_run("checkpoint", &t(&["--print-template"])));
        assert!(!worker_may_run(
            "checkpoint",
            &t(&["--", "--print-template"])
        ));
        assert!(worker_may_run("repair", &t(&["--check"])));
        assert!(!worker_may_run("repair", &t(&[])));
        assert!(!worker_may_run("steer", &t(&[])));
    }
}
