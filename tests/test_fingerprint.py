"""The protocol fingerprint: stored beside each summary, and what a difference is called."""

import hashlib
import json

from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.fingerprint import differences


def test_fingerprint_is_stored_and_names_what_differs(demo_config, tmp_path):
    path = demo_config
    config = load_config(path, ["agent.params.latency_scale=0.01"])
    a = EvalRun(config, ["none"], repeats=1, limit=2).run_sync()["none"]
    fp = a.fingerprint
    assert fp is not None
    ids = [t.strip() for t in (tmp_path / "demo/test.txt").read_text().splitlines() if t.strip()][:2]
    assert fp.test_ids_sha256 == hashlib.sha256(json.dumps(ids).encode()).hexdigest()
    assert fp.judge_sha256 == hashlib.sha256((tmp_path / "demo/judge.py").read_bytes()).hexdigest()
    assert fp.repeats == 1 and fp.smoke_limit == 2
    on_disk = json.loads((config.run_dir / "eval/none/smoke/summary.json").read_text())  # --limit
    assert on_disk["fingerprint"] == fp.model_dump()
    other = load_config(path, ["agent.params.latency_scale=0.02"])
    b = EvalRun(other, ["root"], repeats=2, limit=2).run_sync()["root"]
    assert differences(fp, b.fingerprint) == ["the agent params", "repeats"]
    assert differences(fp, fp) == []
    assert "cannot be checked" in differences(fp, None)[0]
