#!/usr/bin/env python3
"""128 concurrent writers on one state lock: `hook pre-tool-use-spawn` processes
started at once, each counting one spawn under the mutation lock with a 2 s
wait (`hooks.lock_wait_ms`). Prints, per round, how many were counted and how
many gave up with `HOOK_LOCK_TIMEOUT`, and the wall time of the round.

Run: `cargo build --release && python3 benches/lock_contention.py
[--bin target/release/evidence-gate] [--writers 128] [--rounds 3] [--dir DIR]`
(default: the temporary directory, on disk).
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

SID = "lock-bench"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/evidence-gate")
    ap.add_argument("--writers", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wait-ms", type=int, default=2000)
    ap.add_argument("--deadline-ms", type=int, default=30000)
    ap.add_argument("--dir", default=tempfile.gettempdir(),
                    help="where the repository lives (a disk, so the critical section fsyncs)")
    a = ap.parse_args()
    binary = os.path.abspath(a.bin)
    base = a.dir
    for round_no in range(a.rounds):
        root = tempfile.mkdtemp(prefix="eg-lock-", dir=base)
        try:
            repo, home = os.path.join(root, "repo"), os.path.join(root, "home")
            os.makedirs(repo)
            os.makedirs(os.path.join(home, "config", "evidence-gate"))
            with open(os.path.join(home, "config", "evidence-gate", "rules.json"), "w") as f:
                json.dump({"hooks": {"lock_wait_ms": a.wait_ms, "deadline_ms": a.deadline_ms}}, f)
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("OMO_", "CODEX_", "CLAUDE_", "OMAGY_", "EVIDENCE_GATE_"))}
            env.update(HOME=home, XDG_STATE_HOME=os.path.join(home, "state"),
                       XDG_CONFIG_HOME=os.path.join(home, "config"),
                       OMO_SPAWN_FANOUT_LIMIT="100000")
            for args in (["create-goals", "--session-id", SID, "--brief", "- one\n- two", "--json"],
                         ["complete-goals", "--session-id", SID, "--json"]):
                subprocess.run([binary, "ulw-loop"] + args, cwd=repo, env=env, check=True,
                               capture_output=True)
            payload = json.dumps({
                "session_id": SID, "turn_id": "t1", "transcript_path": None, "cwd": repo,
                "hook_event_name": "PreToolUse", "model": "gpt-5-codex",
                "permission_mode": "default", "tool_name": "spawn_agent", "tool_use_id": "c1",
                "tool_input": {"agent_type": "lazycodex-worker-low", "message": "Implement G001"},
            }).encode()
            start = time.perf_counter()
            procs = [subprocess.Popen([binary, "hook", "pre-tool-use-spawn", "--host", "codex"],
                                      cwd=repo, env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                     for _ in range(a.writers)]
            # Every writer gets its payload at once (it fits a pipe buffer),
            # so all of them race for the lock together.
            for p in procs:
                p.stdin.write(payload)
                p.stdin.close()
            outs = []
            for p in procs:
                outs.append(p.stdout.read())
                p.wait()
            wall = time.perf_counter() - start
            timeouts = sum(b"HOOK_LOCK_TIMEOUT" in o for o in outs)
            allowed = sum(not o.strip() for o in outs)
            other = a.writers - timeouts - allowed
            counted, diag = 0, {}
            for top, _, files in os.walk(root):
                if "spawn-count.json" in files:
                    counted = json.load(open(os.path.join(top, "spawn-count.json")))["count"]
                if "diagnostics.jsonl" in files:
                    for line in open(os.path.join(top, "diagnostics.jsonl")):
                        code = json.loads(line).get("code")
                        diag[code] = diag.get(code, 0) + 1
            print(f"round {round_no + 1}: {a.writers} writers, {allowed} allowed, "
                  f"{counted} counted, {timeouts} HOOK_LOCK_TIMEOUT, {other} other, "
                  f"{wall:.2f} s; diagnostics {diag}")
        finally:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()
