"""hermit-tui: compare Hermit harness adapters under a fixed evaluation protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermit_tui.core.version import __version__

if TYPE_CHECKING:
    from hermit_tui.core.outputs import JudgeResult, RunOutput

__all__ = ["JudgeResult", "RunOutput", "__version__"]


def __getattr__(name: str) -> Any:
    """``JudgeResult`` and ``RunOutput`` (what a pipeline returns) load when asked for: ``hermit-tui --help`` and
    the commands that never build them skip their import (issue 30)."""
    if name in ("JudgeResult", "RunOutput"):
        from hermit_tui.core import outputs

        return getattr(outputs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
