"""The demo's acting agent: a simulated solver whose skill comes from the adapter's ADAPTER.md.

A teaching toy, not a model. Every bullet of ADAPTER.md that starts with a skill tag, ``- [arithmetic] ...``, is a
hint for that task category; each hint raises the category's skill by one level (at most three). No adapter
(``adapter=None``) is the no-adapter baseline: level 0 everywhere. The solver computes the right answer, then keeps
it with a probability set by the category's skill; otherwise it makes a typical mistake (some earn partial credit).

Every draw is a hash of (task id, repeat, sha256 of ADAPTER.md), so an attempt is reproducible per task, repeat and
adapter. The repeat comes from hermit-tui's runner when it runs us; under ``hermit eval``, which runs repeats one
after another, a per-process counter per (task, adapter) stands in for it.

An adapter may also export tools (``exports.tools`` of its ``adapter.yaml``). The demo's ``adapters/unit-table``
exports ``unit_table``: on a unit conversion, the agent calls it first in most attempts (a draw decides), and an
attempt that looked the factor up is more often right. No other version exports a tool, so only that directory's
trajectories show the call.

Each attempt writes a short log. Under hermit-tui it goes where ``attempt_log_path()`` says (inside the evaluation's
folder); elsewhere to ``logs/`` beside this file. Either way the file name is made from the task id with anything but
letters, digits, ``.``, ``_`` and ``-`` replaced, so an id such as ``../../x`` cannot write outside.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
import threading
import time
from pathlib import Path

try:
    from hermit_tui.core.context import current_repeat
except ImportError:  # run by hermit itself, without hermit-tui installed

    def current_repeat():
        return None


try:
    from hermit_tui.core.context import attempt_log_path
except ImportError:  # without hermit-tui (or an older one): logs/ beside this file

    def attempt_log_path(suffix=".log"):
        return None


try:
    from hermit.task import RunOutput
except ImportError:
    try:
        from hermit_tui.core.outputs import RunOutput
    except ImportError:
        RunOutput = None

MAX_LEVEL = 3
STEP = 0.2  # probability a skill level adds
BASE = {  # probability of a right answer without any hint
    "arithmetic": 0.35,
    "unit_conversion": 0.25,
    "reverse": 0.45,
    "date_math": 0.2,
    "sorting": 0.3,
    "counting": 0.3,
    "percent": 0.3,
    "roman": 0.25,
}
PRICE_PER_TOKEN = 2.5e-6  # USD; the roman-numeral helper runs on a backend without a price list (cost unknown)
UNPRICED = {"roman"}
GOLDEN = 0.6180339887498949
TABLE_TOOL = "unit_table"  # the tool adapters/unit-table exports
TABLE_USE = 0.75  # share of unit conversions on which the agent calls it, when exported
TABLE_GAIN = 0.45  # what looking the factor up adds to p(right)
HINT = re.compile(r"^\s*[-*]\s*\[([a-z_]+)\]", re.MULTILINE)

_counter: dict[tuple[str, str], int] = {}
_lock = threading.Lock()


def skills(adapter_text: str | None) -> dict[str, int]:
    """Skill level per category granted by an ADAPTER.md text (None: no adapter)."""
    levels = {name: 0 for name in BASE}
    for tag in HINT.findall(adapter_text or ""):
        if tag in levels:
            levels[tag] = min(MAX_LEVEL, levels[tag] + 1)
    return levels


def adapter_text(adapter) -> str | None:
    if adapter is None:
        return None
    path = Path(adapter) / "ADAPTER.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def exported_tools(adapter) -> list[str]:
    """The names of the tools an adapter directory exports (``exports.tools`` of its adapter.yaml)."""
    if adapter is None or not (Path(adapter) / "adapter.yaml").is_file():
        return []
    text = (Path(adapter) / "adapter.yaml").read_text(encoding="utf-8")
    try:
        import yaml

        tools = ((yaml.safe_load(text) or {}).get("exports") or {}).get("tools") or []
        return [str(t["name"]) for t in tools if isinstance(t, dict) and t.get("name")]
    except Exception:  # a manifest this toy cannot read exports nothing it knows
        return []


def adapter_sha(text: str | None) -> str:
    return "none" if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def _draws(task_id: str, repeat: int, sha: str) -> tuple[float, float, float]:
    """Three numbers in [0, 1) for one attempt. The first walks a golden-ratio sequence from a per-(task, adapter)
    start, so a few repeats already land near the expected rate while still disagreeing with each other."""

    def unit(text: str, at: int = 0) -> float:
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[at : at + 8], "big") / 2**64

    ok = (unit(f"{task_id}|{sha}") + (repeat - 1) * GOLDEN) % 1.0
    return ok, unit(f"{task_id}|{repeat}|{sha}", 0), unit(f"{task_id}|{repeat}|{sha}", 8)


# ---------- the solver: right answers, computed from the question ----------
UNITS = {("km", "mi"): 1 / 1.609344, ("mi", "km"): 1.609344, ("kg", "lb"): 2.20462262, ("lb", "kg"): 1 / 2.20462262}
ROMAN = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]


def _number(text: str) -> float:
    return float(re.search(r"-?\d+(?:\.\d+)?", text).group())


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _date(text: str, task_id: str) -> _dt.date:
    try:
        return _dt.date.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"task {task_id}: {text!r} is not a calendar date ({exc})") from None


def solve(task: dict):
    """The right answer to a task, worked out from its input."""
    cat, q = task["category"], task["input"]
    if cat == "arithmetic":
        a, op, b = re.fullmatch(r"\s*(\d+)\s*([-+*/])\s*(\d+)\s*", q.split(":")[-1]).groups()
        a, b = int(a), int(b)
        return {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op]
    if cat == "unit_conversion":
        value, src, dst = re.search(r"(-?\d+(?:\.\d+)?)\s*(\w+) to (\w+)", q).groups()
        value = float(value)
        if (src, dst) == ("F", "C"):
            return round((value - 32) * 5 / 9, 2)
        if (src, dst) == ("C", "F"):
            return round(value * 9 / 5 + 32, 2)
        return round(value * UNITS[(src, dst)], 2)
    if cat == "reverse":
        return re.search(r"'([^']+)'", q).group(1)[::-1]
    if cat == "date_math":
        start, days = re.search(r"(\d{4}-\d{2}-\d{2}) plus (\d+) days?", q).groups()
        return (_date(start, task["id"]) + _dt.timedelta(days=int(days))).isoformat()
    if cat == "sorting":
        return sorted(int(x) for x in q.split(":")[-1].split(","))
    if cat == "counting":
        letter, word = re.search(r"letter '(\w)' appear in '(\w+)'", q).groups()
        return word.count(letter)
    if cat == "percent":
        pct, whole = re.search(r"(\d+(?:\.\d+)?)% of (\d+(?:\.\d+)?)", q).groups()
        value = float(pct) * float(whole) / 100
        return int(value) if value.is_integer() else round(value, 2)
    if cat == "roman":
        n, out = int(_number(q)), ""
        for value, letters in ROMAN:
            while n >= value:
                out, n = out + letters, n - value
        return out
    raise ValueError(f"task {task.get('id')}: unknown category {cat!r}")


def mistake(task: dict, right, u: float):
    """A typical wrong answer; `u` in [0, 1) picks which."""
    cat = task["category"]
    if cat == "arithmetic":
        return right + (1 + int(u * 9)) * (1 if u < 0.5 else -1)
    if cat == "unit_conversion":  # a rounding slip (half credit) or a wrong factor (none)
        return round(right * (1.03 if u < 0.5 else 1.25), 2)
    if cat == "reverse":
        i = 1 + int(u * (len(right) - 2))
        return right[: i - 1] + right[i] + right[i - 1] + right[i + 1 :]
    if cat == "date_math":
        return (_dt.date.fromisoformat(right) + _dt.timedelta(days=-1 if u < 0.5 else 1)).isoformat()
    if cat == "sorting":  # two neighbours swapped: most positions still right
        out, i = list(right), int(u * (len(right) - 1))
        out[i], out[i + 1] = out[i + 1], out[i]
        return out
    if cat == "counting":
        return right + 1 if (u < 0.5 or right == 0) else right - 1
    if cat == "percent":
        return right * 10 if u < 0.5 else right + 1
    if cat == "roman":  # additive form only: 1994 -> MDCCCCLXXXXIIII
        n, out = int(_number(task["input"])), ""
        for value, letters in ((1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")):
            out, n = out + letters * (n // value), n % value
        return out if out != right else out + "I"
    raise ValueError(f"task {task.get('id')}: unknown category {cat!r}")


def render(cat: str, answer) -> str:
    if cat == "sorting":
        return ", ".join(str(x) for x in answer)
    if isinstance(answer, float):
        return _fmt(answer)
    return str(answer)


def tool_call(task: dict) -> tuple[str, dict]:
    """The one tool the simulated agent calls for a task, and its arguments, read from the question."""
    cat, q = task["category"], task["input"]
    if cat == "arithmetic":
        return "calculator", {"expression": q.split(":")[-1].strip()}
    if cat == "percent":
        pct, whole = re.search(r"(\d+(?:\.\d+)?)% of (\d+(?:\.\d+)?)", q).groups()
        return "calculator", {"expression": f"{whole} * {pct} / 100"}
    if cat == "unit_conversion":
        value, src, dst = re.search(r"(-?\d+(?:\.\d+)?)\s*(\w+) to (\w+)", q).groups()
        return "convert", {"value": float(value), "from": src, "to": dst}
    if cat == "date_math":
        start, days = re.search(r"(\d{4}-\d{2}-\d{2}) plus (\d+) days?", q).groups()
        return "calendar", {"date": start, "add_days": int(days)}
    code = {
        "reverse": "word[::-1]",
        "sorting": "sorted(numbers)",
        "counting": "word.count(letter)",
        "roman": "to_roman(n)",
    }.get(cat, "solve(question)")
    return "python", {"code": code, "question": q}


def table_call(task: dict) -> dict:
    """The arguments of a unit_table call for a unit conversion."""
    _, src, dst = re.search(r"(-?\d+(?:\.\d+)?)\s*(\w+) to (\w+)", task["input"]).groups()
    return {"from": src, "to": dst}


def table_answer(args: dict) -> str:
    pair = (args["from"], args["to"])
    if pair in (("C", "F"), ("F", "C")):
        return json.dumps({"formula": "F = C * 9 / 5 + 32" if pair == ("C", "F") else "C = (F - 32) * 5 / 9"})
    return json.dumps({"factor": round(UNITS[pair], 6)} if pair in UNITS else {"error": f"no factor for {list(pair)}"})


def trajectory(task: dict, text: str | None, right, answer: str, repeat: int, looked_up: bool = False) -> list[dict]:
    """The messages of one attempt, shaped like hermit's react agent writes them: the system prompt (with the
    adapter's notes), the question, one tool call (after a unit_table call when ``looked_up``), the tool's result
    (always right), the final answer (which the solver may still get wrong: the demo's failures show up as an answer
    that disagrees with the tool)."""
    name, arguments = tool_call(task)
    call_id = f"call_{task['id']}_r{repeat}"
    system = "You solve short exercises. Use a tool, then answer with the value only."
    if text is not None:
        system += "\n\n# Instructions from the harness adapter\n\n" + text.strip()
    lookup = []
    if looked_up:
        args = table_call(task)
        table_id = f"call_{task['id']}_r{repeat}_table"
        lookup = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": table_id,
                        "type": "function",
                        "function": {"name": TABLE_TOOL, "arguments": json.dumps(args)},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": table_id, "content": table_answer(args)},
        ]
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": task["input"]},
        *lookup,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps(right)},
        {"role": "assistant", "content": answer},
    ]


def attempt(task: dict, text: str | None, repeat: int, tools: tuple[str, ...] | list[str] = ()) -> dict:
    """One attempt without sleeping: the answer and what it cost. Raises on a task it cannot read. ``tools``: the
    tools the adapter exports (the draws depend on ADAPTER.md only, so an adapter that adds a tool to another's notes
    makes the same draws, and differs only where the tool is used)."""
    tid, cat = str(task["id"]), task["category"]
    right = solve(task)
    sha = adapter_sha(text)
    u_ok, u_kind, u_time = _draws(tid, repeat, sha)
    level = skills(text)[cat]
    p = min(0.97, BASE[cat] + STEP * level)
    looked_up = TABLE_TOOL in tools and cat == "unit_conversion" and u_time < TABLE_USE
    if looked_up:
        p = min(0.97, p + TABLE_GAIN)
    correct = u_ok < p
    answer = right if correct else mistake(task, right, u_kind)
    tokens = 150 + 3 * len(task["input"]) + len(text or "") // 4 + int(u_time * 120)
    return {
        "output": render(cat, answer),
        "tokens": tokens,
        "right": right,
        "cost_usd": None if cat in UNPRICED else round(tokens * PRICE_PER_TOKEN, 6),
        "latency_s": 0.02 + 0.28 * u_time,
        "skill": level,
        "p": round(p, 3),
        "adapter_sha": sha[:12],
        "looked_up": looked_up,
    }


def safe_name(text: str) -> str:
    """One file name from any text: unsafe characters replaced, no leading dot, a hash when anything changed."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", str(text)).lstrip(".")[:80]
    if cleaned != str(text) or not cleaned:
        cleaned = f"{cleaned or '_'}-{hashlib.sha256(str(text).encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"
    return cleaned


def _repeat(task_id: str, sha: str) -> int:
    repeat = current_repeat()
    if repeat is not None:
        return int(repeat)
    with _lock:
        key = (task_id, sha)
        _counter[key] = _counter.get(key, 0) + 1
        return _counter[key]


def run(task: dict, adapter: Path | None, params: dict | None = None, base: Path | None = None):
    """hermit's pipeline entry point: ``run(task, adapter)``; ``params`` is agent.params."""
    started = time.time()
    text = adapter_text(adapter)
    repeat = _repeat(str(task["id"]), adapter_sha(text))
    result = attempt(task, text, repeat, exported_tools(adapter))
    scale = float((params or {}).get("latency_scale", 1.0))
    time.sleep(max(0.0, result["latency_s"] * scale))
    log = None
    root = Path(base) if base is not None else Path(__file__).resolve().parent
    try:
        log = attempt_log_path() or root / "logs" / result["adapter_sha"] / f"{safe_name(task['id'])}.r{repeat}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(
            f"task {task['id']} ({task['category']}), repeat {repeat}\nquestion: {task['input']}\n"
            f"adapter: {'none' if text is None else result['adapter_sha']}, skill level "
            f"{result['skill']}, p(right) {result['p']}\nanswer: {result['output']}\n",
            encoding="utf-8",
        )
    except OSError:
        log = None
    fields = {
        "output": result["output"],
        "log": log,
        "cost_usd": result["cost_usd"],
        "wall_s": round(time.time() - started, 3),
        "tokens": result["tokens"],
        "messages": trajectory(task, text, result["right"], result["output"], repeat, result["looked_up"]),
        "extra": {"repeat": repeat, "skill": result["skill"], "p": result["p"]},
    }
    return RunOutput(**fields) if RunOutput is not None else fields
