"""What every command shares: the exit codes and a parser whose usage mistakes are one line.

Exit codes: 0 done, 2 bad input (one line on stderr, no traceback), 3 a gate failed (``gate``, ``eval --require``),
1 anything else (including a cancelled run).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import types

from hermit_tui.core.errors import InputError

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line and exit code 2 like every other bad input."""

    def error(self, message: str):
        raise InputError(f"{self.prog}: {message}")


# whether pause_collector paused the cyclic garbage collector (imports_done resumes it)
_COLLECTOR = {"paused": False}


def pause_collector() -> None:
    """Pause the cyclic garbage collector while a command imports the engine (``main`` calls it for ``report``,
    ``gate``, ``show`` and ``eval`` run as the process's own command; the command calls :func:`imports_done` once
    its modules are in). The ~75k objects the imports build (modules, pydantic's schemas, numpy) are long-lived:
    collecting while they pile up is ~100 young collections that find almost nothing (10-20 ms of report's CPU,
    issue 30); frozen after, they stay out of the full collections of eval's launch too."""
    if gc.isenabled():
        gc.disable()
        _COLLECTOR["paused"] = True


def imports_done() -> None:
    """Resume the collector paused by :func:`pause_collector`, the imported objects first moved out of its reach
    (``gc.freeze``: the process keeps them to its end; the few cycles the imports left, ~1,300 objects on the
    demo's report, stay with them). Nothing when the collector was not paused (``main`` called by the tests)."""
    if _COLLECTOR["paused"]:
        _COLLECTOR["paused"] = False
        gc.freeze()
        gc.enable()


# the module pydantic asks for its plugins when it builds its first model (pydantic/plugin/_schema_validator.py:
# ``from ._loader import get_plugins``), and the names it imports from it (tests/test_architecture.py checks them
# against the installed pydantic)
PYDANTIC_PLUGIN_LOADER = "pydantic.plugin._loader"
PYDANTIC_LOADER_NAMES = ("get_plugins",)


def _no_plugins() -> tuple[()]:
    return ()


def skip_pydantic_plugins() -> None:
    """Build this process's pydantic models with no pydantic plugins, for a reading command (``main`` calls it for
    ``report``, ``gate`` and ``show`` run as the process's own command, before the engine imports pydantic).

    pydantic looks its plugins up in the installed packages' entry points when it builds its first model: the
    import of ``importlib.metadata`` (email, zipfile, csv, socket ...) and the scan cost ~10 ms of each reading
    command (show on the demo 0.125 -> 0.111 s, issue 30), for plugins (observability hooks on validation) that
    have nothing to observe in a command that reads hermit's files and runs no user code. The loader is replaced
    by one that finds none; nothing when pydantic or its loader is imported already (the process's plugins are
    loaded then), and never for ``eval`` or the dashboard, whose pipelines may use pydantic themselves."""
    if "pydantic" in sys.modules or PYDANTIC_PLUGIN_LOADER in sys.modules:
        return
    loader = types.ModuleType(PYDANTIC_PLUGIN_LOADER, "hermit-tui's reading commands: no pydantic plugins")
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]
    sys.modules[PYDANTIC_PLUGIN_LOADER] = loader


# the variables that set OpenBLAS's threads (it reads them in this order when numpy loads it); a user's own wins
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def import_numpy_one_blas_thread() -> None:
    """Import numpy with OpenBLAS's thread pool at one thread, for a command that reads files (report, gate).

    numpy's wheels start OpenBLAS's pool, a thread per core, when numpy is imported: measured at about 50 ms of
    CPU per command on two cores (``import numpy`` 0.12 -> 0.07 s CPU; issue 30), for a pool that the vector
    arithmetic of the reading commands does not need. The variable is set for the import only and removed after, so
    nothing this process starts inherits it; a user who set any of ``BLAS_THREADS`` keeps their setting, and a
    process that imported numpy already keeps its pool."""
    if "numpy" in sys.modules or any(name in os.environ for name in BLAS_THREADS):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


__all__ = [
    "BLAS_THREADS",
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_OK",
    "PYDANTIC_LOADER_NAMES",
    "PYDANTIC_PLUGIN_LOADER",
    "Parser",
    "import_numpy_one_blas_thread",
    "imports_done",
    "pause_collector",
    "skip_pydantic_plugins",
]
