"""Reading the user's files without hanging or blowing up: only regular files are read (a FIFO, a socket or a
device named as a data file would block or never end), YAML aliases may neither refer to themselves nor expand past
a bound, and nothing nested deeper than MAX_DEPTH levels is accepted (deep nesting crashes the YAML composer, the JSON
parser or a deep copy later on, after something may already have been written).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from hermit_tui.core.errors import InputError

#: How deep a config value, task row or results line may nest (mappings and lists).
MAX_DEPTH = 100
#: How many values a YAML document may hold once its aliases are expanded (a few aliases can stand for billions).
MAX_NODES = 200_000

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


class NotRegularFile(OSError):
    """The path names a FIFO, socket or device: reading it could block forever or never end."""

    def __init__(self, path: Path, mode: int):
        kind = kind_of(mode)
        super().__init__(f"{kind}, not a regular file")
        self.strerror = f"{kind}, not a regular file"
        self.filename = str(path)


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a regular file. A FIFO is opened without blocking and refused, as are sockets and devices
    (NotRegularFile, an OSError); a folder raises IsADirectoryError; other failures are the usual OSErrors."""
    fd = open_regular(Path(path))
    with os.fdopen(fd, "rb", closefd=True) as fh:
        return fh.read()


def open_regular(path: Path, *, follow: bool = True) -> int:
    """A read-only descriptor on the regular file ``path``. A FIFO, socket or device (NotRegularFile) or a folder
    (IsADirectoryError) is refused *before* it is opened (opening a device can itself do something, and reading a
    FIFO or ``/dev/zero`` never ends), then checked again on the descriptor, which is opened without blocking; with
    ``follow`` False a symbolic link is refused too (ELOOP). The descriptor is closed on any failure."""
    mode = (os.stat if follow else os.lstat)(path).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "Is a directory", str(path))
    if stat.S_ISLNK(mode):
        raise OSError(40, "a symbolic link, not followed", str(path))
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, mode)
        return fd
    except BaseException:
        os.close(fd)
        raise


def check_regular(path: str | Path) -> None:
    """Refuse (NotRegularFile or IsADirectoryError, OSErrors) a path that exists and is not a regular file, without
    opening it; a missing path passes (FileNotFoundError is for the caller's open to raise)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "Is a directory", str(path))
    if not stat.S_ISREG(mode):
        raise NotRegularFile(Path(path), mode)


def read_text(path: str | Path, encoding: str = "utf-8") -> str:
    return read_bytes(path).decode(encoding)


def is_regular(path: str | Path) -> bool:
    """Whether ``path`` (following links) is a regular file."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether mappings and lists in ``value`` nest deeper than ``limit`` (checked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_nodes(root: yaml.Node, where: str) -> None:
    """Refuse a node graph that loops (an alias inside its own anchor), expands past MAX_NODES values or nests
    deeper than MAX_DEPTH, without recursion and without expanding anything."""
    done: dict[int, tuple[int, int]] = {}  # id -> (expanded size, depth)
    visiting: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finish = stack.pop()
        key = id(node)
        if finish:
            children = _children(node)
            size = 1 + sum(done[id(c)][0] for c in children)
            depth = 1 + max((done[id(c)][1] for c in children), default=0)
            visiting.discard(key)
            done[key] = (size, depth)
            line = node.start_mark.line + 1
            if size > MAX_NODES:
                raise InputError(
                    f"{where}:{line}: its aliases expand to more than {MAX_NODES:,} values (an alias bomb?)"
                )
            if depth > MAX_DEPTH:
                raise InputError(f"{where}:{line}: nested more than {MAX_DEPTH} levels deep")
            continue
        if key in done:
            continue
        visiting.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in visiting:
                raise InputError(
                    f"{where}:{child.start_mark.line + 1}: an alias refers to a value that holds it (recursive YAML)"
                )
            if id(child) not in done:
                stack.append((child, False))


def load_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load`` that refuses recursive aliases, alias bombs and deep nesting (InputError naming
    ``where``); a syntax error is still a yaml.YAMLError for the caller to word."""
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise InputError(f"{where}: nested too deeply to read (more than {MAX_DEPTH} levels)") from None
        if node is None:
            return None
        _check_nodes(node, where)
        return loader.construct_document(node)
    finally:
        loader.dispose()
