#!/usr/bin/env python3
"""Real-model benchmark (not CI): small coding tasks with checkers, run by
swivalctl and, when available, by Swival against the same llama.cpp server
with the same model and settings: both send temperature 0 unless told
otherwise (`--temperature`, or `--server-default` for the server's own
sampling, which for llama-server is 0.8 with a random seed).

    scripts/local-model/start.sh ROOT 8089
    python3 bench/realmodel/run.py --server http://127.0.0.1:8089/v1 \\
        --log ROOT/server-8089.log --swival /path/to/venv/bin/swival --repeats 2

For every run it records: solved (the task's checker), ended with an answer
(outcome success), wall time, model calls, prompt tokens per call (counted
by the server: its log's n_tokens at release minus the tokens it
generated), failed tool calls. It prints a Markdown table per agent and
writes every run to --out as JSON.

Set 5 (`--set 5`, tasks5.py) was committed unrun, to be run last;
`python3 bench/realmodel/selftest5.py` tests its checkers without a model.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from tasks import TASKS, TASKS2, TASKS3, TASKS4  # noqa: E402
from tasks5 import TASKS5  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def server_calls(log: Path, start: int):
    """Prompt tokens of each request the server finished since byte `start`,
    and of those the ones it processed (not served from its cache)."""
    with open(log, "rb") as f:
        f.seek(start)
        text = f.read().decode("utf-8", "replace")
    return parse_calls(text)


def parse_calls(text: str):
    """(prompt tokens, processed tokens) of each request in a llama-server log."""
    generated, processed, calls = {}, {}, []
    for line in text.splitlines():
        m = re.search(r"task (\d+) \|\s+eval time =.*?/\s*(\d+) tokens", line)
        if m and "prompt eval" not in line:
            generated[m.group(1)] = int(m.group(2))
        m = re.search(r"task (\d+) \| prompt eval time =.*?/\s*(\d+) tokens", line)
        if m:
            processed[m.group(1)] = int(m.group(2))
        m = re.search(r"task (\d+) \| stop processing: n_tokens = (\d+)", line)
        if m:
            task = m.group(1)
            calls.append((int(m.group(2)) - generated.get(task, 0), processed.get(task, 0)))
    return calls


def make_project(task) -> Path:
    d = Path(tempfile.mkdtemp(prefix=f"rb-{task['name']}-"))
    for name, text in task["files"].items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)
    for name in task.get("executable", []):  # scripts a task's project runs (set 5)
        (d / name).chmod(0o755)
    return d


def temperature(args):
    """The sampling temperature both agents send; none: the server's default
    (llama-server's is 0.8, with a random seed)."""
    return [] if args.temperature is None else ["--temperature", str(args.temperature)]


def run_swivalctl(args, task, project: Path, report: Path, env):
    cmd = [
        str(args.swivalctl), "run", "--provider", "generic", "--base-url", args.server,
        "--model", args.model, "--max-turns", str(args.max_turns), "--report", str(report),
        *temperature(args), *args.swivalctl_arg, task["task"],
    ]
    return subprocess.run(
        cmd, cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=args.timeout
    )


def run_swival(args, task, project: Path, report: Path, env):
    cmd = [
        str(args.swival), "--provider", "generic", "--base-url", args.server,
        "--model", args.model, "--max-turns", str(args.max_turns), "--report", str(report),
        *temperature(args), "--base-dir", str(project), task["task"],
    ]
    return subprocess.run(
        cmd, cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=args.timeout
    )


def one(args, agent, runner, task, env):
    project = make_project(task)
    report = project.parent / f"{project.name}.report.json"
    start = os.path.getsize(args.log)
    t0 = time.monotonic()
    try:
        p = runner(args, task, project, report, env)
        stdout, stderr, code = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        stdout, stderr, code = "", "", None
        # The run goes on in the daemon (and on the server's one slot)
        # after its client is killed: stop the daemon so the next run
        # does not queue behind it.
        if agent == "swivalctl":
            subprocess.run([str(args.swivalctl), "daemon", "stop"], env=env, capture_output=True)
    wall = time.monotonic() - t0
    time.sleep(0.5)  # the server writes its last lines after replying
    served = server_calls(Path(args.log), start)
    prompts = [p for p, _ in served]
    try:
        r = json.loads(report.read_text())
    except (OSError, ValueError):
        r = {}
    if not r and stderr.strip():
        # No report: the run did not start (a config error names itself here).
        print(f"{agent} {task['name']}: {stderr.strip().splitlines()[-1]}", file=sys.stderr)
    result, stats = r.get("result", {}), r.get("stats", {})
    answer = stdout.strip() or result.get("answer") or ""
    try:
        solved = bool(task["check"](project, answer))
    except Exception:  # a checker error is a failed task
        solved = False
    row = {
        "agent": agent, "task": task["name"], "solved": solved,
        "answered": result.get("outcome") == "success", "outcome": result.get("outcome"),
        "exit_code": code, "wall_s": round(wall, 1), "llm_calls": len(prompts),
        "prompt_tokens_per_call": round(statistics.mean(prompts)) if prompts else 0,
        # What the server's log says it processed, for any agent.
        "server_processed": sum(p for _, p in served),
        # swivalctl's report: what the server said it took from its cache.
        "prompt_tokens": stats.get("prompt_tokens"),
        "cached_tokens": stats.get("cached_tokens"),
        "tool_calls_failed": stats.get("tool_calls_failed", 0),
        "tool_calls_total": stats.get("tool_calls_total", 0),
        "answer": answer[:300],
    }
    if args.keep:
        kept = Path(args.keep) / f"{agent}-{task['name']}-{project.name.rsplit('-', 1)[-1]}"
        kept.mkdir(parents=True, exist_ok=True)
        if report.exists():
            shutil.copy(report, kept / "report.json")
        (kept / "stdout").write_text(stdout)
        (kept / "stderr").write_text(stderr)
        shutil.copytree(project, kept / "project", dirs_exist_ok=True)
    shutil.rmtree(project, ignore_errors=True)
    report.unlink(missing_ok=True)
    return row


def processed(rs, calls):
    """Prompt tokens per call the server processed (not served from its
    cache): from its log, else from the reports; '-' when neither says."""
    if all("server_processed" in r for r in rs):
        return sum(r["server_processed"] for r in rs) // max(calls, 1)
    if any(r.get("prompt_tokens") is None or r.get("cached_tokens") is None for r in rs):
        return "-"
    return (sum(r["prompt_tokens"] - r["cached_tokens"] for r in rs)) // max(calls, 1)


def table(rows, agent, repeats):
    rs = [r for r in rows if r["agent"] == agent]
    if not rs:
        return ""
    calls = sum(r["llm_calls"] for r in rs)
    weighted = sum(r["prompt_tokens_per_call"] * r["llm_calls"] for r in rs)
    lines = [
        f"**{agent}** ({len(rs)} runs: {len(TASKS)} tasks x {repeats})",
        "",
        "| tasks solved | runs ending with an answer | wall time | model calls | prompt tokens per call "
        "| processed per call (not from cache) | tool calls failed |",
        "|---|---|---|---|---|---|---|",
        f"| {sum(r['solved'] for r in rs)}/{len(rs)} | {sum(r['answered'] for r in rs)}/{len(rs)} "
        f"| {sum(r['wall_s'] for r in rs):.0f} s | {calls} | {weighted // max(calls, 1)} | {processed(rs, calls)} "
        f"| {sum(r['tool_calls_failed'] for r in rs)}/{sum(r['tool_calls_total'] for r in rs)} |",
        "",
        "| task | " + " | ".join(f"run {i + 1}" for i in range(repeats)) + " |",
        "|---|" + "---|" * repeats,
    ]
    for t in TASKS:
        cells = [
            f"{'solved' if r['solved'] else 'no'}, {r['outcome']}, {r['wall_s']:.0f} s, {r['llm_calls']} calls"
            for r in rs if r["task"] == t["name"]
        ]
        lines.append(f"| {t['name']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default="http://127.0.0.1:8089/v1")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    ap.add_argument("--log", required=True, help="the llama-server log (start.sh writes ROOT/server-PORT.log)")
    ap.add_argument("--swivalctl", default=REPO / "target/release/swivalctl")
    ap.add_argument("--swival", help="Swival's executable (a Python 3.13 venv with swival); omitted: swivalctl only")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--max-turns", type=int, default=15)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--tasks", help="comma-separated task names (default: all)")
    ap.add_argument(
        "--set",
        type=int,
        default=1,
        choices=[1, 2, 3, 4, 5],
        help="the task set: 1 (12 tasks), 2, 3 or 4 (8 each, newer), 5 (16 everyday tasks, tasks5.py)",
    )
    ap.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="sent by both agents (default 0; --server-default sends none)",
    )
    ap.add_argument("--server-default", action="store_true", help="send no temperature: the server's default")
    ap.add_argument("--swivalctl-arg", action="append", default=[], help="one more argument for swivalctl run")
    ap.add_argument("--agents", default="swivalctl,swival", help="which agents run (swival needs --swival)")
    ap.add_argument(
        "--ablate",
        action="append",
        default=[],
        metavar="NAME",
        help="turn off one nudge or guard by its name (disable_nudges; swivalctl only); repeatable",
    )
    ap.add_argument("--out", default="realmodel-results.json")
    ap.add_argument("--keep", help="a directory to keep every run's report, output and project in")
    args = ap.parse_args()
    if args.server_default:
        args.temperature = None
    if args.set == 2:
        TASKS[:] = TASKS2
    elif args.set == 3:
        TASKS[:] = TASKS3
    elif args.set == 4:
        TASKS[:] = TASKS4
    elif args.set == 5:
        TASKS[:] = TASKS5
    if args.tasks:
        wanted = args.tasks.split(",")
        TASKS[:] = [t for t in TASKS if t["name"] in wanted]
    home = Path(tempfile.mkdtemp(prefix="rb-home-"))
    env = dict(os.environ)
    for k in ["XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"]:
        (home / k).mkdir(mode=0o700)
        env[k] = str(home / k)
    env.pop("SWIVALD_SOCKET", None)
    wanted_agents = args.agents.split(",")
    if args.ablate:
        if "swival" in wanted_agents and args.swival:
            sys.exit("--ablate turns off swivalctl's nudges: run it with --agents swivalctl")
        # The global config of the runs' own XDG_CONFIG_HOME: nothing else reads it.
        (home / "XDG_CONFIG_HOME" / "swival").mkdir()
        names = ", ".join(json.dumps(n) for n in args.ablate)
        (home / "XDG_CONFIG_HOME" / "swival" / "config.toml").write_text(f"disable_nudges = [{names}]\n")
    agents = [("swivalctl", run_swivalctl)] + ([("swival", run_swival)] if args.swival else [])
    agents = [(name, runner) for name, runner in agents if name in wanted_agents]
    rows = []
    for rep in range(args.repeats):
        for task in TASKS:
            for agent, runner in agents:
                row = one(args, agent, runner, task, env)
                row["repeat"] = rep + 1
                row["ablated"] = args.ablate
                rows.append(row)
                print(json.dumps(row), flush=True)
                Path(args.out).write_text(json.dumps(rows, indent=1))
    subprocess.run([str(args.swivalctl), "daemon", "stop"], env=env, capture_output=True)
    for agent, _ in agents:
        print(table(rows, agent, args.repeats))


if __name__ == "__main__":
    main()
