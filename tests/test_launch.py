"""LaunchOptions: the one validated model of a launch's options (the CLI, the dashboard and Ray build it)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hermit_tui.core.errors import InputError
from hermit_tui.core.run.launch import LaunchOptions
from hermit_tui.core.run.plan import LaunchPlan, executor_class
from hermit_tui.core.run.ray_executor import RayExecutor
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(), "no adapter selector given"),
        (dict(selectors=["none"], executor="gpu"), "--executor must be one of threads, processes, ray, got 'gpu'"),
        (dict(selectors=["none"], concurrency=0), "--concurrency must be a positive whole number, got 0"),
        (dict(selectors=["none"], concurrency=True), "--concurrency must be a positive whole number, got True"),
        (dict(selectors=["none"], concurrency="3"), "--concurrency must be a positive whole number, got '3'"),
        (dict(selectors=["none"], concurrency=5000), "--concurrency must be at most 1024, got 5000"),
        (dict(selectors=["none"], repeats=-1), "eval.repeats must be a positive whole number, got -1"),
        (dict(selectors=["none"], limit=0), "--limit must be a positive whole number, got 0"),
        (dict(selectors=["none"], timeout_min=0), "the attempt timeout must be a positive number of minutes up to"),
        (dict(selectors=["none"], timeout_min=10**9), "the attempt timeout must be a positive number of minutes up to"),
        (dict(selectors=["none"], max_cost=float("nan")), "--max-cost: the maximum cost must be a positive number"),
        (dict(selectors=["none"], max_cost=-1), "--max-cost: the maximum cost must be a positive number"),
        (dict(selectors=["none"], margin=0.1), "--margin is for --stop-when-decided"),
        (dict(selectors=["none"], baseline="none"), "--baseline is for --stop-when-decided"),
        (dict(selectors=["a", "b"], stop_when_decided=True, margin=0), "--margin must be a positive number"),
        (dict(selectors=["a", "b"], stop_when_decided=True, limit=3), "--stop-when-decided with --limit"),
        (dict(retry={"none": [("t1", 1)]}, stop_when_decided=True), "--stop-when-decided cannot re-run chosen"),
        (dict(selectors=["none"], colour="blue"), "launch option colour: Extra inputs are not permitted"),
        (dict(selectors=["none"], resume="perhaps"), "launch option resume: Input should be a valid boolean"),
    ],
)
def test_a_bad_option_is_one_line_naming_it(values, message):
    with pytest.raises(InputError) as caught:
        LaunchOptions(**values)
    text = str(caught.value)
    assert text.startswith(message) and "\n" not in text, text


def test_options_keep_what_was_given_and_fill_the_rest_from_the_config(demo_config):
    config = load_config(demo_config)
    given = LaunchOptions(
        selectors=["none", "root"], concurrency=3, timeout_min=1.5, max_cost=2, retry={"none": [["t1", "2"]]}
    )
    assert given.concurrency_for(config) == 3 and given.timeout_s_for(config) == 90.0
    assert given.max_cost == 2.0 and given.retry == {"none": [("t1", 2)]}
    default = LaunchOptions(selectors=["none"])
    assert default.concurrency_for(config) == config.concurrency and default.repeats_for(config) == config.repeats
    assert default.timeout_s_for(config) == (config.timeout_min * 60 if config.timeout_min else None)
    assert not default.smoke and LaunchOptions(selectors=["none"], limit=2).smoke
    assert not LaunchOptions(retry={"none": [("t1", 1)]}, limit=2).smoke  # a retry re-runs where they are
    with pytest.raises(ValidationError):
        default.selectors = ["root"]  # type: ignore[misc]  # the point: frozen, what was validated stays as it was


def test_eval_run_takes_options_or_the_same_as_keywords(demo_config):
    config = load_config(demo_config)
    by_model = EvalRun(config, LaunchOptions(selectors=["none", "root"], repeats=2, limit=3))
    by_keywords = EvalRun(config, ["none", "root"], repeats=2, limit=3)
    assert by_model.options == by_keywords.options
    assert (by_model.total, by_model.labels, by_model.smoke) == (2 * 3 * 2, ["none", "root"], True)
    with pytest.raises(TypeError):
        EvalRun(config, LaunchOptions(selectors=["none"]), repeats=2)


def test_each_executor_is_built_from_the_options_by_its_class(demo_config):
    config = load_config(demo_config)
    for name in ("threads", "processes"):
        plan = LaunchPlan(config, LaunchOptions(selectors=["none"], executor=name, concurrency=2, timeout_min=1))
        assert type(plan.executor) is executor_class(name) and plan.executor.name == name
        assert plan.executor.concurrency == 2 and plan.executor.timeout_s == 60.0
        assert callable(plan.executor.pipeline) and callable(plan.executor.judge)  # the driver loaded both
        assert plan.executor.summary_keys("none") == {}
    ray = pytest.importorskip("ray")
    assert ray is not None
    plan = LaunchPlan(
        config,
        LaunchOptions(
            selectors=["none"], executor="ray", judge_on_workers=True, retry_lost=True, ray_address="127.0.0.1:1"
        ),
    )
    executor = plan.executor
    assert isinstance(executor, RayExecutor)
    assert executor.pipeline is None and executor.judge is None  # the workers load both; nothing started yet
    assert (executor.address, executor.judge_on_workers, executor.retry_lost) == ("127.0.0.1:1", True, True)
    assert executor.summary_keys("none") == {"retry_lost": True, "ray_retries": 0}
