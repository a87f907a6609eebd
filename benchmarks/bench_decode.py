"""8. Decoding results.jsonl: the standard library, orjson and msgspec on the same file (the choice behind
core/records/columns.py).

    python benchmarks/bench_decode.py [--tasks N] [--file results.jsonl] [--dir DIR] [--quick]

One selector's results.jsonl of N test tasks x 3 repeats in hermit's format (default N = 111,112: 333,336 lines,
a third of the million-attempt case), or --file. Each way decodes every line (warm, best of 3):

- ``json.loads`` per line (the standard library; dicts of everything);
- ``orjson.loads`` per line (dicts of everything), when orjson is installed;
- ``msgspec.json.decode`` per line, untyped (dicts of everything);
- msgspec typed: the struct core/records/columns.py decodes into (only the keys AttemptRecord validates; output and the
  other keys skipped);
- ``core.records.columns.read_table``: the whole reader (typed decoding, the checks that keep it equal to pydantic's,
the
  numpy columns);
- ``core.records.results.read_results``: AttemptRecord (pydantic) per line, what every view read before.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402


def best(fn, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(path: Path, runs: int) -> dict[str, float]:
    import msgspec

    from hermit_tui.core.records.columns import _DECODER, read_table
    from hermit_tui.core.records.results import read_results

    lines = [line for line in path.read_bytes().split(b"\n") if line.strip()]
    ways: dict[str, Callable[[], object]] = {"json.loads": lambda: [json.loads(x) for x in lines]}
    try:
        import orjson

        ways["orjson.loads"] = lambda: [orjson.loads(x) for x in lines]
    except ImportError:
        pass
    ways["msgspec untyped"] = lambda: [msgspec.json.decode(x) for x in lines]
    ways["msgspec typed (core.records.columns)"] = lambda: [_DECODER.decode(x) for x in lines]
    ways["read_table (the whole reader)"] = lambda: read_table(path).close()
    ways["read_results (pydantic)"] = lambda: read_results(path)
    return {name: best(fn, runs if "pydantic" not in name else 1) for name, fn in ways.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=111112, help="test tasks (x 3 repeats; default 111,112)")
    parser.add_argument("--file", help="decode this results.jsonl instead of a generated one")
    parser.add_argument("--dir", help="where the generated file goes (default: the system's temporary folder)")
    parser.add_argument("--quick", action="store_true", help="a tiny file (smoke test)")
    args = parser.parse_args(argv)
    synth.QUICK = args.quick
    with tempfile.TemporaryDirectory(prefix="hermit-bench-decode-", dir=args.dir) as tmp:
        if args.file:
            path = Path(args.file)
        else:
            project = Path(tmp) / "p"
            synth.make_project(project, tasks=300 if args.quick else args.tasks, tree=False)
            synth.write_evaluation(project, "final", synth.test_ids(project), 3)
            path = project / "runs" / synth.RUN / "eval" / "final" / "results.jsonl"
        size = path.stat().st_size
        got = measure(path, 1 if args.quick else 3)
    lines = sum(1 for _ in path.open("rb")) if args.file else (300 if args.quick else args.tasks) * 3
    print(f"# 8. decoding {lines:,} lines ({size / 1e6:.1f} MB)", flush=True)
    base = got["json.loads"]
    for name, seconds in got.items():
        print(f"#   {name:32s} {seconds:7.3f} s  ({base / seconds:5.1f}x json.loads)", flush=True)
    synth.figure(
        "decode.msgspec_typed_over_json",
        got["msgspec typed (core.records.columns)"] / base,
        detail="typed msgspec decoding / json.loads, per line of the same file",
    )
    synth.figure(
        "decode.read_table_over_json",
        got["read_table (the whole reader)"] / base,
        detail="core.records.columns.read_table (decoding, checks and numpy columns) / json.loads",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
