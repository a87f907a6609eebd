"""The house's rules, enforced: the engine (hermit_tui.core) imports no UI, widgets import no screen. The contracts
live in pyproject.toml (import-linter, run by .ci/run); these tests check that they hold on the tree and that they
break when a module breaks them (a contract that cannot fail proves nothing)."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "hermit_tui"
CORE = PACKAGE / "core"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
needs_import_linter = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (the "
                                         "test extra: pip install -e '.[test]')")


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


def test_importing_every_core_module_loads_no_textual_and_no_dashboard():
    modules = sorted(p.stem for p in CORE.glob("*.py") if p.stem != "__init__")
    code = ("import sys\n" + "".join(f"import hermit_tui.core.{m}\n" for m in modules)
            + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_plotext', 'rich')"
              " or m.startswith(('hermit_tui.demo', 'hermit_tui.store', 'hermit_tui.app', 'hermit_tui.screens',"
              " 'hermit_tui.widgets'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter with the project's contracts on the package found under ``root`` (first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")], cwd=root,
                          capture_output=True, text=True, env=env, timeout=300)


def copy_of_the_package(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGE, tmp_path / "hermit_tui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@needs_import_linter
def test_the_contracts_hold_on_the_tree(tmp_path):
    done = lint_imports(copy_of_the_package(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:]
    assert "BROKEN" not in done.stdout and " kept, 0 broken" in done.stdout


@pytest.mark.parametrize(("module", "source", "contract"), [
    ("core/_leak.py", "import textual.widgets\n", "The engine (hermit_tui.core)"),
    ("core/_leak.py", "from hermit_tui.demo import build_demo\n", "The engine (hermit_tui.core)"),
    ("core/_leak.py", "def later():\n    from hermit_tui.store import EvalStore\n", "The engine (hermit_tui.core)"),
    ("core/_leak.py", "from hermit_tui.store_column import Column\n", "The engine (hermit_tui.core)"),
    ("store_column.py", "from hermit_tui.store import EvalStore\n", "The house, floor by floor"),
    ("widgets/_leak.py", "from hermit_tui.screens.help import HelpScreen\n", "Widgets are reusable"),
])
@needs_import_linter
def test_a_module_breaking_a_contract_fails_the_check(tmp_path, module, source, contract):
    root = copy_of_the_package(tmp_path)
    path = root / "hermit_tui" / module
    path.write_text((path.read_text() if path.exists() else "") + source)  # an existing module gets one more line
    done = lint_imports(root)
    assert done.returncode == 1, done.stdout[-3000:]
    broken = [line for line in done.stdout.splitlines() if line.endswith("BROKEN")]
    assert broken and "hermit_tui." + module.replace("/", ".").removesuffix(".py") in done.stdout
    assert contract.split()[0] in done.stdout
