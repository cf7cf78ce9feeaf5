"""A fifth task set for the real-model benchmark (issue 47): everyday tasks
for small local models, meant as a fair yardstick.

Written on 2026-11-28 and committed UNRUN, before any tuning: no agent and
no model has run these tasks. The rule is: write the evaluation set first,
commit it unrun, run it last (`run.py --set 5`), at the end of the work,
so that nothing in the agent is tuned to it. Only `selftest5.py`, which
runs no agent and no model, has run the checkers.

The tasks are of these kinds (the `kind` field; a task may be of several):

1. the file is not named in the task: the agent must find it in a small
   project with distractor files;
2. a question answered from the code;
3. a config key (TOML, JSON, INI): the checker parses the file and checks
   the exact change and that nothing else changed;
4. a second language (JavaScript, Rust, Makefile, shell);
5. moving code between files;
6. a Makefile or shell edit.

Some prompts are in French or German (the `lang` field), so the agent must
not depend on English keywords.

Each task is a dict as in tasks.py (`name`, `files`, `task`,
`check(project_dir, answer)`) plus fields only the self-test and the
reader use: `kind`, `lang`, `solution(project_dir)` (a correct fix; for a
question it returns a correct answer), `wrong` (a plausible but wrong
change, which must fail the checker), `wrong_answers` and `right_answers`
(for questions: answers that must fail, and other phrasings that must
pass), and `executable` (files run.py makes executable).

Checkers run the project's code with the Python running the benchmark
(`sys.executable`), node, rustc, make or bash, always with a timeout. When
one of those tools is missing (checked with shutil.which) the checker falls
back to a structural check of the file, weaker, and says so in a comment.
Answers are trusted only for questions: the first candidate the answer
names must be the right one (case-insensitive, backticks and paths
allowed), so an answer naming a wrong candidate first fails.
"""

import ast
import configparser
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from tasks import read, run_py


# ---------------------------------------------------------------- helpers


def run(cmd, project: Path, env=None, timeout=60, stdin=""):
    """(exit code, stdout + stderr) of `cmd` run in the project; exit code
    None when it could not run or timed out."""
    try:
        p = subprocess.run(
            cmd, cwd=project, env=env, input=stdin, capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired):
        return None, ""
    return p.returncode, p.stdout + p.stderr


def unchanged(d: Path, files: dict, but=()) -> bool:
    """Every file of the original project except those in `but` is as it was."""
    return all(read(d, name) == text for name, text in files.items() if name not in but)


def defines(d: Path, name: str, func: str) -> bool:
    """The Python file defines a top-level function `func`."""
    try:
        tree = ast.parse(read(d, name))
    except SyntaxError:
        return False
    return any(isinstance(n, ast.FunctionDef) and n.name == func for n in tree.body)


def first_of(answer, candidates, pattern=r"(?<![\w]){}(?![\w])"):
    """The candidate the answer names first (case-insensitive), or None."""
    text = (answer or "").lower()
    found = []
    for c in candidates:
        m = re.search(pattern.format(re.escape(c.lower())), text)
        if m:
            found.append((m.start(), c))
    return min(found)[1] if found else None


def first_py_file(answer):
    """The base name of the first .py file the answer names, lower case."""
    m = re.search(r"[\w./\\-]*?([\w-]+\.py)\b", (answer or "").lower())
    return m.group(1) if m else None


def first_number(answer):
    m = re.search(r"\d+(?:[.,]\d+)?", answer or "")
    return float(m.group(0).replace(",", ".")) if m else None


def toml_of(d: Path, name: str):
    try:
        return tomllib.loads(read(d, name))
    except ValueError:
        return None


def json_of(d: Path, name: str):
    try:
        return json.loads(read(d, name))
    except ValueError:
        return None


def ini_of(text: str):
    c = configparser.ConfigParser(interpolation=None)
    try:
        c.read_string(text)
    except configparser.Error:
        return None
    return {s: dict(c[s]) for s in c.sections()}


def edit(d: Path, name: str, old: str, new: str):
    """Replace `old` (which must be there) with `new` in a project file."""
    text = (d / name).read_text()
    assert old in text, (name, old)
    (d / name).write_text(text.replace(old, new, 1))


# ------------------------------------------ 1. free shipping (file not named)

SHOP = {
    "README.md": "# shop\n\nA tiny web-shop backend. Shipping is a flat 4.95 EUR, free from 100 EUR.\n",
    "shop/__init__.py": "",
    "shop/config.py": 'CURRENCY = "EUR"\nFLAT_SHIPPING = 4.95\nFREE_SHIPPING_FROM = 100\n',
    "shop/shipping.py": "from shop import config\n\n\n"
    "def shipping_cost(subtotal):\n"
    "    if subtotal > config.FREE_SHIPPING_FROM:\n"
    "        return 0.0\n"
    "    return config.FLAT_SHIPPING\n",
    "shop/cart.py": "from shop.shipping import shipping_cost\n\n\n"
    "class Cart:\n"
    "    def __init__(self):\n"
    "        self.lines = []\n\n"
    "    def add(self, name, price, qty=1):\n"
    "        self.lines.append((name, price, qty))\n\n"
    "    def subtotal(self):\n"
    "        return round(sum(price * qty for _, price, qty in self.lines), 2)\n\n"
    "    def total(self):\n"
    "        sub = self.subtotal()\n"
    "        return round(sub + shipping_cost(sub), 2)\n",
    "shop/tax.py": "VAT_RATE = 0.2\n\n\ndef vat(amount):\n    return round(amount * VAT_RATE, 2)\n",
    "shop/promotions.py": 'CODES = {"WELCOME10": 0.10, "VIP": 0.25}\n\n\n'
    "def apply_code(code, subtotal):\n"
    "    return round(subtotal * (1 - CODES.get(code, 0)), 2)\n",
}


def check_free_shipping(d, a):
    out = run_py(
        d,
        "from shop.cart import Cart\n"
        "from shop.shipping import shipping_cost\n"
        "def total(*lines):\n"
        "    c = Cart()\n"
        "    for l in lines: c.add(*l)\n"
        "    return c.total()\n"
        "print(total(('a', 100)), total(('b', 99.5)), total(('c', 60, 2)), total(('d', 10, 3)),"
        " shipping_cost(99.99), shipping_cost(100))",
    )
    return out == "100.0 104.45 120.0 34.95 4.95 0.0"


def solve_free_shipping(d):
    edit(d, "shop/shipping.py", "subtotal > config", "subtotal >= config")


def wrong_free_shipping(d):
    # Lowers the threshold instead: 99.5 then ships free.
    edit(d, "shop/config.py", "FREE_SHIPPING_FROM = 100", "FREE_SHIPPING_FROM = 99")


# ------------------------------------------ 2. LOG_LEVEL honoured (file not named)

WORKER = {
    "README.md": "# worker\n\nRuns queued jobs. Run it with `python3 -m worker.main`.\n\n"
    "Environment: QUEUE_URL, CONCURRENCY, LOG_LEVEL (default INFO).\n",
    "worker/__init__.py": "",
    "worker/settings.py": "import os\n\n"
    'QUEUE_URL = os.environ.get("QUEUE_URL", "redis://localhost:6379/0")\n'
    'CONCURRENCY = int(os.environ.get("CONCURRENCY", "4"))\n'
    'LOG_LEVEL = "INFO"\n',
    "worker/log.py": "import logging\n\nfrom worker import settings\n\n\n"
    "def setup():\n"
    "    logging.basicConfig(\n"
    "        level=getattr(logging, settings.LOG_LEVEL),\n"
    '        format="%(levelname)s %(name)s: %(message)s",\n'
    "    )\n",
    "worker/jobs.py": "import logging\n\n"
    'log = logging.getLogger("worker.jobs")\n\n\n'
    "def handle(job):\n"
    '    log.info("handling %s", job["id"])\n'
    '    return job["payload"].upper()\n',
    "worker/main.py": "import logging\n\n"
    "from worker import settings\n"
    "from worker.log import setup\n\n"
    'log = logging.getLogger("worker")\n\n\n'
    "def main():\n"
    "    setup()\n"
    '    log.debug("concurrency=%d queue=%s", settings.CONCURRENCY, settings.QUEUE_URL)\n'
    '    log.info("worker ready")\n'
    '    log.warning("no jobs queued")\n\n\n'
    'if __name__ == "__main__":\n'
    "    main()\n",
}


def check_log_level(d, a):
    def logs(level):
        env = dict(os.environ)
        env.pop("LOG_LEVEL", None)
        if level:
            env["LOG_LEVEL"] = level
        code, out = run([sys.executable, "-m", "worker.main"], d, env=env, timeout=20)
        return out if code == 0 else None

    default, debug, warning = logs(None), logs("DEBUG"), logs("WARNING")
    if None in (default, debug, warning):
        return False
    return (
        "worker ready" in default and "concurrency=" not in default
        and "concurrency=4" in debug and "worker ready" in debug
        and "no jobs queued" in warning and "worker ready" not in warning
    )


def solve_log_level(d):
    edit(d, "worker/settings.py", 'LOG_LEVEL = "INFO"', 'LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO")')


def wrong_log_level(d):
    # Logs at DEBUG always: the default must stay INFO.
    edit(d, "worker/settings.py", 'LOG_LEVEL = "INFO"', 'LOG_LEVEL = "DEBUG"')


# ------------------------------------------ 3. which function handles a route (question)

INVOICES = {
    "README.md": "# billing-web\n\nThe billing part of the customer portal.\n",
    "app/__init__.py": "",
    "app/routes.py": "from app.views import accounts, billing, home\n\n"
    "ROUTES = [\n"
    '    ("/", home.index),\n'
    '    ("/login", accounts.login),\n'
    '    ("/logout", accounts.logout),\n'
    '    ("/invoices", billing.list_invoices),\n'
    '    ("/invoices/export", billing.export_csv),\n'
    '    ("/invoices/<id>", billing.show_invoice),\n'
    '    ("/invoices/<id>/pdf", billing.invoice_pdf_download),\n'
    "]\n",
    "app/views/__init__.py": "",
    "app/views/home.py": "def index(request):\n    return 'welcome'\n",
    "app/views/accounts.py": "def login(request):\n    return 'login form'\n\n\n"
    "def logout(request):\n    return 'bye'\n",
    "app/views/billing.py": "from app.pdf import render_pdf\n\n"
    "INVOICES = {1: {'id': 1, 'total': 120}}\n\n\n"
    "def list_invoices(request):\n    return list(INVOICES.values())\n\n\n"
    "def export_csv(request):\n"
    "    return '\\n'.join(f\"{i['id']},{i['total']}\" for i in INVOICES.values())\n\n\n"
    "def show_invoice(request, id):\n    return INVOICES[int(id)]\n\n\n"
    "def invoice_pdf_download(request, id):\n"
    "    return render_pdf(INVOICES[int(id)])\n",
    "app/pdf.py": "def render_pdf(invoice):\n"
    "    return b'%PDF-1.4 invoice ' + str(invoice['id']).encode()\n",
}

INVOICE_FUNCTIONS = [
    "index", "login", "logout", "list_invoices", "export_csv", "show_invoice",
    "invoice_pdf_download", "render_pdf",
]


def check_invoice_route(d, a):
    return first_of(a, INVOICE_FUNCTIONS) == "invoice_pdf_download"


# ------------------------------------------ 4. default timeout (question, German)

NETCLIENT = {
    "README.md": "# netclient\n\nA tiny HTTP helper: `fetch(url)` and `ping(host)`.\n",
    "netclient/__init__.py": "from netclient.client import fetch, ping\n",
    "netclient/client.py": "import socket\nimport urllib.request\n\n"
    "from netclient import config\n\n\n"
    "def fetch(url, timeout=None):\n"
    "    if timeout is None:\n"
    "        timeout = config.read_timeout()\n"
    "    with urllib.request.urlopen(url, timeout=timeout) as r:\n"
    "        return r.read()\n\n\n"
    "def ping(host, port=80):\n"
    "    with socket.create_connection((host, port), timeout=config.CONNECT_TIMEOUT):\n"
    "        return True\n",
    "netclient/config.py": "import os\n\n"
    "CONNECT_TIMEOUT = 10\n"
    "MAX_RETRIES = 3\n"
    "_DEFAULT_READ_TIMEOUT = 45\n\n\n"
    "def read_timeout():\n"
    '    return float(os.environ.get("NETCLIENT_TIMEOUT", _DEFAULT_READ_TIMEOUT))\n',
    "netclient/retry.py": "import time\n\nfrom netclient import config\n\n"
    "BACKOFF_SECONDS = 2\n\n\n"
    "def with_retries(call):\n"
    "    for attempt in range(config.MAX_RETRIES):\n"
    "        try:\n"
    "            return call()\n"
    "        except OSError:\n"
    "            time.sleep(BACKOFF_SECONDS * (attempt + 1))\n"
    "    return call()\n",
}


def check_fetch_timeout(d, a):
    return first_number(a) == 45


# ------------------------------------------ 5. which file lists the languages (question, French)

I18N = {
    "README.md": "# agenda\n\nUne petite application d'agenda, traduite en plusieurs langues.\n",
    "app.py": "from settings import DEFAULT_LANGUAGE\n"
    "from i18n.translate import translate\n\n\n"
    "def main(lang=DEFAULT_LANGUAGE):\n"
    "    print(translate('hello', lang))\n\n\n"
    "if __name__ == '__main__':\n"
    "    main()\n",
    "settings.py": "DEFAULT_LANGUAGE = 'fr'\nTIMEZONE = 'Europe/Paris'\nDATE_FORMAT = '%d/%m/%Y'\n",
    "i18n/__init__.py": "",
    "i18n/locales.py": "AVAILABLE_LOCALES = ('fr', 'en', 'de', 'es')\n",
    "i18n/messages.py": "MESSAGES = {\n"
    "    'fr': {'hello': 'Bonjour'},\n"
    "    'en': {'hello': 'Hello'},\n"
    "    'de': {'hello': 'Hallo'},\n"
    "    'es': {'hello': 'Hola'},\n"
    "}\n",
    "i18n/translate.py": "from settings import DEFAULT_LANGUAGE\n"
    "from i18n.locales import AVAILABLE_LOCALES\n"
    "from i18n.messages import MESSAGES\n\n\n"
    "def translate(key, lang):\n"
    "    if lang not in AVAILABLE_LOCALES:\n"
    "        lang = DEFAULT_LANGUAGE\n"
    "    return MESSAGES[lang].get(key, key)\n",
}


def check_locales_file(d, a):
    return first_py_file(a) == "locales.py"


# ------------------------------------------ 6. lint script in a monorepo (JSON, file not named)

MONOREPO = {
    "package.json": json.dumps(
        {
            "name": "acme",
            "private": True,
            "workspaces": ["packages/*"],
            "scripts": {"build": "npm run build --workspaces", "test": "npm test --workspaces"},
            "devDependencies": {"eslint": "^8.57.0"},
        },
        indent=2,
    )
    + "\n",
    "packages/web/package.json": json.dumps(
        {
            "name": "@acme/web",
            "version": "0.3.0",
            "main": "src/index.js",
            "scripts": {"dev": "vite", "build": "vite build", "test": "vitest run"},
            "dependencies": {"react": "^18.2.0"},
            "devDependencies": {"vite": "^5.2.0", "vitest": "^1.5.0"},
        },
        indent=2,
    )
    + "\n",
    "packages/web/src/index.js": "export function greet(name) {\n  return `Hello, ${name}`;\n}\n",
    "packages/api/package.json": json.dumps(
        {
            "name": "@acme/api",
            "version": "0.5.1",
            "main": "src/server.js",
            "scripts": {"start": "node src/server.js", "test": "node --test"},
        },
        indent=2,
    )
    + "\n",
    "packages/api/src/server.js": "const http = require('http');\n\n"
    "http.createServer((req, res) => res.end('ok')).listen(3000);\n",
    ".eslintrc.json": '{\n  "root": true,\n  "extends": "eslint:recommended"\n}\n',
}


def check_web_lint(d, a):
    web = json_of(d, "packages/web/package.json")
    if not isinstance(web, dict) or not isinstance(web.get("scripts"), dict):
        return False
    lint = " ".join(str(web["scripts"].pop("lint", "")).split())
    return (
        lint in ("eslint src", "eslint src/", "eslint ./src", "eslint ./src/")
        and web == json.loads(MONOREPO["packages/web/package.json"])
        and unchanged(d, MONOREPO, but=["packages/web/package.json"])
    )


def solve_web_lint(d):
    p = d / "packages/web/package.json"
    data = json.loads(p.read_text())
    data["scripts"]["lint"] = "eslint src"
    p.write_text(json.dumps(data, indent=2) + "\n")


def wrong_web_lint(d):
    # The root package instead of the web package.
    p = d / "package.json"
    data = json.loads(p.read_text())
    data["scripts"]["lint"] = "eslint packages/web/src"
    p.write_text(json.dumps(data, indent=2) + "\n")


# ------------------------------------------ 7. pytest option in pyproject.toml (TOML)

LEDGER = {
    "pyproject.toml": "[project]\n"
    'name = "ledger"\n'
    'version = "1.4.2"\n'
    'requires-python = ">=3.10"\n'
    'dependencies = ["click>=8.1"]\n\n'
    "[project.optional-dependencies]\n"
    'dev = ["pytest>=8", "ruff"]\n\n'
    "[tool.ruff]\n"
    "line-length = 100\n\n"
    "[tool.pytest.ini_options]\n"
    'addopts = "-q"\n'
    'testpaths = ["tests"]\n',
    "ledger/__init__.py": "def balance(entries):\n    return sum(amount for _, amount in entries)\n",
    "tests/test_ledger.py": "from ledger import balance\n\n\n"
    "def test_balance():\n    assert balance([('rent', -500), ('salary', 2000)]) == 1500\n",
    "README.md": "# ledger\n\nRun the tests with `pytest`.\n",
}


def check_pytest_durations(d, a):
    data = toml_of(d, "pyproject.toml")
    try:
        opts = data["tool"]["pytest"]["ini_options"].pop("addopts")
    except (TypeError, KeyError):
        return False
    if isinstance(opts, str):
        words = shlex.split(opts)
    elif isinstance(opts, list) and all(isinstance(o, str) for o in opts):
        words = [w for o in opts for w in shlex.split(o)]
    else:
        return False
    if "-q" not in words:
        return False
    words.remove("-q")
    original = tomllib.loads(LEDGER["pyproject.toml"])
    del original["tool"]["pytest"]["ini_options"]["addopts"]
    return (
        words in (["--durations=5"], ["--durations", "5"])
        and data == original
        and unchanged(d, LEDGER, but=["pyproject.toml"])
    )


def solve_pytest_durations(d):
    edit(d, "pyproject.toml", 'addopts = "-q"', 'addopts = "-q --durations=5"')


def wrong_pytest_durations(d):
    # Drops -q.
    edit(d, "pyproject.toml", 'addopts = "-q"', 'addopts = "--durations=5"')


# ------------------------------------------ 8. a dependency made a dev-dependency (Cargo.toml)

LOGSLICE = {
    "Cargo.toml": "[package]\n"
    'name = "logslice"\n'
    'version = "0.4.1"\n'
    'edition = "2021"\n\n'
    "[dependencies]\n"
    'clap = { version = "4.5", features = ["derive"] }\n'
    'regex = "1.10"\n'
    'tempfile = "3.10"\n\n'
    "[dev-dependencies]\n"
    'assert_cmd = "2.0"\n',
    "src/main.rs": "use clap::Parser;\nuse regex::Regex;\n\n"
    "#[derive(Parser)]\n"
    "struct Args {\n    pattern: String,\n}\n\n"
    "fn main() {\n"
    "    let args = Args::parse();\n"
    "    let re = Regex::new(&args.pattern).expect(\"bad pattern\");\n"
    "    for line in std::io::stdin().lines().map_while(Result::ok) {\n"
    "        if re.is_match(&line) {\n"
    "            println!(\"{line}\");\n"
    "        }\n"
    "    }\n"
    "}\n",
    "tests/cli.rs": "use assert_cmd::Command;\nuse std::io::Write;\n\n"
    "#[test]\n"
    "fn keeps_matching_lines() {\n"
    "    let mut f = tempfile::NamedTempFile::new().unwrap();\n"
    "    writeln!(f, \"error: disk full\\ninfo: ok\").unwrap();\n"
    "    let input = std::fs::read_to_string(f.path()).unwrap();\n"
    "    Command::cargo_bin(\"logslice\").unwrap().arg(\"error\").write_stdin(input)\n"
    "        .assert().success().stdout(\"error: disk full\\n\");\n"
    "}\n",
}


def check_cargo_dev_dependency(d, a):
    data = toml_of(d, "Cargo.toml")
    if not isinstance(data, dict):
        return False
    dev = data.get("dev-dependencies", {})
    spec = dev.pop("tempfile", None) if isinstance(dev, dict) else None
    if isinstance(spec, dict) and set(spec) == {"version"}:
        spec = spec["version"]
    original = tomllib.loads(LOGSLICE["Cargo.toml"])
    del original["dependencies"]["tempfile"]
    return spec == "3.10" and data == original and unchanged(d, LOGSLICE, but=["Cargo.toml"])


def solve_cargo_dev_dependency(d):
    edit(d, "Cargo.toml", 'tempfile = "3.10"\n', "")
    edit(d, "Cargo.toml", 'assert_cmd = "2.0"\n', 'assert_cmd = "2.0"\ntempfile = "3.10"\n')


def wrong_cargo_dev_dependency(d):
    # Adds it to the dev-dependencies but leaves it in the dependencies.
    edit(d, "Cargo.toml", 'assert_cmd = "2.0"\n', 'assert_cmd = "2.0"\ntempfile = "3.10"\n')


# ------------------------------------------ 9. flake8 line length (INI, German, file not named)

INVENTAR = {
    "setup.cfg": "[metadata]\n"
    "name = inventar\n"
    "version = 2.1.0\n\n"
    "[options]\n"
    "packages = find:\n"
    "python_requires = >=3.9\n\n"
    "[flake8]\n"
    "max-line-length = 79\n"
    "exclude = .git,__pycache__,build\n"
    "per-file-ignores =\n"
    "    __init__.py:F401\n\n"
    "[tool:pytest]\n"
    "testpaths = tests\n",
    "tox.ini": "[tox]\nenvlist = py39,py311\n\n[testenv]\ndeps = pytest\ncommands = pytest\n",
    ".editorconfig": "root = true\n\n[*.py]\nindent_style = space\nindent_size = 4\n",
    "inventar/__init__.py": "from inventar.lager import bestand\n",
    "inventar/lager.py": "def bestand(artikel):\n    return sum(menge for _, menge in artikel)\n",
    "README.md": "# inventar\n\nLagerverwaltung. Tests: `pytest`, Stil: `flake8`.\n",
}


def check_flake8_length(d, a):
    cfg = ini_of(read(d, "setup.cfg"))
    expected = ini_of(INVENTAR["setup.cfg"])
    expected["flake8"]["max-line-length"] = "100"
    return (
        cfg == expected
        and unchanged(d, INVENTAR, but=["setup.cfg"])
        and not (d / ".flake8").exists()
    )


def solve_flake8_length(d):
    edit(d, "setup.cfg", "max-line-length = 79", "max-line-length = 100")


def wrong_flake8_length(d):
    # A new [flake8] section in tox.ini: flake8 reads setup.cfg's first.
    (d / "tox.ini").write_text(INVENTAR["tox.ini"] + "\n[flake8]\nmax-line-length = 100\n")


# ------------------------------------------ 10. JavaScript: two decimals

STOREFRONT = {
    "package.json": '{\n  "name": "storefront",\n  "version": "1.0.0",\n'
    '  "scripts": {\n    "test": "node test/format.test.js"\n  }\n}\n',
    "src/format.js": "'use strict';\n\n"
    "function formatPrice(cents) {\n"
    "  return '$' + cents / 100;\n"
    "}\n\n"
    "function formatQuantity(n) {\n"
    "  return n === 1 ? '1 item' : n + ' items';\n"
    "}\n\n"
    "module.exports = { formatPrice, formatQuantity };\n",
    "src/cart.js": "'use strict';\n\n"
    "const { formatPrice, formatQuantity } = require('./format');\n\n"
    "function summary(lines) {\n"
    "  const cents = lines.reduce((s, l) => s + l.cents * l.qty, 0);\n"
    "  const qty = lines.reduce((s, l) => s + l.qty, 0);\n"
    "  return formatQuantity(qty) + ', ' + formatPrice(cents);\n"
    "}\n\n"
    "module.exports = { summary };\n",
    "test/format.test.js": "const assert = require('assert');\n"
    "const { formatQuantity } = require('../src/format');\n\n"
    "assert.strictEqual(formatQuantity(1), '1 item');\n"
    "assert.strictEqual(formatQuantity(3), '3 items');\n"
    "console.log('ok');\n",
}


def check_js_price(d, a):
    src = read(d, "src/format.js")
    definitions = re.findall(r"\bfunction\s+formatPrice\s*\(|\b(?:const|let|var)\s+formatPrice\s*=", src)
    if len(definitions) != 1:  # a second formatPrice is a duplicate, not a fix
        return False
    if shutil.which("node"):
        code, out = run(
            [
                "node", "-e",
                "const f = require('./src/format.js'); const c = require('./src/cart.js');"
                "console.log([f.formatPrice(1050), f.formatPrice(7), f.formatPrice(123456), f.formatPrice(0),"
                " f.formatQuantity(2), c.summary([{cents: 250, qty: 2}, {cents: 100, qty: 1}])].join('|'))",
            ],
            d,
            timeout=20,
        )
        return code == 0 and out.strip() == "$10.50|$0.07|$1234.56|$0.00|2 items|3 items, $6.00"
    # No node: a structural check only (weaker): the one formatPrice formats
    # with two fraction digits.
    body = src[src.find("formatPrice"):]
    body = body[: body.find("\n}")]
    return "toFixed(2)" in body or "minimumFractionDigits: 2" in body


def solve_js_price(d):
    edit(d, "src/format.js", "return '$' + cents / 100;", "return '$' + (cents / 100).toFixed(2);")


def wrong_js_price(d):
    # A second, correct formatPrice after the first: a duplicate.
    edit(
        d,
        "src/format.js",
        "module.exports",
        "function formatPrice(cents) {\n  return '$' + (cents / 100).toFixed(2);\n}\n\nmodule.exports",
    )


# ------------------------------------------ 11. Rust: word count

WC_LITE = {
    "Cargo.toml": '[package]\nname = "wc-lite"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
    "src/main.rs": "use std::io::{self, Read};\n\n"
    "fn count_lines(text: &str) -> usize {\n"
    "    text.lines().count()\n"
    "}\n\n"
    "fn count_words(text: &str) -> usize {\n"
    "    text.split(' ').count()\n"
    "}\n\n"
    "fn main() {\n"
    "    let mut input = String::new();\n"
    "    io::stdin().read_to_string(&mut input).expect(\"read stdin\");\n"
    "    println!(\"{} {}\", count_lines(&input), count_words(&input));\n"
    "}\n",
    "README.md": "# wc-lite\n\nPrints the number of lines and words of its input: `wc-lite < file`.\n",
}


def check_rust_words(d, a):
    rustc = shutil.which("rustc")
    if rustc:
        with tempfile.TemporaryDirectory() as tmp:
            exe = Path(tmp) / "wc-lite"
            code, _ = run([rustc, "--edition", "2021", "src/main.rs", "-o", str(exe)], d, timeout=180)
            if code != 0:
                return False
            cases = {
                "hello  world\n": "1 2", "a\nb\nc\n": "3 3", "": "0 0", "  x  \n": "1 1", "one\ttwo\n": "1 2",
            }
            for stdin, want in cases.items():
                code, out = run([str(exe)], d, timeout=10, stdin=stdin)
                if code != 0 or out.strip() != want:
                    return False
            return True
    # No rustc: a structural check only (weaker): count_words splits on
    # any whitespace.
    src = read(d, "src/main.rs")
    body = src[src.find("fn count_words"):]
    body = body[: body.find("\n}")]
    return "split_whitespace()" in body or "split_ascii_whitespace()" in body


def solve_rust_words(d):
    edit(d, "src/main.rs", "text.split(' ').count()", "text.split_whitespace().count()")


def wrong_rust_words(d):
    # Skips the empty words but still does not split on newlines.
    edit(d, "src/main.rs", "text.split(' ').count()", "text.split(' ').filter(|w| !w.is_empty()).count()")


# ------------------------------------------ 12. move median into stats.py

REPORT = {
    "stats.py": "def mean(xs):\n    return sum(xs) / len(xs)\n",
    "report.py": "from stats import mean\n\n\n"
    "def median(xs):\n"
    "    s = sorted(xs)\n"
    "    n = len(s)\n"
    "    mid = n // 2\n"
    "    if n % 2:\n"
    "        return s[mid]\n"
    "    return (s[mid - 1] + s[mid]) / 2\n\n\n"
    "def build_report(values):\n"
    '    return f"n={len(values)} mean={mean(values):.2f} median={median(values):.2f}"\n',
    "cli.py": "import sys\n\n"
    "from report import build_report, median\n\n\n"
    "def main(argv):\n"
    '    if argv[:1] == ["--median"]:\n'
    "        print(median([float(x) for x in argv[1:]]))\n"
    "    else:\n"
    "        print(build_report([float(x) for x in argv]))\n\n\n"
    'if __name__ == "__main__":\n'
    "    main(sys.argv[1:])\n",
    "README.md": "# numbers\n\n`python3 cli.py 3 1 2` prints a short report; `--median` prints the median only.\n",
}


def check_move_median(d, a):
    if not defines(d, "stats.py", "median") or defines(d, "report.py", "median") or defines(d, "cli.py", "median"):
        return False
    c1, report = run([sys.executable, "cli.py", "3", "1", "2", "10"], d, timeout=20)
    c2, med = run([sys.executable, "cli.py", "--median", "5", "1", "3"], d, timeout=20)
    return (
        c1 == 0 and report.strip() == "n=4 mean=4.00 median=2.50"
        and c2 == 0 and med.strip() == "3.0"
        and run_py(d, "import stats; print(stats.median([4, 1, 3, 2]), stats.mean([1, 2]))") == "2.5 1.5"
    )


def solve_move_median(d):
    report = read(d, "report.py")
    start = report.index("def median")
    end = report.index("def build_report")
    func = report[start:end].rstrip() + "\n"
    (d / "report.py").write_text(
        report[:start].replace("from stats import mean", "from stats import mean, median") + report[end:]
    )
    (d / "stats.py").write_text(read(d, "stats.py") + "\n\n" + func)
    imports = "from report import build_report\nfrom stats import median"
    edit(d, "cli.py", "from report import build_report, median", imports)


def wrong_move_median(d):
    # A copy in stats.py, the original left in report.py.
    report = read(d, "report.py")
    func = report[report.index("def median"):report.index("def build_report")].rstrip() + "\n"
    (d / "stats.py").write_text(read(d, "stats.py") + "\n\n" + func)


# ------------------------------------------ 13. move parse_duration (French)

DURATIONS = {
    "timeutil.py": "def format_duration(seconds):\n"
    "    \"\"\"5400 -> '1h30m'.\"\"\"\n"
    "    h, rest = divmod(int(seconds), 3600)\n"
    "    m = rest // 60\n"
    "    return f\"{h}h{m:02d}m\" if h else f\"{m}m\"\n",
    "cli.py": "import argparse\n\n"
    "from timeutil import format_duration\n\n"
    'UNITS = {"h": 3600, "m": 60, "s": 1}\n\n\n'
    "def parse_duration(text):\n"
    "    \"\"\"'1h30m' -> 5400 (seconds).\"\"\"\n"
    '    total, number = 0, ""\n'
    "    for ch in text.strip():\n"
    "        if ch.isdigit():\n"
    "            number += ch\n"
    "        elif ch in UNITS and number:\n"
    "            total += int(number) * UNITS[ch]\n"
    '            number = ""\n'
    "        else:\n"
    '            raise ValueError(f"bad duration: {text!r}")\n'
    "    if number:\n"
    '        raise ValueError(f"missing unit in {text!r}")\n'
    "    return total\n\n\n"
    "def main():\n"
    '    parser = argparse.ArgumentParser(description="Convert a duration to seconds.")\n'
    '    parser.add_argument("duration")\n'
    "    args = parser.parse_args()\n"
    "    seconds = parse_duration(args.duration)\n"
    "    print(seconds, format_duration(seconds))\n\n\n"
    'if __name__ == "__main__":\n'
    "    main()\n",
    "scheduler.py": "import time\n\n"
    "from cli import parse_duration\n\n\n"
    "def next_run(every, now=None):\n"
    "    \"\"\"When a job repeated `every` (a duration like '15m') runs next.\"\"\"\n"
    "    now = time.time() if now is None else now\n"
    "    step = parse_duration(every)\n"
    "    return (int(now) // step + 1) * step\n",
    "README.md": "# minuteur\n\n`python3 cli.py 1h30m` affiche la durée en secondes.\n",
}


def check_move_parse_duration(d, a):
    if not defines(d, "timeutil.py", "parse_duration") or defines(d, "cli.py", "parse_duration"):
        return False
    if defines(d, "scheduler.py", "parse_duration"):
        return False
    code, out = run([sys.executable, "cli.py", "1h30m"], d, timeout=20)
    return (
        code == 0 and out.strip() == "5400 1h30m"
        # scheduler.py no longer loads cli.py (and its argparse) to get it.
        and run_py(d, "import sys, scheduler; print(scheduler.next_run('15m', now=1000), 'cli' in sys.modules)")
        == "1800 False"
        and run_py(d, "import sys, timeutil; print(timeutil.parse_duration('2m5s'), 'cli' in sys.modules)")
        == "125 False"
    )


def solve_move_parse_duration(d):
    cli = read(d, "cli.py")
    start, end = cli.index('UNITS = {'), cli.index("def main")
    moved = cli[start:end].rstrip() + "\n"
    cli = cli[:start] + cli[end:]
    cli = cli.replace("from timeutil import format_duration", "from timeutil import format_duration, parse_duration")
    (d / "cli.py").write_text(cli)
    (d / "timeutil.py").write_text(read(d, "timeutil.py") + "\n\n" + moved)
    edit(d, "scheduler.py", "from cli import parse_duration", "from timeutil import parse_duration")


def wrong_move_parse_duration(d):
    # parse_duration moved without UNITS, which it needs.
    cli = read(d, "cli.py")
    start, end = cli.index("def parse_duration"), cli.index("def main")
    moved = cli[start:end].rstrip() + "\n"
    cli = cli[:start] + cli[end:]
    cli = cli.replace("from timeutil import format_duration", "from timeutil import format_duration, parse_duration")
    (d / "cli.py").write_text(cli)
    (d / "timeutil.py").write_text(read(d, "timeutil.py") + "\n\n" + moved)
    edit(d, "scheduler.py", "from cli import parse_duration", "from timeutil import parse_duration")


# ------------------------------------------ 14. Makefile: a test target

TODO = {
    "Makefile": "PYTHON ?= python3\n\n"
    ".PHONY: run lint\n\n"
    "run:\n"
    "\t$(PYTHON) -m todo list\n\n"
    "lint:\n"
    "\t$(PYTHON) -m pyflakes todo tests\n",
    "todo/__init__.py": "",
    "todo/__main__.py": "import sys\n\nfrom todo import store\n\n\n"
    "def main(argv):\n"
    "    items = store.load()\n"
    '    if argv[:1] == ["list"]:\n'
    "        for n, item in enumerate(items, 1):\n"
    "            print(f\"{n}. [{'x' if item['done'] else ' '}] {item['text']}\")\n"
    "    return 0\n\n\n"
    "sys.exit(main(sys.argv[1:]))\n",
    "todo/store.py": "import json\nfrom pathlib import Path\n\n"
    'DEFAULT_PATH = Path.home() / ".todo.json"\n\n\n'
    "def load(path=DEFAULT_PATH):\n"
    "    try:\n"
    "        return json.loads(Path(path).read_text())\n"
    "    except FileNotFoundError:\n"
    "        return []\n\n\n"
    "def add(items, text):\n"
    '    return items + [{"text": text, "done": False}]\n\n\n'
    "def complete(items, index):\n"
    "    items = [dict(i) for i in items]\n"
    '    items[index]["done"] = True\n'
    "    return items\n",
    "tests/__init__.py": "",
    "tests/test_store.py": "import unittest\n\nfrom todo import store\n\n\n"
    "class StoreTest(unittest.TestCase):\n"
    "    def test_add(self):\n"
    '        self.assertEqual(store.add([], "milk"), [{"text": "milk", "done": False}])\n\n'
    "    def test_complete(self):\n"
    '        items = store.add([], "milk")\n'
    '        self.assertTrue(store.complete(items, 0)[0]["done"])\n'
    '        self.assertFalse(items[0]["done"])\n',
    "README.md": "# todo\n\nA to-do list on the command line: `make run`.\n",
}


def make_target(d: Path, target: str, dry=False):
    """(exit code, output) of `make TARGET` in the project, with PYTHON set
    to the benchmark's Python. Without make (weaker, a fallback): the
    target's recipe lines are read from the Makefile, $(PYTHON) expanded,
    and run with sh."""
    if shutil.which("make"):
        return run(["make", *(["-n"] if dry else []), target, f"PYTHON={sys.executable}"], d, timeout=120)
    lines = read(d, "Makefile").split("\n")
    start = next((i for i, line in enumerate(lines) if re.match(rf"{target}\s*:(?!=)", line)), None)
    if start is None:
        return 2, ""
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(re.sub(r"\$[({]PYTHON[)}]", sys.executable, line[1:]).lstrip("@-"))
    if dry:
        return 0, "\n".join(recipe)
    out = ""
    for line in recipe:
        code, o = run(["sh", "-c", line], d, timeout=120)
        out += o
        if code != 0:
            return code, out
    return 0, out


def check_make_test(d, a):
    code, out = make_target(d, "test")
    if code != 0 or "Ran 2 tests" not in out:
        return False
    probe = d / "tests" / "test_zz_probe.py"
    probe.write_text("import unittest\n\n\nclass Probe(unittest.TestCase):\n"
                     "    def test_fails(self):\n        self.fail('probe')\n")
    try:
        failing, _ = make_target(d, "test")
    finally:
        probe.unlink()
        shutil.rmtree(d / "tests" / "__pycache__", ignore_errors=True)
    # The other targets are as they were.
    r = make_target(d, "run", dry=True)
    lint = make_target(d, "lint", dry=True)
    return (
        failing not in (0, None)
        and r[0] == 0 and r[1].strip() == f"{sys.executable} -m todo list"
        and lint[0] == 0 and lint[1].strip() == f"{sys.executable} -m pyflakes todo tests"
    )


def solve_make_test(d):
    edit(d, "Makefile", ".PHONY: run lint", ".PHONY: run lint test")
    (d / "Makefile").write_text(read(d, "Makefile") + "\ntest:\n\t$(PYTHON) -m unittest discover -s tests\n")


def wrong_make_test(d):
    # Prints what passing tests print, runs nothing.
    (d / "Makefile").write_text(read(d, "Makefile") + "\ntest:\n\t@echo 'Ran 2 tests'\n")


# ------------------------------------------ 15. shell: an output directory argument

SITE = {
    "scripts/build.sh": "#!/usr/bin/env bash\n"
    "# Builds the static site into dist/.\n"
    "set -euo pipefail\n\n"
    'cd "$(dirname "$0")/.."\n'
    "OUT=dist\n"
    'rm -rf "$OUT"\n'
    'mkdir -p "$OUT"\n'
    'cp -r site/. "$OUT/"\n'
    'echo "built $(ls "$OUT" | wc -l) files into $OUT"\n',
    "scripts/serve.sh": "#!/usr/bin/env bash\n"
    "# Serves dist/ on http://localhost:8000.\n"
    "set -euo pipefail\n\n"
    'cd "$(dirname "$0")/.."\n'
    "python3 -m http.server 8000 --directory dist\n",
    "site/index.html": "<!doctype html>\n<title>Home</title>\n<h1>Welcome</h1>\n",
    "site/about.html": "<!doctype html>\n<title>About</title>\n<p>About us.</p>\n",
    "site/style.css": "body { font-family: sans-serif; }\n",
    "README.md": "# site\n\n`scripts/build.sh` builds the site, `scripts/serve.sh` serves it.\n",
}


def check_build_outdir(d, a):
    script = read(d, "scripts/build.sh")
    bash = shutil.which("bash")
    if not bash:
        # No bash: a structural check only (weaker): OUT defaults to dist
        # from the first argument.
        return re.search(r'OUT="?\$\{1:?-dist/?\}"?', script) is not None
    for out in ("dist", "public"):
        shutil.rmtree(d / out, ignore_errors=True)
    c1, _ = run([bash, "scripts/build.sh"], d, timeout=30)
    default_ok = c1 == 0 and (d / "dist/index.html").is_file() and not (d / "public").exists()
    shutil.rmtree(d / "dist", ignore_errors=True)
    c2, _ = run([bash, "scripts/build.sh", "public"], d, timeout=30)
    arg_ok = (
        c2 == 0
        and (d / "public/index.html").is_file()
        and (d / "public/style.css").is_file()
        and not (d / "dist").exists()
    )
    for out in ("dist", "public"):
        shutil.rmtree(d / out, ignore_errors=True)
    return default_ok and arg_ok and unchanged(d, SITE, but=["scripts/build.sh"])


def solve_build_outdir(d):
    edit(d, "scripts/build.sh", "OUT=dist\n", 'OUT="${1:-dist}"\n')


def wrong_build_outdir(d):
    # An environment variable, not an argument.
    edit(d, "scripts/build.sh", "OUT=dist\n", 'OUT="${OUT:-dist}"\n')


# ------------------------------------------ 16. pre-commit hook (shell, German, file not named)

HOOKS = {
    "hooks/pre-commit": "#!/bin/sh\n"
    "# Blocks commits that leave debugging code in the sources.\n"
    "status=0\n"
    'if grep -rn "import pdb" src/; then\n'
    "    echo \"pre-commit: remove 'import pdb' before committing\" >&2\n"
    "    status=1\n"
    "fi\n"
    "exit $status\n",
    "scripts/lint.sh": "#!/bin/sh\nset -e\npython3 -m pyflakes src\n",
    "scripts/install-hooks.sh": "#!/bin/sh\nset -e\ncp hooks/pre-commit .git/hooks/pre-commit\n"
    "chmod +x .git/hooks/pre-commit\n",
    "src/app.py": "from src.util import clamp\n\n\ndef volume(level):\n    return clamp(level, 0, 11)\n",
    "src/util.py": "def clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n",
    "README.md": "# verstaerker\n\nNach dem Klonen einmal `scripts/install-hooks.sh` ausführen.\n",
}


def check_pre_commit(d, a):
    sh = shutil.which("sh") or shutil.which("bash")
    if not sh:
        # No shell: a structural check only (weaker).
        hook = read(d, "hooks/pre-commit")
        return "breakpoint" in hook and "import pdb" in hook

    def verdict(probe_text):
        probe = d / "src" / "zz_probe.py"
        if probe_text is not None:
            probe.write_text(probe_text)
        try:
            code, _ = run([sh, "hooks/pre-commit"], d, timeout=20)
        finally:
            probe.unlink(missing_ok=True)
        return code

    clean = verdict(None)
    with_breakpoint = verdict("def f(x):\n    breakpoint()\n    return x\n")
    with_pdb = verdict("import pdb\n")
    return (
        clean == 0
        and with_breakpoint not in (0, None)
        and with_pdb not in (0, None)
        and unchanged(d, HOOKS, but=["hooks/pre-commit"])
    )


def solve_pre_commit(d):
    edit(
        d,
        "hooks/pre-commit",
        "exit $status",
        'if grep -rn "breakpoint()" src/; then\n'
        "    echo \"pre-commit: remove 'breakpoint()' before committing\" >&2\n"
        "    status=1\n"
        "fi\n"
        "exit $status",
    )


def wrong_pre_commit(d):
    # The check added to the lint script instead of the hook.
    (d / "scripts/lint.sh").write_text(HOOKS["scripts/lint.sh"] + "! grep -rn 'breakpoint()' src/\n")


# ---------------------------------------------------------------- the set

TASKS5 = [
    {
        "name": "free-shipping",
        "kind": [1],
        "lang": "en",
        "files": SHOP,
        "task": "Customers whose order comes to exactly 100 EUR are still charged shipping, "
        "but shipping is supposed to be free from 100 EUR up. Fix it.",
        "check": check_free_shipping,
        "solution": solve_free_shipping,
        "wrong": wrong_free_shipping,
    },
    {
        "name": "log-level-env",
        "kind": [1],
        "lang": "en",
        "files": WORKER,
        "task": "Setting LOG_LEVEL=DEBUG in the environment has no effect: the worker still logs at INFO. "
        "Make the worker honour LOG_LEVEL, keeping INFO as the default.",
        "check": check_log_level,
        "solution": solve_log_level,
        "wrong": wrong_log_level,
    },
    {
        "name": "invoice-route",
        "kind": [2, 1],
        "lang": "en",
        "files": INVOICES,
        "task": "Which function handles requests to /invoices/<id>/pdf? Answer with the function name only.",
        "check": check_invoice_route,
        "solution": lambda d: "invoice_pdf_download",
        "right_answers": [
            "`invoice_pdf_download`",
            "INVOICE_PDF_DOWNLOAD",
            "It is handled by app.views.billing.invoice_pdf_download (in app/views/billing.py).",
            "invoice_pdf_download(), which calls render_pdf",
        ],
        "wrong_answers": [
            "render_pdf", "show_invoice", "`export_csv`", "download_invoice_pdf",
            "render_pdf, called from invoice_pdf_download",
        ],
    },
    {
        "name": "fetch-timeout",
        "kind": [2, 1],
        "lang": "de",
        "files": NETCLIENT,
        "task": "Wie viele Sekunden wartet fetch() im Paket netclient standardmäßig auf eine Antwort, "
        "wenn weder ein timeout übergeben noch eine Umgebungsvariable gesetzt ist? Antworte nur mit der Zahl.",
        "check": check_fetch_timeout,
        "solution": lambda d: "45",
        "right_answers": ["45 Sekunden", "`45`", "45.0", "Standardmäßig 45 Sekunden (_DEFAULT_READ_TIMEOUT)."],
        "wrong_answers": ["10", "3", "30 Sekunden", "10 Sekunden zum Verbinden, 45 zum Lesen"],
    },
    {
        "name": "locales-file",
        "kind": [2, 1],
        "lang": "fr",
        "files": I18N,
        "task": "Dans quel fichier la liste des langues prises en charge par l'application est-elle définie ? "
        "Réponds uniquement avec le chemin du fichier.",
        "check": check_locales_file,
        "solution": lambda d: "i18n/locales.py",
        "right_answers": ["`i18n/locales.py`", "locales.py", "Dans ./i18n/locales.py (AVAILABLE_LOCALES)."],
        "wrong_answers": ["i18n/messages.py", "settings.py", "i18n/translate.py", "app.py", "locales"],
    },
    {
        "name": "web-lint-script",
        "kind": [3, 1],
        "lang": "en",
        "files": MONOREPO,
        "task": "Add a lint script to the web package that runs `eslint src`.",
        "check": check_web_lint,
        "solution": solve_web_lint,
        "wrong": wrong_web_lint,
    },
    {
        "name": "pytest-durations",
        "kind": [3],
        "lang": "en",
        "files": LEDGER,
        "task": "Configure pytest in pyproject.toml so that every run reports the 5 slowest tests "
        "(pytest's --durations option). Keep the options already set.",
        "check": check_pytest_durations,
        "solution": solve_pytest_durations,
        "wrong": wrong_pytest_durations,
    },
    {
        "name": "cargo-dev-dependency",
        "kind": [3],
        "lang": "en",
        "files": LOGSLICE,
        "task": "tempfile is only used by the tests. In Cargo.toml, make it a dev-dependency "
        "instead of a normal dependency.",
        "check": check_cargo_dev_dependency,
        "solution": solve_cargo_dev_dependency,
        "wrong": wrong_cargo_dev_dependency,
    },
    {
        "name": "flake8-line-length",
        "kind": [3, 1],
        "lang": "de",
        "files": INVENTAR,
        "task": "Erhöhe die maximale Zeilenlänge für flake8 auf 100 Zeichen. Sonst soll sich nichts ändern.",
        "check": check_flake8_length,
        "solution": solve_flake8_length,
        "wrong": wrong_flake8_length,
    },
    {
        "name": "js-price-format",
        "kind": [4],
        "lang": "en",
        "files": STOREFRONT,
        "task": 'formatPrice in src/format.js drops trailing zeros: formatPrice(1050) gives "$10.5" '
        'instead of "$10.50". Make it always show two decimals.',
        "check": check_js_price,
        "solution": solve_js_price,
        "wrong": wrong_js_price,
    },
    {
        "name": "rust-word-count",
        "kind": [4],
        "lang": "en",
        "files": WC_LITE,
        "task": "wc-lite (src/main.rs) miscounts words: `printf 'hello  world\\n' | wc-lite` prints `1 3` "
        "instead of `1 2`, and words on separate lines are counted as one. Fix the word count.",
        "check": check_rust_words,
        "solution": solve_rust_words,
        "wrong": wrong_rust_words,
    },
    {
        "name": "move-median",
        "kind": [5],
        "lang": "en",
        "files": REPORT,
        "task": "Move the function median from report.py to stats.py, next to mean, and update the imports "
        "so that cli.py still works.",
        "check": check_move_median,
        "solution": solve_move_median,
        "wrong": wrong_move_median,
    },
    {
        "name": "move-parse-duration",
        "kind": [5],
        "lang": "fr",
        "files": DURATIONS,
        "task": "La fonction parse_duration est définie dans cli.py, et scheduler.py importe tout cli.py pour "
        "s'en servir. Déplace parse_duration dans timeutil.py, à côté de format_duration, et corrige les "
        "imports de cli.py et de scheduler.py pour que les deux fonctionnent encore.",
        "check": check_move_parse_duration,
        "solution": solve_move_parse_duration,
        "wrong": wrong_move_parse_duration,
    },
    {
        "name": "make-test-target",
        "kind": [6, 4],
        "lang": "en",
        "files": TODO,
        "task": "Add a `test` target to the Makefile that runs the unit tests in tests/ (they use unittest).",
        "check": check_make_test,
        "solution": solve_make_test,
        "wrong": wrong_make_test,
    },
    {
        "name": "build-outdir",
        "kind": [6, 4],
        "lang": "en",
        "files": SITE,
        "executable": ["scripts/build.sh", "scripts/serve.sh"],
        "task": "scripts/build.sh always builds into dist/. Let it take the output directory as an optional "
        "first argument, still defaulting to dist.",
        "check": check_build_outdir,
        "solution": solve_build_outdir,
        "wrong": wrong_build_outdir,
    },
    {
        "name": "pre-commit-breakpoint",
        "kind": [6, 4, 1],
        "lang": "de",
        "files": HOOKS,
        "executable": ["hooks/pre-commit", "scripts/lint.sh", "scripts/install-hooks.sh"],
        "task": "Der Pre-Commit-Hook des Projekts soll einen Commit auch dann ablehnen, wenn eine Datei in src/ "
        "noch einen Aufruf von breakpoint() enthält. Die bisherige Prüfung soll bleiben.",
        "check": check_pre_commit,
        "solution": solve_pre_commit,
        "wrong": wrong_pre_commit,
    },
]
