//! Command lines more than one bench runs, so they time the same calls.

#![allow(dead_code)]

/// `hook <event> --host codex --profile auto`, then `extra`.
pub fn codex_hook(event: &'static str, extra: &[&'static str]) -> Vec<&'static str> {
    let mut v = vec!["hook", event, "--host", "codex", "--profile", "auto"];
    v.extend_from_slice(extra);
    v
}

/// `ulw-loop steer --kind annotate_ledger` on `goal` with idempotency key
/// `key`: an append that leaves the plan unchanged.
pub fn annotate(goal: &str, key: &str) -> Vec<String> {
    [
        "ulw-loop",
        "steer",
        "--kind",
        "annotate_ledger",
        "--goal-id",
        goal,
        "--idempotency-key",
        key,
        "--evidence",
        "observed a slow query in staging",
        "--rationale",
        "record it for the reviewers",
        "--json",
    ]
    .iter()
    .map(|x| (*x).to_owned())
    .collect()
}
