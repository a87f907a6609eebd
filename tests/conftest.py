"""Shared fixtures: a hermetic git, private settings and caches, and demo workspaces (built once per worker, copied
per test: demo_copies.py). Helpers live in modules the tests import by name (fixture_data.py, demo_copies.py,
stats_by_hand.py), never in conftest.

The suite runs in parallel (pytest-xdist, ``-n auto`` in pyproject.toml): each worker has its own temporary
directory, every test its own settings and cache folders, each tmux test its own server socket, each browser test
its own profile; nothing is shared between tests but the read-only sources and the trained project (read-only
too: trained_template)."""

from __future__ import annotations

import compileall
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from demo_copies import copy_workspace

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


@pytest.hookimpl(tryfirst=True)  # before xdist starts its workers
def pytest_configure(config: pytest.Config) -> None:
    """Snapshots are updated in one process: syrupy, run in several workers, would see the other workers' snapshots
    as unused and delete them."""
    if config.getoption("--snapshot-update", default=False):
        config.option.numprocesses, config.option.dist, config.option.tx = 0, "no", []
    if not hasattr(config, "workerinput"):  # once per session, in the process that starts the workers
        compile_the_package()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` starts two workers per core, not one: a worker waits about half its time (Textual's idle checks,
    the subprocesses it starts, timeouts waited on purpose), so on 2 cores four workers finish the suite in 207 s
    where two take 250 s (benchmarks/RESULTS.md, "The test suite")."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cores = os.cpu_count() or 1
    return 2 * cores


PACKAGE = Path(__file__).resolve().parent.parent / "hermit_tui"


def compile_the_package() -> None:
    """hermit_tui's bytecode, written once per session where PYTHONDONTWRITEBYTECODE is set (as on the machines the
    suite is timed on), as a regular install writes it: an editable install has none, so every ``python -m
    hermit_tui`` the suite starts (hundreds) would compile the modules it imports again, 0.1 s of CPU each (eval on the
    demo: 0.47 -> 0.33 s). Up-to-date files are skipped (a few ms). Not the demo's pipeline and judge, which are
    copied into workspaces, not modules of the package."""
    compileall.compile_dir(PACKAGE, quiet=1, rx=re.compile(r"[/\\]demo[/\\]files[/\\]"))


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session):
    """The test modules' rewritten asserts are cached (tests/__pycache__) even where PYTHONDONTWRITEBYTECODE is set:
    otherwise every worker rewrites all of them again before its first test (9 s of CPU of the 11 s a collection
    took). Only while collecting: the tests themselves run with the interpreter's setting as it was."""
    before, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        yield
    finally:
        sys.dont_write_bytecode = before


@pytest.fixture(autouse=True)
def private_state(tmp_path_factory, monkeypatch):
    """Settings (recent configs, launch choices) and caches (the demo's default folder) of this test only: tests in
    parallel workers never read or write one another's, nor the developer's."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(state / "settings"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(state / "cache"))


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path_factory, monkeypatch):
    """No global or system git configuration, as on CI: nothing may depend on the developer's git identity."""
    empty = tmp_path_factory.getbasetemp() / "empty-gitconfig"
    empty.touch()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory) -> Path:
    """A demo workspace built once per test session; tests copy it (cheap) rather than rebuild it."""
    from hermit_tui.demo import build_demo

    return build_demo(tmp_path_factory.mktemp("demo-template") / "demo").parent


@pytest.fixture(scope="session")
def trained_template(tmp_path_factory, worker_id) -> Path:
    """The project the real hermit trains and evaluates (tests/trained_project.py), built once per test session,
    for every worker: hermit's train and evaluations take 10-15 s of CPU, and five modules, on either worker, read it.
    Never written: modules copy it (trained_project.copy_trained_project).

    Under xdist the first worker to need it builds it in the session's folder shared by the workers, under a file
    lock; the others wait for it and read the same project (built at one path, its commit ids are the same)."""
    from trained_project import build_trained_project

    if worker_id == "master" or fcntl is None:  # one process, or no flock: a build of its own
        dest = tmp_path_factory.mktemp("trained-template") / "project"
        build_trained_project(dest)
        return dest
    shared = tmp_path_factory.getbasetemp().parent / "trained-template"  # this session's, beside each worker's
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "built").exists():
            if (shared / "project").exists():  # a build that failed half-way in another worker
                shutil.rmtree(shared / "project")
            build_trained_project(shared / "project")
            (shared / "built").touch()
    return shared / "project"


@pytest.fixture
def demo_config(demo_template, tmp_path) -> Path:
    """A private copy of the demo workspace for one test; returns its run.yaml."""
    return copy_workspace(demo_template, tmp_path / "demo")
