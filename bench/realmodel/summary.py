#!/usr/bin/env python3
"""The BENCHMARKS.md tables from one or more result files of run.py:

    python3 bench/realmodel/summary.py results-a.json results-b.json
"""

import json
import sys
from collections import defaultdict


def main():
    rows = [r for path in sys.argv[1:] for r in json.load(open(path))]
    by_agent = defaultdict(list)
    for r in rows:
        by_agent[r["agent"]].append(r)
    print("| agent | runs | tasks solved | runs ending with an answer | wall time (total / per run) "
          "| model calls | prompt tokens per call | tool calls failed |")
    print("|---|---|---|---|---|---|---|---|")
    for agent, rs in by_agent.items():
        calls = sum(r["llm_calls"] for r in rs)
        tokens = sum(r["prompt_tokens_per_call"] * r["llm_calls"] for r in rs) // max(calls, 1)
        wall = sum(r["wall_s"] for r in rs)
        print(f"| {agent} | {len(rs)} | {sum(r['solved'] for r in rs)} | {sum(r['answered'] for r in rs)} "
              f"| {wall:.0f} s / {wall / len(rs):.0f} s | {calls} | {tokens} "
              f"| {sum(r['tool_calls_failed'] for r in rs)} of {sum(r['tool_calls_total'] for r in rs)} |")
    print()
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    agents = list(by_agent)
    print("| task | " + " | ".join(agents) + " |")
    print("|---|" + "---|" * len(agents))
    for t in tasks:
        cells = []
        for a in agents:
            runs = [r for r in by_agent[a] if r["task"] == t]
            cells.append("; ".join(
                f"{'**solved**' if r['solved'] else 'no'} ({r['outcome']}, {r['wall_s']:.0f} s, {r['llm_calls']} calls)"
                for r in runs))
        print(f"| {t} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
