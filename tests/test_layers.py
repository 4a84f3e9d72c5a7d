"""The layers point one way (DESIGN.md, "Structure"): engine <- rules <- derivation <-
outputs and checker <- CLI, as the import-linter contract in pyproject.toml states.

The contract is checked on the package laid out as it is installed: pyproject.toml's
``[tool.setuptools.package-dir]`` puts rules/ at derive/rules, which a plain
``lint-imports`` in a checkout would not see. Each check runs ``lint-imports`` in a fresh
interpreter on such a copy, so a deliberately broken copy can be linted too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CONTRACTS = {c["id"]: c for c in PYPROJECT["tool"]["importlinter"]["contracts"]}
ENGINE = [f"derive.{m.strip()}" for m in CONTRACTS["layers"]["layers"][-1].split(":")]


def stage(dest: Path) -> Path:
    """Copy the package to ``dest`` as pyproject.toml installs it (derive.rules from
    rules/, ...) and return ``dest``, the folder to put first on sys.path."""
    ignore = shutil.ignore_patterns("__pycache__", "katex")
    dirs = PYPROJECT["tool"]["setuptools"]["package-dir"]
    shutil.copytree(ROOT / dirs["derive"], dest / "derive", ignore=ignore)
    for package, folder in dirs.items():
        if package != "derive":
            shutil.copytree(ROOT / folder, dest / package.replace(".", "/"), ignore=ignore)
    return dest


def lint(staged: Path) -> subprocess.CompletedProcess:
    """Run lint-imports with pyproject.toml's contracts on the package staged in ``staged``."""
    code = ("import sys; from importlinter.cli import lint_imports; "
            f"sys.exit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, "
            "no_cache=True, no_logo=True))")
    return subprocess.run([sys.executable, "-c", code], cwd=staged, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(staged), "PYTHONDONTWRITEBYTECODE": "1"})


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> Path:
    return stage(tmp_path_factory.mktemp("installed"))


def test_contract_holds(staged):
    result = lint(staged)
    assert "Contracts: 2 kept, 0 broken." in result.stdout, result.stdout + result.stderr
    assert result.returncode == 0


def test_engine_list_is_one():
    """The forbidden contract's engine is the layers contract's lowest layer."""
    assert CONTRACTS["engine-external"]["source_modules"] == ENGINE
    assert set(CONTRACTS["engine-external"]["forbidden_modules"]) == {"rich", "typer", "jinja2"}


BREAKS = [  # (module, line appended to it, what lint-imports must then report)
    ("rounding.py", "from derive import render_html", "derive.rounding is not allowed to import derive.render_html"),
    ("graph.py", "from derive.rules import linear", "derive.graph is not allowed to import derive.rules"),
    ("steps.py", "from derive import derivation", "derive.steps is not allowed to import derive.derivation"),
    ("rules/linear.py", "from derive import cells", "derive.rules is not allowed to import derive.cells"),
    ("case.py", "from derive import cli", "derive.case is not allowed to import derive.cli"),
    ("evaluate.py", "import rich", "derive.evaluate is not allowed to import rich"),
    ("errors.py", "import jinja2", "derive.errors is not allowed to import jinja2"),
]


@pytest.mark.parametrize("module, line, report", BREAKS, ids=[b[0] + ": " + b[1] for b in BREAKS])
def test_broken_layer_is_caught(tmp_path, module, line, report):
    staged = stage(tmp_path)
    path = staged / "derive" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # an import against the layers\n",
                    encoding="utf-8")
    result = lint(staged)
    assert result.returncode == 1
    assert report in result.stdout, result.stdout


def test_unplaced_module_is_caught(tmp_path):
    staged = stage(tmp_path)
    (staged / "derive" / "newcomer.py").write_text('"""A module in no layer."""\n', encoding="utf-8")
    result = lint(staged)
    assert result.returncode == 1
    assert "not listed as layers" in result.stdout and "- derive.newcomer" in result.stdout, result.stdout


def python(code: str, cwd: Path) -> str:
    """What a fresh interpreter prints running ``code`` in ``cwd`` (not the checkout, so
    that the package imported is the one installed, as in CI)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=cwd).stdout


def loaded_by(statement: str, cwd: Path) -> list[str]:
    """The modules a fresh interpreter has loaded after ``statement``."""
    return json.loads(python(f"import json, sys; {statement}; print(json.dumps(sorted(sys.modules)))", cwd))


def test_engine_loads_nothing_above_it(tmp_path):
    modules = loaded_by("import " + ", ".join(ENGINE), tmp_path)
    assert set(ENGINE) <= set(modules)  # the statement did import them
    tops = {m.partition(".")[0] for m in modules}
    assert not tops & {"rich", "typer", "jinja2"}
    derive = [m for m in modules if m == "derive" or m.startswith("derive.")]
    assert not [m for m in derive if m.startswith("derive.rules")]
    assert set(derive) - set(ENGINE) == {"derive"}  # no derivation, output or CLI module either


def test_public_api_is_lazy(tmp_path):
    """``import derive`` loads none of the modules behind its names until one is used."""
    assert [m for m in loaded_by("import derive", tmp_path) if m.startswith("derive.")] == []
    modules = loaded_by("from derive import Format", tmp_path)
    assert "derive.rounding" in modules and "derive.derivation" not in modules


def test_run_loads_only_what_it_prints(tmp_path):
    """``derive run`` (issue 12, start-up) imports no document renderer, no Jinja2 templates,
    no Lark grammar, no checker, no numpy or safetensors and no SymPy (half a second: the
    exact forms are for --exact and the JSON): those are for other commands; printing
    to a pipe, it imports none of Rich's console (15 ms)."""
    code = ("from typer.testing import CliRunner; from derive.cli import app; "
            "result = CliRunner().invoke(app, ['run', 'cat-climbed']); "
            "assert result.exit_code == 0 and 'z_roof' in result.output.replace(chr(0x2423), ''), result.output")
    modules = set(loaded_by(code, tmp_path))
    assert "derive.page" in modules and "derive.byhand" in modules  # the run did print its tables
    # (as text derive writes itself: the output is no terminal, and Rich's console, text and tables are not loaded)
    assert not modules & {"derive.render_rich", "rich.console", "rich.text", "rich.table"}
    # (SymPy's name is there, a module derive.lazy made to load on first use: its core must not be)
    unwanted = {"jinja2", "lark", "numpy", "safetensors", "sympy.core", "derive.render_doc", "derive.render_latex",
                "derive.templates", "derive.name_parser", "derive.check", "derive.export_json"}
    assert not modules & unwanted, sorted(modules & unwanted)


def test_numpy_runs_blas_on_one_thread(tmp_path):
    """derive's numpy (derive.lazy.numpy) has OpenBLAS on one thread: its workers spin
    between derive's many small products (more CPU, slower on 2 cores); a number of
    threads the environment gives is kept. Counted as the process's threads (OpenBLAS
    starts its workers when it loads), in fresh interpreters."""
    code = ("import os; from derive.lazy import numpy; np = numpy(); np.ones((64, 64)) @ np.ones((64, 64)); "
            "print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")}

    def run(**more) -> str:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              cwd=tmp_path, env={**env, **more}).stdout.split()

    assert run() == ["1", "1"]
    assert run(OPENBLAS_NUM_THREADS="2") == ["2", "2"]


def test_notebook_attaches_the_displays(tmp_path):
    """The README's notebook lines: importing derive.notebook makes steps display."""
    code = ("from derive.notebook import load; d = load('cat-climbed'); "
            "print(d.step('attention')._repr_html_().count('<details class=\"step\"'))")
    assert python(code, tmp_path).strip() == "1"


def test_readme_python_api_runs():
    """The README's "Python API" lines run as written; the seed 000's L = 0.928 checks out."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1].split("\n## ", 1)[0]
    code = "\n".join(line[4:] for line in section.splitlines() if line.startswith("    "))
    names: dict = {}
    exec(compile(code, "README.md", "exec"), names)
    d, L, derive = names["d"], names["L"], names["derive"]
    assert d.decimal(L, derive.Format()) == "0.928"
    assert [v.status for v in derive.Checker(d).check_text("L = 0.928\nL = 0.950")] == ["correct", "wrong"]
