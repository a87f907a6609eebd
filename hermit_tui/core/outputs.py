"""What a pipeline and a judge return, in hermit-harness's shape.

Pipelines written for hermit return ``hermit.task.RunOutput``; pipelines written without hermit installed can return
this module's ``RunOutput`` (same fields) or a mapping with an ``output`` key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class RunOutput:
    output: Any
    log: Path | str | None = None
    cost_usd: float | None = None
    wall_s: float = 0.0
    api_speed: dict[str, Any] | None = None
    messages: list[Any] | None = None
    tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class JudgeResult:
    score: float
    feedback: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
