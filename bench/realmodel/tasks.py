"""Small coding tasks with checkers, for the real-model benchmark.

Each task is a dict: `name`, `files` (path -> text, the project before the
run), `task` (what the agent is asked) and `check(project_dir, answer)`,
which returns True when the task is solved. Checkers run the project's
code with the Python running the benchmark; they never trust the answer
alone unless the task is a question.
"""

import configparser
import json
import re
import subprocess
import sys
from pathlib import Path


def run_py(project: Path, code: str) -> str:
    """Run `code` with the project on sys.path; its stdout, or '' on failure."""
    p = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=20
    )
    return p.stdout.strip() if p.returncode == 0 else ""


def read(project: Path, name: str) -> str:
    try:
        return (project / name).read_text()
    except OSError:
        return ""


TASKS = [
    {
        "name": "off-by-one",
        "files": {
            "calc.py": "def total(xs):\n    s = 0\n    for i in range(len(xs) - 1):\n        s += xs[i]\n    return s\n"
        },
        "task": "calc.py: total() skips the last element of the list (off-by-one). Fix it.",
        "check": lambda d, a: run_py(d, "import calc; print(calc.total([1, 2, 3]), calc.total([]))") == "6 0",
    },
    {
        "name": "rename-function",
        "files": {
            "util.py": "def add_numbers(a, b):\n    return a + b\n",
            "main.py": "from util import add_numbers\n\nprint(add_numbers(2, 3))\n",
        },
        "task": "Rename the function add_numbers to sum_two in util.py and in main.py, which uses it.",
        "check": lambda d, a: "add_numbers" not in read(d, "util.py") + read(d, "main.py")
        and run_py(d, "import runpy; runpy.run_path('main.py')") == "5"
        and "def sum_two" in read(d, "util.py"),
    },
    {
        "name": "add-import",
        "files": {"geometry.py": "def hypot(a, b):\n    return math.sqrt(a * a + b * b)\n"},
        "task": "geometry.py fails with NameError: name 'math' is not defined. Fix it.",
        "check": lambda d, a: run_py(d, "import geometry; print(geometry.hypot(3, 4))") == "5.0",
    },
    {
        "name": "json-setting",
        "files": {"settings.json": '{\n  "name": "svc",\n  "timeout": 30,\n  "retries": 3\n}\n'},
        "task": "Set the timeout in settings.json to 60.",
        "check": lambda d, a: _json(d, "settings.json") == {"name": "svc", "timeout": 60, "retries": 3},
    },
    {
        "name": "answer-from-file",
        "files": {
            "RELEASE.md": "# Release notes\n\nThis release is code-named Aurora.\nIt fixes the login bug.\n"
        },
        "task": "What is the code name of the release described in RELEASE.md? Answer with the name only.",
        "check": lambda d, a: "aurora" in (a or "").lower(),
    },
    {
        "name": "create-file",
        "files": {"README.md": "# demo\n"},
        "task": "Create hello.py that prints exactly: Hello, world!",
        "check": lambda d, a: run_py(d, "import runpy; runpy.run_path('hello.py')") == "Hello, world!",
    },
    {
        "name": "typo",
        "files": {"greet.py": "def greeting(name):\n    return 'Helo, ' + name\n"},
        "task": "greet.py has a typo in the greeting: 'Helo' should be 'Hello'. Fix it.",
        "check": lambda d, a: run_py(d, "import greet; print(greet.greeting('Ann'))") == "Hello, Ann",
    },
    {
        "name": "add-function",
        "files": {"mathutil.py": "def add(a, b):\n    return a + b\n"},
        "task": "Add a function multiply(a, b) to mathutil.py that returns a times b. Keep add as it is.",
        "check": lambda d, a: run_py(d, "import mathutil as m; print(m.multiply(3, 4), m.add(1, 2))") == "12 3",
    },
    {
        "name": "ini-port",
        "files": {"config.ini": "[server]\nhost = localhost\nport = 8000\n\n[log]\nlevel = info\n"},
        "task": "Change the server port in config.ini to 9090.",
        "check": lambda d, a: _ini(d) == {"server": {"host": "localhost", "port": "9090"}, "log": {"level": "info"}},
    },
    {
        "name": "count-functions",
        "files": {
            "tools.py": "def a():\n    pass\n\n\ndef b():\n    pass\n\n\ndef c():\n    return a() or b()\n"
        },
        "task": "How many functions are defined in tools.py? Answer with the number only.",
        "check": lambda d, a: re.search(r"\b(3|three)\b", (a or "").lower()) is not None,
    },
    {
        "name": "boundary",
        "files": {"person.py": "def is_adult(age):\n    return age > 18\n"},
        "task": "is_adult in person.py must return True for age 18 too. Fix it.",
        "check": lambda d, a: run_py(
            d, "import person as p; print(p.is_adult(18), p.is_adult(17), p.is_adult(30))"
        )
        == "True False True",
    },
    {
        "name": "constant",
        "files": {"server.py": "DEFAULT_HOST = 'localhost'\nDEFAULT_PORT = 8000\n"},
        "task": "In server.py, change DEFAULT_HOST from 'localhost' to '0.0.0.0'.",
        "check": lambda d, a: run_py(d, "import server as s; print(s.DEFAULT_HOST, s.DEFAULT_PORT)") == "0.0.0.0 8000",
    },
]


# A second set, written after the round that added the outline tool, the
# edit-time checks and the lean offer (issue 34), so that round is not
# tuned to it. Same kind of task: one or two small files, one change or
# one question.
TASKS2 = [
    {
        "name": "wrong-operator",
        "files": {"rect.py": "def area(width, height):\n    return width + height\n"},
        "task": "area() in rect.py returns the wrong value for a rectangle's area. Fix it.",
        "check": lambda d, a: run_py(d, "import rect; print(rect.area(3, 4), rect.area(2, 5))") == "12 10",
    },
    {
        "name": "env-flag",
        "files": {"app.env": "APP_NAME=shop\nDEBUG=true\nWORKERS=4\n"},
        "task": "Turn DEBUG off in app.env (set it to false). Leave the other lines as they are.",
        "check": lambda d, a: read(d, "app.env").split() == ["APP_NAME=shop", "DEBUG=false", "WORKERS=4"],
    },
    {
        "name": "delete-function",
        "files": {
            "helpers.py": "def used(x):\n    return x * 2\n\n\ndef unused_helper(y):\n    return y - 1\n",
            "main.py": "from helpers import used\n\nprint(used(21))\n",
        },
        "task": "Remove the unused function unused_helper from helpers.py.",
        "check": lambda d, a: "unused_helper" not in read(d, "helpers.py")
        and run_py(d, "import runpy; runpy.run_path('main.py')") == "42",
    },
    {
        "name": "default-arg",
        "files": {"hello.py": "def greet(name):\n    return 'Hi ' + name\n"},
        "task": "Give greet in hello.py a default name of 'there', so greet() returns 'Hi there'.",
        "check": lambda d, a: run_py(d, "import hello as h; print(h.greet() + '|' + h.greet('Bo'))") == "Hi there|Hi Bo",
    },
    {
        "name": "which-port",
        "files": {
            "server.py": "import http.server\n\nPORT = 5173\n\n\ndef main():\n"
            "    http.server.HTTPServer(('', PORT), http.server.SimpleHTTPRequestHandler).serve_forever()\n"
        },
        "task": "Which port does server.py listen on? Answer with the number only.",
        "check": lambda d, a: "5173" in (a or ""),
    },
    {
        "name": "missing-colon",
        "files": {"double.py": "def double(x)\n    return x * 2\n"},
        "task": "double.py does not run. Fix it.",
        "check": lambda d, a: run_py(d, "import double; print(double.double(4))") == "8",
    },
    {
        "name": "json-add-key",
        "files": {"package.json": '{\n  "name": "demo",\n  "version": "1.0.0"\n}\n'},
        "task": 'Add a "license" field with the value "MIT" to package.json.',
        "check": lambda d, a: _json(d, "package.json") == {"name": "demo", "version": "1.0.0", "license": "MIT"},
    },
    {
        "name": "reverse-words",
        "files": {"words.py": "def reverse_words(s):\n    return s[::-1]\n"},
        "task": "reverse_words in words.py should reverse the order of the words, not the characters: "
        "'a b c' gives 'c b a'. Fix it.",
        "check": lambda d, a: run_py(d, "import words; print(words.reverse_words('one two three'))") == "three two one",
    },
]


# A third set, written after issue 34's last step (the prompt for small
# models, the nudges for unmade changes, the unreadable-call note) and
# before any run of it, so that step is not tuned to it.
TASKS3 = [
    {
        "name": "yaml-replicas",
        "files": {"deploy.yaml": "name: web\nreplicas: 2\nimage: web:1.4\n"},
        "task": "Set replicas to 3 in deploy.yaml.",
        "check": lambda d, a: read(d, "deploy.yaml").split("\n") == ["name: web", "replicas: 3", "image: web:1.4", ""],
    },
    {
        "name": "absolute",
        "files": {"mathx.py": "def magnitude(x):\n    return x\n"},
        "task": "magnitude() in mathx.py should return the absolute value of x. Fix it.",
        "check": lambda d, a: run_py(d, "import mathx as m; print(m.magnitude(-3), m.magnitude(2))") == "3 2",
    },
    {
        "name": "largest",
        "files": {"stats.py": "def largest(xs):\n    return xs[0]\n"},
        "task": "largest(xs) in stats.py returns the first element instead of the largest one. Fix it.",
        "check": lambda d, a: run_py(d, "import stats; print(stats.largest([3, 9, 2]), stats.largest([7]))") == "9 7",
    },
    {
        "name": "toml-version",
        "files": {"pyproject.toml": '[project]\nname = "tool"\nversion = "0.1.0"\n'},
        "task": "Bump the version in pyproject.toml to 0.2.0.",
        "check": lambda d, a: _toml(d, "pyproject.toml") == {"project": {"name": "tool", "version": "0.2.0"}},
    },
    {
        "name": "tax-rate",
        "files": {"tax.py": "RATE = 1.2\n\n\ndef with_tax(price):\n    return price * RATE\n"},
        "task": "What does with_tax in tax.py multiply the price by? Answer with the number only.",
        "check": lambda d, a: "1.2" in (a or ""),
    },
    {
        "name": "rename-variable",
        "files": {"greeting.py": "msg = 'hello'\nprint(msg)\n"},
        "task": "Rename the variable msg to message in greeting.py.",
        "check": lambda d, a: "msg" not in read(d, "greeting.py")
        and run_py(d, "import runpy; runpy.run_path('greeting.py')") == "hello",
    },
    {
        "name": "upper-case",
        "files": {"loud.py": "def shout(s):\n    return s.lower()\n"},
        "task": "shout() in loud.py should return the text in upper case. Fix it.",
        "check": lambda d, a: run_py(d, "import loud; print(loud.shout('Hi'))") == "HI",
    },
    {
        "name": "import-name",
        "files": {
            "util.py": "def add(a, b):\n    return a + b\n",
            "main.py": "from util import add_numbers\n\nprint(add_numbers(2, 3))\n",
        },
        "task": "main.py fails with ImportError: cannot import name 'add_numbers' from 'util'. "
        "Fix main.py so it uses the function util.py has.",
        "check": lambda d, a: "def add(a, b)" in read(d, "util.py")
        and run_py(d, "import runpy; runpy.run_path('main.py')") == "5",
    },
]


# A fourth set, written at the start of issue 34's fifth step, before any
# run of it and after every change of that earlier steps, so none
# of them is tuned to it.
TASKS4 = [
    {
        "name": "missing-return",
        "files": {"shapes.py": "def area(w, h):\n    w * h\n"},
        "task": "area() in shapes.py returns None. Fix it.",
        "check": lambda d, a: run_py(d, "import shapes; print(shapes.area(2, 3))") == "6",
    },
    {
        "name": "even-filter",
        "files": {"nums.py": "def evens(xs):\n    return [x for x in xs if x % 2 == 1]\n"},
        "task": "evens(xs) in nums.py should keep only the even numbers. Fix it.",
        "check": lambda d, a: run_py(d, "import nums; print(nums.evens([1, 2, 3, 4]))") == "[2, 4]",
    },
    {
        "name": "json-remove-key",
        "files": {"config.json": '{\n  "name": "api",\n  "debug": true,\n  "port": 8000\n}\n'},
        "task": "Remove the debug key from config.json.",
        "check": lambda d, a: _json(d, "config.json") == {"name": "api", "port": 8000},
    },
    {
        "name": "pin-requirement",
        "files": {"requirements.txt": "requests\nflask==2.0.0\n"},
        "task": "Pin requests to version 2.31.0 in requirements.txt.",
        "check": lambda d, a: read(d, "requirements.txt").split() == ["requests==2.31.0", "flask==2.0.0"],
    },
    {
        "name": "which-file",
        "files": {
            "dates.py": "def parse_date(s):\n    return s.split('-')\n",
            "names.py": "def parse_name(s):\n    return s.title()\n",
        },
        "task": "Which file defines the function parse_date? Answer with the file name only.",
        "check": lambda d, a: "dates.py" in (a or "") and "names.py" not in (a or ""),
    },
    {
        "name": "exclamation",
        "files": {"hello.py": "def greet(name):\n    return 'Hello, ' + name\n"},
        "task": "greet() in hello.py should end with an exclamation mark: greet('Ann') gives 'Hello, Ann!'. Fix it.",
        "check": lambda d, a: run_py(d, "import hello; print(hello.greet('Ann'))") == "Hello, Ann!",
    },
    {
        "name": "power-parameter",
        "files": {"power.py": "def power(x):\n    return x * x\n"},
        "task": "Give power() in power.py a second parameter n with default 2, and return x to the power n.",
        "check": lambda d, a: run_py(d, "import power; print(power.power(3), power.power(2, 3))") == "9 8",
    },
    {
        "name": "missing-key",
        "files": {"lookup.py": "def lookup(d, key):\n    return d[key]\n"},
        "task": "lookup(d, key) in lookup.py raises KeyError when the key is missing; make it return None instead.",
        "check": lambda d, a: run_py(d, "import lookup as l; print(l.lookup({}, 'a'), l.lookup({'a': 1}, 'a'))")
        == "None 1",
    },
]

def _toml(d: Path, name: str):
    import tomllib

    try:
        return tomllib.loads(read(d, name))
    except ValueError:
        return None


def _json(d: Path, name: str):
    try:
        return json.loads(read(d, name))
    except ValueError:
        return None


def _ini(d: Path):
    c = configparser.ConfigParser()
    try:
        c.read_string(read(d, "config.ini"))
    except configparser.Error:
        return None
    return {s: dict(c[s]) for s in c.sections()}
