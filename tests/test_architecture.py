"""The engine (hermit_tui.core) must not depend on the UI: nothing under it imports Textual."""
import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "hermit_tui" / "core"


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


def test_importing_every_core_module_loads_no_textual():
    modules = sorted(p.stem for p in CORE.glob("*.py") if p.stem != "__init__")
    code = ("import sys\n" + "".join(f"import hermit_tui.core.{m}\n" for m in modules)
            + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_plotext')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
