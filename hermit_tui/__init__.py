"""hermit-tui: compare Hermit harness adapters under a fixed evaluation protocol."""

from hermit_tui.core.outputs import JudgeResult, RunOutput
from hermit_tui.core.version import __version__

__all__ = ["JudgeResult", "RunOutput", "__version__"]
