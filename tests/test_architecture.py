"""The house's rules, enforced: the engine (hermit_tui.core) imports no UI, widgets import no screen. The contracts
live in pyproject.toml (import-linter, run by .ci/run); these tests check that they hold on the tree and that they
break when a module breaks them (a contract that cannot fail proves nothing)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "hermit_tui"
CORE = PACKAGE / "core"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
needs_import_linter = pytest.mark.skipif(
    not LINT_IMPORTS.exists(), reason="import-linter is not installed (the test extra: pip install -e '.[test]')"
)


def test_core_sources_import_no_textual():
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("textual", "textual_plotext")]
    assert offenders == []


def core_modules() -> list[str]:
    """Every module of the engine, its stage packages included, as dotted names."""
    names = []
    for path in sorted(CORE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_engine_is_in_stage_packages():
    stages = {p.name for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert stages == {"workspace", "records", "stats", "why", "run", "report", "publish"}
    assert len(core_modules()) > 60  # the walk reaches into the stages


def test_no_folder_holds_more_than_16_modules():
    crowded = {}
    for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > 16 and "demo/files" not in folder.as_posix():
            crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert crowded == {}


def test_importing_every_core_module_loads_no_textual_and_no_dashboard():
    modules = core_modules()
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_plotext', 'rich')"
        " or m.startswith(('hermit_tui.demo', 'hermit_tui.dashboard', 'hermit_tui.cli',"
        " 'hermit_tui.settings'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter with the project's contracts on the package found under ``root`` (first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def copy_of_the_package(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGE, tmp_path / "hermit_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@needs_import_linter
def test_the_contracts_hold_on_the_tree(tmp_path):
    done = lint_imports(copy_of_the_package(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:]
    assert "BROKEN" not in done.stdout and " kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "source", "contract"),
    [
        ("core/_leak.py", "import textual.widgets\n", "The engine (hermit_tui.core)"),
        ("core/_leak.py", "from hermit_tui.demo import build_demo\n", "The engine (hermit_tui.core)"),
        (
            "core/_leak.py",
            "def later():\n    from hermit_tui.dashboard.state.store import EvalStore\n",
            "The engine (hermit_tui.core)",
        ),
        ("core/records/_leak.py", "from hermit_tui.cli import main\n", "The engine (hermit_tui.core)"),
        # the stages, one rule: only downwards, and report and publish apart
        ("core/stats/figures.py", "from hermit_tui.core.run.runner import EvalRun\n", "The engine's stages"),
        (
            "core/records/columns.py",
            "def later():\n    from hermit_tui.core.stats.figures import PairStats\n",
            "The engine's stages",
        ),
        ("core/workspace/config.py", "from hermit_tui.core.records.results import Summary\n", "The engine's stages"),
        ("core/report/build.py", "from hermit_tui.core.publish.plan import plan_publish\n", "The engine's stages"),
        ("core/publish/plan.py", "from hermit_tui.core.report.gate import run_gate\n", "The engine's stages"),
        ("core/present.py", "from hermit_tui.core.workspace.config import Config\n", "The engine's stages"),
        # stop when decided, stage by stage: the boundaries know nothing of the monitor, the anytime design's names
        # nothing of the text that reads both designs (the circle the sub-package's order removed)
        (
            "core/stats/sequential/spending.py",
            "from hermit_tui.core.stats.sequential.monitor import SequentialMonitor\n",
            "Stop when decided",
        ),
        (
            "core/stats/sequential/anytime_looks.py",
            "def later():\n    from hermit_tui.core.stats.sequential.text import look_text\n",
            "Stop when decided",
        ),
        # the gate, stage by stage: its objects know nothing of the checks that build them
        (
            "core/report/gate/model.py",
            "def later():\n    from hermit_tui.core.report.gate.checks import decide\n",
            "The gate",
        ),
        # the package: commands over the dashboard over the engine; inside each, floor by floor
        (
            "dashboard/state/column.py",
            "from hermit_tui.dashboard.state.store import EvalStore\n",
            "The dashboard's state",
        ),
        (
            "dashboard/widgets/_leak.py",
            "from hermit_tui.dashboard.screens.help import HelpScreen\n",
            "The dashboard, floor by floor",
        ),
        ("dashboard/state/_leak.py", "from hermit_tui.cli.report import run\n", "The house"),
        ("cli/common.py", "from hermit_tui.cli.gate import run\n", "The commands"),
    ],
)
@needs_import_linter
def test_a_module_breaking_a_contract_fails_the_check(tmp_path, module, source, contract):
    root = copy_of_the_package(tmp_path)
    path = root / "hermit_tui" / module
    path.write_text((path.read_text() if path.exists() else "") + source)  # an existing module gets one more line
    done = lint_imports(root)
    assert done.returncode == 1, done.stdout[-3000:]
    listing = " ".join(done.stdout.split("Broken contracts")[0].split())  # import-linter wraps long names
    listing = listing.split("dependencies. ")[1].strip("- ").split(" Contracts: ")[0]
    parts = re.split(r" ?\b(KEPT|BROKEN)\b ?", listing)  # name, verdict, name, verdict, ...
    broken = [name for name, verdict in zip(parts[::2], parts[1::2]) if verdict == "BROKEN"]
    assert any(name.startswith(contract) for name in broken), listing  # (an engine leak breaks the house too)
    assert "hermit_tui." + module.replace("/", ".").removesuffix(".py") in done.stdout


def test_every_package_of_the_tree_is_installed():
    """pyproject.toml lists the packages (the styles live outside hermit_tui/, so a finder cannot be used): a package
    missing from the list would be absent from the wheel and from an editable install's finder."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(d.relative_to(ROOT).parts)
        for d in PACKAGE.rglob("*")
        if d.is_dir() and (d / "__init__.py").exists() and "files" not in d.relative_to(PACKAGE).parts
    }
    assert listed == found | {"hermit_tui", "hermit_tui.styles"}


def test_the_command_line_starts_without_the_heavy_libraries():
    """Building the parser (what --help and every command pay first) imports none of numpy, yaml, git, textual,
    pydantic's models of the engine or the columns: each command imports what it needs when it runs (issue 30)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from hermit_tui.cli import _parser\n"
        "_parser()\n"
        "heavy = ['numpy', 'yaml', 'git', 'textual', 'scipy', 'hermit_tui.core.records.columns',\n"
        "         'hermit_tui.dashboard']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# what each reading command must not import on a small evaluation (issue 30: their start-up is their cost); each
# probe runs the command in a fresh interpreter and lists the modules actually loaded (a lazy module not yet used,
# core/lazy.py's placeholder, does not count)
# numpy.ma: numpy 2.4's plain np.unique imports it (~15 ms); the paired test's _distinct does not
READING_NEVER = [
    "scipy",
    "numpy.ma",
    "textual",
    "rich",
    "hermit_tui.dashboard",
    "hermit_tui.core.run",
    "hermit_tui.core.publish",
]
READING_PROBE = (
    "import contextlib, io, sys\n"
    "from hermit_tui.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    code = main(sys.argv[2:])\n"
    "assert code in (0, 3), code\n"
    "loaded = {m for m, mod in sys.modules.items() if type(mod).__name__ != '_LazyModule'}\n"
    "print(','.join(m for m in sys.argv[1].split(',') if m in loaded))\n"
)


LAUNCH_PROBE = (
    "import sys\n"
    "from hermit_tui.core.run.runner import EvalRun\n"
    "from hermit_tui.core.workspace.config import load_config\n"
    "config = load_config(sys.argv[2], ['agent.params.latency_scale=0.01'])\n"
    "plain = sys.argv[3] == 'plain'\n"
    "opts = dict(update_card=False, **(dict(limit=2) if plain else dict(cluster_by='category')))\n"
    "EvalRun(config, ['none', 'final'], **opts).run_sync()\n"
    "loaded = {m for m, mod in sys.modules.items() if type(mod).__name__ != '_LazyModule'}\n"
    "print(','.join(m for m in sys.argv[1].split(',') if m in loaded))\n"
)


def test_a_plain_launch_loads_no_statistics(demo_config):
    """A launch without --stop-when-decided or clusters imports neither numpy nor the sequential statistics (they
    load with the options that use them: core/run/plan.py, runner.py, events.py), nor GitPython (its adapter
    exports are plain git), nor scipy or the UI."""
    never = ["numpy", "git", "scipy", "textual", "rich", "hermit_tui.dashboard", "hermit_tui.core.run.runner"]
    never += ["hermit_tui.core.stats.sequential"]  # (any module of stop-when-decided loads this package)
    found = {}
    for kind in ("plain", "clustered"):
        out = subprocess.run(
            [sys.executable, "-c", LAUNCH_PROBE, ",".join(never), str(demo_config), kind],
            capture_output=True,
            text=True,
            cwd=demo_config.parent,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        found[kind] = out.stdout.strip().split(",")
    assert found["plain"] == ["hermit_tui.core.run.runner"]  # the probe sees the launch's own modules
    assert "numpy" in found["clustered"]  # and what an option that uses the statistics loads


EVAL_COMMAND_PROBE = (
    "import contextlib, io, sys\n"
    "from hermit_tui.cli import main\n"
    "args = ['eval', '--config', sys.argv[2], '--adapter', 'none', '--limit', '2', 'agent.params.latency_scale=0.01']\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    code = main(args + sys.argv[3:])\n"
    "loaded = {m for m, mod in sys.modules.items() if type(mod).__name__ != '_LazyModule'}\n"
    "print(code, ','.join(m for m in sys.argv[1].split(',') if m in loaded))\n"
)


def test_the_eval_command_loads_the_gate_and_its_statistics_only_when_a_gate_is_asked_for(demo_config):
    """``hermit-tui eval`` without a gate option imports neither numpy nor the gate (cli/gate.py's plan_for_eval
    checks that a gate was asked for before its imports); with ``--require complete`` it does."""
    watched = "numpy,hermit_tui.core.report.gate,git"
    found = {}
    for kind, extra in (("plain", []), ("gated", ["--require", "complete"])):
        out = subprocess.run(
            [sys.executable, "-c", EVAL_COMMAND_PROBE, watched, str(demo_config), *extra],
            capture_output=True,
            text=True,
            cwd=demo_config.parent,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        found[kind] = out.stdout.split()
    assert found["plain"] == ["0"]  # exit 0, none of the watched modules
    # exit 3: a smoke evaluation (--limit) never passes "complete"; the gate ran, with its modules
    assert found["gated"][0] == "3" and "hermit_tui.core.report.gate" in found["gated"][1].split(",")


def test_report_gate_and_show_on_a_small_evaluation_import_only_what_they_use(demo_config):
    """``report`` reads the adapter tree with plain git (no GitPython) and the HTML page's modules only for
    --format html; ``gate`` touches neither git nor the why summary; ``show`` reads one task without numpy, the
    columns or git; none of them loads scipy, the UI, the runner or publishing."""
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    fast = ["agent.params.latency_scale=0.01"]
    config = load_config(demo_config, fast)
    EvalRun(config, ["none", "root", "final"], repeats=1, update_card=False).run_sync()
    task = (demo_config.parent / "test.txt").read_text().split()[0]
    cfg = ["--config", str(demo_config), *fast]
    never = {
        "report": [*READING_NEVER, "git", "hermit_tui.core.report.html", "hermit_tui.core.report.svg"],
        "gate": [*READING_NEVER, "git", "hermit_tui.core.why"],
        "show": [*READING_NEVER, "git", "numpy", "hermit_tui.core.records.columns"],
    }
    argv = {"report": ["report", *cfg], "gate": ["gate", *cfg], "show": ["show", *cfg, "--adapter", "final"]}
    argv["show"] += ["--task", task]
    found = {}
    for name, modules in never.items():
        out = subprocess.run(
            [sys.executable, "-c", READING_PROBE, ",".join(modules), *argv[name]],
            capture_output=True,
            text=True,
            cwd=demo_config.parent,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        found[name] = out.stdout.strip()
    assert found == {"report": "", "gate": "", "show": ""}
    # the probe sees what it is meant to: the same report loads each of these when its format asks for them
    html = subprocess.run(
        [sys.executable, "-c", READING_PROBE, "hermit_tui.core.report.html,numpy", *argv["report"], "--format", "html"],
        capture_output=True,
        text=True,
        cwd=demo_config.parent,
    )
    assert html.stdout.strip() == "hermit_tui.core.report.html,numpy", html.stderr[-2000:]


BLAS_PROBE = (
    "import os, sys\n"
    "from hermit_tui.cli.common import import_numpy_one_blas_thread\n"
    "if sys.argv[1] == 'helper':\n"
    "    import_numpy_one_blas_thread()\n"
    "import numpy as np\n"
    "a = np.ones((600, 600))\n"
    "a @ a\n"  # a product large enough for OpenBLAS to use its whole pool
    "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS', '-'))\n"
)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir() or len(os.sched_getaffinity(0)) < 2, reason="Linux, 2+ CPUs")
@pytest.mark.parametrize(
    ("how", "env", "threads", "variable"),
    [
        ("plain", {}, None, "-"),  # numpy alone starts a pool of several threads (what the helper avoids)
        ("helper", {}, 1, "-"),  # one thread, and the variable is gone after the import
        ("helper", {"OPENBLAS_NUM_THREADS": "2"}, 2, "2"),  # a user's setting wins
        ("helper", {"OMP_NUM_THREADS": "2"}, 2, "-"),
    ],
)
def test_the_reading_commands_load_numpy_with_one_blas_thread(how, env, threads, variable):
    blas = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
    clean = {k: v for k, v in os.environ.items() if k not in blas}
    out = subprocess.run(
        [sys.executable, "-c", BLAS_PROBE, how], capture_output=True, text=True, env={**clean, **env}, check=True
    )
    seen, left = out.stdout.split()
    assert left == variable
    if threads is None:
        assert int(seen) > 1
    else:
        assert int(seen) == threads


FREEZE_PROBE = (
    "import gc, sys\n"
    "from hermit_tui.cli import main\n"
    "words = sys.argv[2:]\n"
    "if sys.argv[1] == 'process':\n"
    "    sys.argv = ['hermit-tui', *words]\n"
    "    code = main()\n"
    "else:\n"
    "    code = main(words)\n"
    "print(code, gc.get_freeze_count() > 0, gc.isenabled())\n"
)


@pytest.mark.parametrize(
    ("how", "words", "expected"),
    [
        # a reading command, even on bad input; the collector paused for its imports is running again
        ("process", ["report", "--config", "missing/run.yaml"], "2 True True"),
        ("process", ["gate", "--config", "missing/run.yaml"], "2 True True"),
        ("process", ["show", "--config", "missing/run.yaml", "--adapter", "a", "--task", "t"], "2 True True"),
        # eval too (its exit collects first: the test below); a usage mistake ends before any command runs
        ("process", ["eval", "--config", "missing/run.yaml", "--adapter", "none"], "2 True True"),
        ("process", ["eval", "--config", "missing/run.yaml"], "2 False True"),
        ("process", ["publish", "--config", "missing/run.yaml"], "2 False True"),  # neither reading nor eval
        ("in-process", ["report", "--config", "missing/run.yaml"], "2 False True"),  # a process that goes on
    ],
)
def test_the_reading_commands_leave_their_objects_out_of_the_exits_collections(tmp_path, how, words, expected):
    out = subprocess.run(
        [sys.executable, "-c", FREEZE_PROBE, how, *words], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert out.stdout.strip() == expected, out.stderr[-2000:]


PAUSE_PROBE = (
    "import gc, sys\n"
    "from hermit_tui.cli import common, main\n"
    "seen = []\n"
    "done = common.imports_done\n"
    "def watched():\n"
    "    seen.append((gc.isenabled(), 'numpy' in sys.modules))\n"
    "    done()\n"
    "common.imports_done = watched\n"
    "sys.argv = ['hermit-tui', *sys.argv[1:]]\n"
    "main()\n"
    "print(seen[0], gc.isenabled())\n"
)


def test_report_imports_the_engine_with_the_collector_paused_and_resumes_it(tmp_path):
    """report (run as the process's own command) reaches imports_done with the engine imported and the collector
    paused, and ends with it running."""
    out = subprocess.run(
        [sys.executable, "-c", PAUSE_PROBE, "report", "--config", "missing/run.yaml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert out.stdout.strip() == "(False, True) True", out.stderr[-2000:]


PLUGINS_PROBE = (
    "import contextlib, io, sys\n"
    "from hermit_tui.cli import main\n"
    "how, words = sys.argv[1], sys.argv[2:]\n"
    "sys.argv = ['hermit-tui', *words]\n"
    "out = io.StringIO()\n"
    "with contextlib.redirect_stdout(out):\n"
    "    code = main() if how == 'process' else main(words)\n"
    "print(code, 'importlib.metadata' in sys.modules)\n"
    "print(out.getvalue(), end='')\n"
)


def test_the_reading_commands_build_their_models_without_pydantic_plugins(demo_config):
    """report, gate and show run as the process's own command skip pydantic's plugin lookup (cli.common
    skip_pydantic_plugins: no importlib.metadata, ~10 ms each) and print what the same command prints in a process
    that goes on, where pydantic looked its plugins up; a bad input there is still the same one line."""
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    fast = ["agent.params.latency_scale=0.01"]
    EvalRun(load_config(demo_config, fast), ["none", "final"], repeats=1, update_card=False).run_sync()
    task = (demo_config.parent / "test.txt").read_text().split()[0]
    cfg = ["--config", str(demo_config)]
    commands = [
        ["report", *cfg, "--format", "json"],
        ["gate", *cfg, "--format", "json"],
        ["show", *cfg, "--adapter", "final", "--task", task, "--format", "json"],
    ]
    for words in commands:
        got = {}
        for how in ("process", "in-process"):
            done = subprocess.run(
                [sys.executable, "-c", PLUGINS_PROBE, how, *words],
                capture_output=True,
                text=True,
                cwd=demo_config.parent,
            )
            assert done.returncode == 0, done.stderr[-2000:]
            got[how] = done.stdout.split("\n", 1)
        code = got["process"][0].split()[0]  # the gate fails (3) on a single repeat: the same either way
        assert code in ("0", "3") and got["process"][0] == f"{code} False" and got["in-process"][0] == f"{code} True"
        assert got["process"][1] == got["in-process"][1] and len(got["process"][1]) > 200, words
    bad = subprocess.run(
        [sys.executable, "-m", "hermit_tui", "show", *cfg, "--adapter", "final", "--task", task, "--repeat", "0"],
        capture_output=True,
        text=True,
        cwd=demo_config.parent,
    )
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and "Traceback" not in bad.stderr


def test_the_plugin_loader_hermit_tui_puts_in_place_has_every_name_pydantic_imports_from_it():
    """The stand-in for pydantic's plugin loader (cli.common.skip_pydantic_plugins) offers every name the installed
    pydantic imports from ``pydantic.plugin._loader``: a pydantic that asks for more fails here, not in a user's
    report."""
    import pydantic

    from hermit_tui.cli import common

    wanted: set[str] = set()
    for path in Path(pydantic.__file__).parent.rglob("*.py"):
        package = ".".join(path.relative_to(Path(pydantic.__file__).parent.parent).with_suffix("").parts[:-1])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p) if node.level else node.module
            if module == common.PYDANTIC_PLUGIN_LOADER:
                wanted |= {alias.name for alias in node.names}
    assert wanted == {"get_plugins"} <= set(common.PYDANTIC_LOADER_NAMES)
    probe = (
        "import sys\n"
        "from hermit_tui.cli import common\n"
        "common.skip_pydantic_plugins()\n"
        "loader = sys.modules[common.PYDANTIC_PLUGIN_LOADER]\n"
        "from pydantic import BaseModel\n"
        "class M(BaseModel):\n"
        "    x: int\n"
        "print(all(hasattr(loader, n) for n in common.PYDANTIC_LOADER_NAMES), list(loader.get_plugins()),\n"
        "      M(x='3').x, 'importlib.metadata' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT.parent, check=True)
    assert out.stdout.split() == ["True", "[]", "3", "False"], out.stderr[-2000:]


EXIT_PROBE = (
    "import sys\n"
    "from hermit_tui.cli import _exit_lightly\n"
    "class Loop:\n"
    "    def __init__(self):\n"
    "        self.me = self\n"
    "    def __del__(self):\n"
    "        sys.stdout.write('finalized\\n')\n"
    "        sys.stdout.flush()\n"
    "Loop()\n"  # garbage at once, in a cycle: only the collector finds it
    "_exit_lightly(collect=sys.argv[1] == 'collect')\n"
    "print('end')\n"
)


def test_evals_exit_runs_the_finalizers_of_the_cycles_it_left_before_freezing():
    """eval's light exit (``_exit_lightly(collect=True)``) collects the cycles the launch left, so their finalizers
    run as at a plain exit; the reading commands' freeze alone leaves such a cycle unfinalized (the probe sees the
    difference)."""
    got = {
        how: subprocess.run(
            [sys.executable, "-c", EXIT_PROBE, how], capture_output=True, text=True, cwd=ROOT.parent, check=True
        ).stdout.split()
        for how in ("collect", "freeze")
    }
    assert got == {"collect": ["finalized", "end"], "freeze": ["end"]}
