"""Modules imported on first use: a command that never touches them does not pay their import (issue 30).

``git = lazy_module("git")`` binds a module whose code runs at its first attribute access (the standard library's
``importlib.util.LazyLoader``); once run it is the ordinary module, and ``sys.modules`` holds it, so a later
``import git`` anywhere gets the same object. Declare the real import under ``TYPE_CHECKING`` for the type checker.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """``name`` as a module that is imported when first used (the module itself when it is imported already)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
