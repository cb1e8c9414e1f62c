#!/usr/bin/env python3
"""Whole-process latency of start-up, goal-engine commands and the Stop hook,
each paired with the process floor (spawning `/bin/true`) in the same run.

For every plan size (default 5, 200 and 2,000 goals) a repository is built on
tmpfs with the binary itself (`create-goals`, `start`), and each scenario runs
N times (default 30), alternating one `/bin/true` spawn and one command spawn.
A mutating scenario gets a fresh copy of the state directory before each run
(the copy is not timed). Prints the median of each, the ratio to the floor's
median, and p90.

Run: `cargo build --release && python3 benches/engine_paired.py
[--bin target/release/evidence-gate] [--compare OTHER_BINARY] [--runs 30]
[--goals 5,200,2000] [--only status,stop-hook]`. With `--compare`, each run
spawns the floor, then each binary, so a before/after pair shares the load.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

SID = "bench"
STATE = os.path.join(".omo", "ulw-loop", SID)


def spawn(argv, cwd, env, stdin=b""):
    start = time.perf_counter_ns()
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        input=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return (time.perf_counter_ns() - start) / 1e6, proc.returncode


def check(argv, cwd, env, stdin=b""):
    proc = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(
            f"setup failed: {' '.join(argv)}\n{proc.stdout.decode()}{proc.stderr.decode()}"
        )
    return proc.stdout


def base_dir():
    return "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


def environment(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMO_", "CODEX_", "CLAUDE_", "OMAGY_", "EVIDENCE_GATE_"))}
    env["HOME"] = home
    env["XDG_STATE_HOME"] = os.path.join(home, "state")
    env["XDG_CONFIG_HOME"] = os.path.join(home, "config")
    return env


def prepare(binary, goals):
    root = tempfile.mkdtemp(prefix=f"eg-paired-{goals}-", dir=base_dir())
    repo = os.path.join(root, "repo")
    home = os.path.join(root, "home")
    os.makedirs(repo)
    os.makedirs(home)
    env = environment(home)
    brief = "\n".join(
        f"- Implement part {i} of the service with tests and documentation" for i in range(goals)
    )
    ulw = [binary, "ulw-loop"]
    check(ulw + ["create-goals", "--session-id", SID, "--brief", brief, "--json"], repo, env)
    check(ulw + ["complete-goals", "--session-id", SID, "--json"], repo, env)
    plan = json.load(open(os.path.join(repo, STATE, "goals.json")))
    active = plan["activeGoalId"]
    goal = next(g for g in plan["goals"] if g["id"] == active)
    criterion = goal["successCriteria"][0]["id"]
    with open(os.path.join(repo, "src.txt"), "w") as f:
        f.write("the deliverable\n")
    payload = {
        "evidence": 1,
        "summary": "The deliverable is written; the check passed.",
        "deliverables": [{"path": "src.txt"}],
        "artifacts": [{"id": "run", "kind": "cli-transcript", "path": ".omo/evidence/run.txt"}],
        "verification": {
            "verdict": "passed",
            "by": "bench",
            "checks": [{"command": "cat src.txt", "exitCode": 0, "artifact": "run"}],
        },
    }
    os.makedirs(os.path.join(repo, ".omo", "evidence"), exist_ok=True)
    with open(os.path.join(repo, ".omo", "evidence", "run.txt"), "w") as f:
        f.write("$ cat src.txt\nthe deliverable\n")
    with open(os.path.join(repo, ".omo", "evidence", "payload.json"), "w") as f:
        json.dump(payload, f)
    snapshot = os.path.join(root, "snapshot")
    shutil.copytree(os.path.join(repo, ".omo"), snapshot, symlinks=True)
    size = os.path.getsize(os.path.join(repo, STATE, "goals.json"))
    return root, repo, home, env, snapshot, active, criterion, size


def restore(repo, snapshot):
    shutil.rmtree(os.path.join(repo, ".omo"))
    shutil.copytree(snapshot, os.path.join(repo, ".omo"), symlinks=True)


def scenarios(binary, repo, active, criterion):
    ulw = [binary, "ulw-loop"]
    stop = json.dumps(
        {
            "session_id": SID,
            "turn_id": "bench-turn",
            "transcript_path": os.path.join(repo, "transcript.jsonl"),
            "cwd": repo,
            "hook_event_name": "Stop",
            "model": "gpt-5-codex",
            "permission_mode": "default",
            "stop_hook_active": False,
        }
    ).encode()
    s = ["--session-id", SID, "--json"]
    return [
        ("version", [binary, "--version"], b"", False),
        ("verify", [binary, "verify", ".omo/evidence/payload.json"], b"", False),
        ("status", ulw + ["status"] + s, b"", False),
        (
            "record-evidence",
            ulw
            + ["record-evidence", "--goal-id", active, "--criterion-id", criterion,
               "--status", "pass", "--evidence", "cargo test: 12 passed",
               "--accept-seeded", "bench"]
            + s,
            b"",
            True,
        ),
        (
            "checkpoint",
            ulw
            + ["checkpoint", "--goal-id", active, "--status", "blocked",
               "--evidence", "npm publish: 401 unauthorized, the token is missing"]
            + s,
            b"",
            True,
        ),
        (
            "steer",
            ulw
            + ["steer", "--kind", "annotate_ledger", "--target-goal-id", active,
               "--evidence", "observed in the staging run",
               "--rationale", "annotated for the reviewers"]
            + s,
            b"",
            True,
        ),
        ("stop-hook", [binary, "hook", "stop", "--host", "codex"], stop, False),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/evidence-gate")
    ap.add_argument("--compare", help="a second binary, timed in the same runs (before/after)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--goals", default="5,200,2000")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    bins = [os.path.abspath(a.bin)] + ([os.path.abspath(a.compare)] if a.compare else [])
    only = set(filter(None, a.only.split(",")))
    sizes = [int(g) for g in a.goals.split(",")]
    print(f"{'goals':>6} {'scenario':<16} {'binary':<14} {'exit':>4} {'p50 ms':>8} {'p90 ms':>8} {'floor':>6} {'ratio':>6}")
    for goals in sizes:
        root, repo, home, env, snapshot, active, criterion, size = prepare(bins[0], goals)
        try:
            print(f"# {goals} goals, goals.json {size / 1024:.0f} KiB")
            per_bin = [scenarios(b, repo, active, criterion) for b in bins]
            for k, (name, _, _, mutating) in enumerate(per_bin[0]):
                if only and name not in only:
                    continue
                if goals != sizes[0] and name in ("version", "verify"):
                    continue
                floor = []
                cmd = [[] for _ in bins]
                codes = [set() for _ in bins]
                for i in range(a.runs + 3):
                    f, _ = spawn(["/bin/true"], repo, env)
                    for j, sc in enumerate(per_bin):
                        if mutating:
                            restore(repo, snapshot)
                        t, code = spawn(sc[k][1], repo, env, sc[k][2])
                        if i >= 3:
                            cmd[j].append(t)
                            codes[j].add(code)
                    if i >= 3:
                        floor.append(f)
                fl = statistics.median(floor)
                for j, b in enumerate(bins):
                    p50 = statistics.median(cmd[j])
                    p90 = sorted(cmd[j])[int(0.9 * (len(cmd[j]) - 1))]
                    print(
                        f"{goals:>6} {name:<16} {os.path.basename(b)[:14]:<14} "
                        f"{','.join(map(str, sorted(codes[j]))):>4} "
                        f"{p50:8.2f} {p90:8.2f} {fl:6.2f} {p50 / fl:6.2f}"
                    )
                restore(repo, snapshot)
        finally:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()
