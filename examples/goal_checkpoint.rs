//! Drives the goal engine as a library: creates a two-goal `ulw-loop` plan
//! in a fresh temporary workspace, then checkpoints its first goal, as
//! `evidence-gate ulw-loop create-goals` and `… checkpoint` do:
//! `cargo run --example goal_checkpoint`.
//!
//! The engine writes only under the workspace it is handed (its state
//! directory and ledger); nothing is read from or written to `HOME`.

use cap_std::fs::Dir;
use evidence_gate::goals::ops::checkpoint::{self, CheckpointRequest, CheckpointStatus};
use evidence_gate::goals::ops::create::{self, CreateRequest};
use evidence_gate::goals::{Candidate, Engine, EngineOptions, Mode};
use evidence_gate::rules::RuleSet;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = tempfile::tempdir()?;
    #[allow(clippy::disallowed_methods)]
    let root = Dir::open_ambient_dir(workspace.path(), cap_std::ambient_authority())?;

    let rules = RuleSet::embedded()?;
    // Nothing but the profile: no session scope, and diagnostics (which go
    // to per-user state in the binaries) go nowhere. A temporary directory
    // is no git worktree, so there is no state path prefix either.
    let engine = Engine::new(root, &rules, EngineOptions::new("ulw-loop"))?;

    let created = create::run(
        &engine,
        CreateRequest {
            brief: "Rate-limit the login endpoint.".into(),
            goals: vec![
                Candidate {
                    title: "Add the limiter".into(),
                    objective: "A token bucket guards POST /login.".into(),
                },
                Candidate {
                    title: "Document it".into(),
                    objective: "The README names the limit.".into(),
                },
            ],
            mode: Mode::Aggregate,
            batches: None,
            force: false,
            allow_overlap: None,
            handoff_from: None,
        },
    )?;
    let first = created.plan.goals().next().ok_or("the plan has no goal")?;
    let goal_id = first.id().to_owned();
    println!(
        "created {} goals; first: {goal_id}",
        created.plan.goals().count()
    );

    let out = checkpoint::run(
        &engine,
        CheckpointRequest::new(
            goal_id.clone(),
            CheckpointStatus::Blocked,
            "Waiting for the product decision on the limit.",
        ),
    )?;
    // The outcome is typed: no JSON indexing to read what happened.
    println!(
        "{}: {} (plan revision {})",
        out.goal.id(),
        out.status.as_str(),
        out.revision
    );
    println!(
        "ledger entry: seq {} kind {}; ledger head {}",
        out.ledger_entry.seq().unwrap_or_default(),
        out.ledger_entry.kind_str().unwrap_or_default(),
        out.ledger().head.as_deref().unwrap_or("none")
    );
    match out.next_goal_id() {
        Some(next) => println!("next goal: {next}"),
        None => println!("no goal was started"),
    }
    let status = evidence_gate::goals::ops::status::run(&engine, None)?;
    println!(
        "summary: {} goals, {} blocked, {} pending; criteria {}/{} pass",
        status.summary.total,
        status.summary.blocked,
        status.summary.pending,
        status.summary.criteria.pass,
        status.summary.criteria.total
    );
    for action in &status.next_actions {
        println!("next action: {}", action.command);
    }
    Ok(())
}
