"""hermit-tui: compare Hermit harness adapters under a fixed evaluation protocol."""
from hermit_tui.core.outputs import JudgeResult, RunOutput

__version__ = "0.1.0"
__all__ = ["JudgeResult", "RunOutput", "__version__"]
