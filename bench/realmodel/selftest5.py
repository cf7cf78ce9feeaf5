#!/usr/bin/env python3
"""Self-test of the fifth task set (tasks5.py): runs no agent and no model.

For every task it lays the project out as run.py does and asserts that the
checker fails on the untouched project (with an empty answer, and with the
task's own text as the answer), passes after the task's `solution`, and
fails after the task's plausible but wrong change (`wrong`), or, for a
question, on each of its wrong answers (`wrong_answers`) while passing on
other phrasings of the right one (`right_answers`). It prints a line per
task and exits 1 if any assertion fails.

    python3 bench/realmodel/selftest5.py
"""

import shutil
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from run import make_project  # noqa: E402
from tasks5 import TASKS5  # noqa: E402

KINDS = {1: "file not named", 2: "question", 3: "config key", 4: "second language", 5: "move code", 6: "Makefile/shell"}


def verdict(task, project, answer):
    """The checker's verdict; an exception is reported as one."""
    try:
        return task["check"](project, answer)
    except Exception:
        return "raised: " + traceback.format_exc(limit=2).strip().splitlines()[-1]


def test(task):
    """The list of failed assertions of one task, and a short summary."""
    failures, notes = [], []
    question = "wrong_answers" in task
    d = make_project(task)
    try:
        for answer in ("", task["task"], "Done: fixed it."):
            v = verdict(task, d, answer)
            if v is not False:
                failures.append(f"untouched project, answer {answer[:30]!r}: {v}")
        answer = task["solution"](d) or ""
        for attempt in (1, 2):  # twice: a checker must leave the project as it found it
            v = verdict(task, d, answer)
            if v is not True:
                failures.append(f"after the solution (check {attempt}): {v}")
        if question:
            for right in task.get("right_answers", []):
                v = verdict(task, d, right)
                if v is not True:
                    failures.append(f"right answer {right!r}: {v}")
            for wrong in task["wrong_answers"]:
                v = verdict(task, d, wrong)
                if v is not False:
                    failures.append(f"wrong answer {wrong!r}: {v}")
            notes.append(f"{len(task.get('right_answers', [])) + 1} right answers pass, "
                         f"{len(task['wrong_answers'])} wrong answers fail")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if "wrong" in task:
        d = make_project(task)
        try:
            task["wrong"](d)
            v = verdict(task, d, "Done.")
            if v is not False:
                failures.append(f"after the wrong change: {v}")
            notes.append("wrong change fails")
        finally:
            shutil.rmtree(d, ignore_errors=True)
    elif not question:
        failures.append("no wrong change to test")
    return failures, "; ".join(notes)


def main():
    bad = 0
    names = [t["name"] for t in TASKS5]
    if len(set(names)) != len(names):
        print("duplicate task names")
        bad += 1
    for task in TASKS5:
        t0 = time.monotonic()
        failures, notes = test(task)
        kinds = ", ".join(KINDS[k] for k in task["kind"])
        status = "ok  " if not failures else "FAIL"
        print(f"{status} {task['name']:<22} [{task['lang']}] {kinds:<40} "
              f"fails before, passes after; {notes} ({time.monotonic() - t0:.1f} s)")
        for f in failures:
            print(f"     - {f}")
        bad += bool(failures)
    counts = {k: sum(k in t["kind"] for t in TASKS5) for k in KINDS}
    langs = {lang: sum(t["lang"] == lang for t in TASKS5) for lang in ("en", "fr", "de")}
    print(f"{len(TASKS5)} tasks; by kind: " + ", ".join(f"{KINDS[k]} {n}" for k, n in counts.items())
          + "; prompts: " + ", ".join(f"{lang} {n}" for lang, n in langs.items()))
    if len(TASKS5) < 12 or any(counts[k] < 2 for k in (1, 2, 3, 4)) or not counts[5] or not counts[6] \
            or not langs["fr"] or not langs["de"]:
        print("the set does not cover what issue 47 asks")
        bad += 1
    print("self-test passed" if not bad else f"self-test FAILED ({bad})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
