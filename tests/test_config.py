"""run.yaml loading: defaults <- file <- overrides, unknown keys, validation, derived names and folders."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from hermit_tui.core.errors import InputError
from hermit_tui.core.workspace.config import DEFAULTS, FREE_SECTIONS, load_config

REALISTIC = """\
# a hermit-style run config using every section
data:
  tasks: $HT_DATA/tasks.jsonl
  train: data/train.txt
  val: data/val.txt
  test: ~/ht-test.txt
  step_size: 4
  shuffle: false
  shuffle_seed: 7
task_info: {kind: qa, notes: [a, b]}
pipeline:                      # the older spelling of agent
  run: pipeline.py:run
  concurrency: 2
  params: {temperature: 0.2, tools: {search: true}}
judge: {path: judge.py, name: grade}
template: ./adapters/seed
start_from: null
evolver: {name: gepa, resume: false, params: {minibatch: 3, anything: {deep: 1}}}
evolver_access: {environment: [OPENAI_API_KEY], tools: [llm], send_material_out: false}
sandbox:
  enabled: false
  enforce: best_effort
  network: open
  allow: [api.openai.com]
  read: [$HT_DATA]
  packages: [numpy]
  env: [HOME]
  audit: null
  profiles: {rollout: {read: [$HT_DATA/corpus], mask: [../x]}}
model: null
backends: {local: {base_url: "http://localhost:8000/v1", api_key_env: LOCAL_KEY}}
llm: {base_url: "http://localhost:8000/v1", model: tiny, api_key_env: LOCAL_KEY, extra_body: {reasoning: low}}
trainer:
  output_dir: out
  epochs: 2
  allow_early_stop: true
  resume_mode: auto
  save_freq: {steps: 2, epochs: 1}
  budget: {usd: 5.0, tokens: null, hours: 1}
  call_timeout_min: 30
eval: {repeats: 2}
"""

MANIFEST = """\
template: {id: my-seed, version: "1"}
exports: {context: ADAPTER.md}
structure:
  learnable: [{path: ADAPTER.md}]
  fixed: []
"""


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def realistic(tmp_path, monkeypatch):
    """The realistic run.yaml with $HT_DATA and ~ pointing into tmp_path."""
    monkeypatch.setenv("HT_DATA", str(tmp_path / "shared"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write(tmp_path / "adapters" / "seed" / "adapter.yaml", MANIFEST)
    return write(tmp_path / "run.yaml", REALISTIC)


def error_of(path, overrides=()) -> str:
    with pytest.raises(InputError) as info:
        load_config(path, overrides)
    return str(info.value)


# ----- defaults and the realistic file -----


def test_defaults_cover_hermits_defaults_yaml():
    import hermit  # hermit-harness is in the test extra

    shipped = Path(hermit.__file__).parent / "defaults.yaml"
    assert DEFAULTS == yaml.safe_load(shipped.read_text())
    assert FREE_SECTIONS == {"params", "llm", "backends", "profiles"}


def test_empty_file_gives_the_defaults_and_loading_leaves_defaults_untouched(tmp_path):
    before = copy.deepcopy(DEFAULTS)
    config = load_config(write(tmp_path / "run.yaml", ""), ["agent.params.x=1", "eval.repeats=5"])
    assert config.data["agent"]["params"] == {"x": 1}
    assert config.repeats == 5
    assert DEFAULTS == before
    plain = load_config(tmp_path / "run.yaml")
    assert plain.data == before
    assert (plain.concurrency, plain.repeats, plain.shuffle, plain.timeout_min) == (4, 1, True, None)
    assert plain.judge_name == "score" and plain.agent_name is None and plain.agent_params == {}
    assert plain.tasks_path is None and plain.model is None


def test_realistic_hermit_config(realistic, tmp_path):
    config = load_config(realistic)
    assert config.path == tmp_path / "run.yaml"
    assert config.base == tmp_path
    assert config.overrides == []
    # $VARS and ~ expand, relative paths resolve against the config's folder
    assert config.tasks_path == tmp_path / "shared" / "tasks.jsonl"
    assert config.train_path == tmp_path / "data" / "train.txt"
    assert config.val_path == tmp_path / "data" / "val.txt"
    assert config.test_path == tmp_path / "home" / "ht-test.txt"
    assert config.judge_path == tmp_path / "judge.py"
    assert config.judge_name == "grade"
    # pipeline folded into agent
    assert config.agent_name == "pipeline.py:run"
    assert config.agent_params == {"temperature": 0.2, "tools": {"search": True}}
    assert config.concurrency == 2
    assert config.data["pipeline"]["run"] == "pipeline.py:run"  # the pipeline section itself is kept
    # other values, including free sections with arbitrary keys
    assert (config.repeats, config.shuffle, config.timeout_min) == (2, False, None)
    assert config.get("data.step_size") == 4 and config.get("data.shuffle_seed") == 7
    assert config.get("task_info") == {"kind": "qa", "notes": ["a", "b"]}
    assert config.get("evolver.params.anything.deep") == 1
    assert config.get("sandbox.profiles.rollout.mask") == ["../x"]
    assert config.get("backends.local.api_key_env") == "LOCAL_KEY"
    assert config.get("llm.extra_body") == {"reasoning": "low"}
    assert config.get("trainer.budget") == {"usd": 5.0, "tokens": None, "hours": 1}
    assert config.get("trainer.tree_dir") is None  # default kept beside file values
    # names and folders
    assert config.run_name == "gepa-seed"
    assert config.output_dir == tmp_path / "out"
    assert config.run_dir == tmp_path / "out" / "gepa-seed"
    assert config.template_dir == tmp_path / "adapters" / "seed"
    assert config.template_id == "my-seed"
    assert config.tree_dir == tmp_path / "out" / "trees" / "my-seed"
    config.require_for_eval()


def test_config_given_by_relative_path(realistic, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "adapters")
    config = load_config("../run.yaml")
    assert config.base == tmp_path and config.path == tmp_path / "run.yaml"
    assert config.train_path == tmp_path / "data" / "train.txt"


def test_hermit_agrees_on_run_name_run_dir_and_tree_dir(realistic, tmp_path):
    for template in ("./adapters/seed", "continual-harness@1.0"):
        path = write(tmp_path / "run.yaml", REALISTIC.replace("template: ./adapters/seed", f"template: {template}"))
        script = (
            "import json, sys\n"
            "from hermit.config import Config\n"
            "from hermit.adapter.manifest import read_manifest\n"
            "c = Config.load(sys.argv[1], sys.argv[2:])\n"
            "tid = read_manifest(c.template_dir())['template']['id']\n"
            "print(json.dumps([c.run_name(), str(c.run_dir()), str(c.tree_dir(tid))]))\n"
        )
        overrides = ["eval.repeats=3", "trainer.output_dir=runs2"]
        done = subprocess.run(
            [sys.executable, "-c", script, str(path), *overrides],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        name, run_dir, tree_dir = json.loads(done.stdout)
        ours = load_config(path, overrides)
        assert ours.run_name == name
        assert ours.run_dir == Path(run_dir).resolve()
        assert ours.tree_dir == Path(tree_dir).resolve()


# ----- the older spelling -----


def test_pipeline_folds_only_into_an_empty_agent_name(tmp_path):
    path = write(
        tmp_path / "run.yaml",
        """\
        agent: {params: {a: 1, b: 1}}
        pipeline: {run: p.py:run, params: {b: 2}}
    """,
    )
    config = load_config(path)
    assert config.agent_name == "p.py:run"
    assert config.agent_params == {"a": 1, "b": 2}
    assert config.concurrency == 4  # pipeline.concurrency unset: not copied
    write(
        path,
        """\
        agent: {name: a.py:run, concurrency: 3}
        pipeline: {run: p.py:run, concurrency: 9, params: {b: 2}}
    """,
    )
    config = load_config(path)
    assert (config.agent_name, config.concurrency, config.agent_params) == ("a.py:run", 3, {})


def test_pipeline_run_given_by_override(tmp_path):
    config = load_config(write(tmp_path / "run.yaml", ""), ["pipeline.run=p.py:run", "pipeline.concurrency=7"])
    assert (config.agent_name, config.concurrency) == ("p.py:run", 7)


# ----- unknown keys -----


@pytest.mark.parametrize(
    "text, message",
    [
        ("agent: {concurency: 3}", "unknown key 'agent.concurency' (did you mean 'agent.concurrency'?)"),
        ("evals: {repeats: 3}", "unknown key 'evals' (did you mean 'eval'?)"),
        ("trainer: {budget: {dollars: 3}}", "unknown key 'trainer.budget.dollars'"),
        ("zzzz: 1", "unknown key 'zzzz'"),
        ("judge: {params: {a: 1}}", "unknown key 'judge.params'"),
    ],
)
def test_unknown_keys_name_the_file_and_dotted_key(tmp_path, text, message):
    path = write(tmp_path / "run.yaml", text)
    assert error_of(path) == f"{path}: {message}"


def test_message_uses_the_path_as_given(tmp_path, monkeypatch):
    write(tmp_path / "run.yaml", "agent: {concurency: 3}")
    monkeypatch.chdir(tmp_path)
    assert error_of("run.yaml") == "run.yaml: unknown key 'agent.concurency' (did you mean 'agent.concurrency'?)"


def test_free_sections_take_any_keys_at_any_depth(tmp_path):
    path = write(
        tmp_path / "run.yaml",
        """\
        agent: {params: {x: {y: {z: 1}}}}
        evolver: {params: {whatever: [1, 2]}}
        sandbox: {profiles: {learner: {anything: {goes: true}}}}
        backends: {mine: {from: openai, odd_key: 1}}
        llm: {model: a/b, extra: {deep: {er: 2}}}
        task_info: {free: {because: "its default is null"}}
    """,
    )
    config = load_config(path)
    assert config.get("agent.params.x.y.z") == 1
    assert config.get("sandbox.profiles.learner.anything.goes") is True
    assert config.get("backends.mine.odd_key") == 1
    assert config.get("llm.extra.deep.er") == 2
    assert config.get("task_info.free.because") == "its default is null"


# ----- shape errors -----


@pytest.mark.parametrize(
    "text, message",
    [
        ("agent: 3", "agent must be a mapping, got 3"),
        ("agent: {params: 5}", "agent.params must be a mapping, got 5"),
        ("trainer: {budget: lots}", "trainer.budget must be a mapping, got a string"),
        ("eval: [1, 2]", "eval must be a mapping, got a list"),
    ],
)
def test_sections_must_be_mappings(tmp_path, text, message):
    path = write(tmp_path / "run.yaml", text)
    assert error_of(path) == f"{path}: {message}"


def test_a_null_section_keeps_its_defaults(tmp_path):
    config = load_config(write(tmp_path / "run.yaml", "eval:\nagent:\n  params:\n"))
    assert config.repeats == 1 and config.agent_params == {} and config.concurrency == 4


@pytest.mark.parametrize("text, kind", [("- a\n- b\n", "a list"), ("just text\n", "a string")])
def test_top_level_must_be_a_mapping(tmp_path, text, kind):
    path = write(tmp_path / "run.yaml", text)
    assert error_of(path) == f"{path}: the top level must be a mapping of sections, got {kind}"


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = write(tmp_path / "run.yaml", "data:\n  tasks: t.jsonl\n  test: [a, b\neval: {repeats: 1}\n")
    message = error_of(path)
    assert message.startswith(f"{path}:4: not valid YAML (")
    assert "\n" not in message


def test_missing_directory_unreadable_and_non_utf8_configs(tmp_path):
    missing = tmp_path / "nope.yaml"
    assert error_of(missing) == f"{missing}: config file not found"
    assert error_of(tmp_path) == f"{tmp_path}: is a directory, not a config file"
    latin = write(tmp_path / "latin.yaml", b"data:\n  tasks: caf\xe9.jsonl\n")
    assert error_of(latin) == f"{latin}:2: not UTF-8 text"
    if os.geteuid() != 0:  # root reads anything
        locked = write(tmp_path / "locked.yaml", "eval: {repeats: 1}\n")
        locked.chmod(0)
        try:
            assert error_of(locked).startswith(f"{locked}: cannot read the config file")
        finally:
            locked.chmod(0o644)


# ----- value validation -----


@pytest.mark.parametrize("key", ["eval.repeats", "agent.concurrency", "pipeline.concurrency"])
@pytest.mark.parametrize("bad", ["three", 0, -1, 1.5, True])
def test_counts_must_be_positive_integers(tmp_path, key, bad):
    section, name = key.split(".")
    path = write(tmp_path / "run.yaml", yaml.safe_dump({section: {name: bad}}))
    assert error_of(path) == f"{path}: {key} must be a positive integer, got {bad!r}"


def test_a_bad_override_value_names_the_override(tmp_path):
    path = write(tmp_path / "run.yaml", "eval: {repeats: 2}\n")
    assert (
        error_of(path, ["eval.repeats=0"])
        == "override 'eval.repeats=0': eval.repeats must be a positive integer, got 0"
    )
    assert (
        error_of(path, ["eval={repeats: x}"])
        == "override 'eval={repeats: x}': eval.repeats must be a positive integer, got 'x'"
    )
    # a later good override fixes a bad value of the file
    write(path, "eval: {repeats: 0}\n")
    assert error_of(path) == f"{path}: eval.repeats must be a positive integer, got 0"
    assert load_config(path, ["eval.repeats=4"]).repeats == 4


@pytest.mark.parametrize("bad", [0, -1, "ten", True])
def test_timeout_must_be_positive_or_null(tmp_path, bad):
    path = write(tmp_path / "run.yaml", yaml.safe_dump({"agent": {"timeout_min": bad}}))
    assert error_of(path) == f"{path}: agent.timeout_min must be a positive number of minutes or null, got {bad!r}"


@pytest.mark.parametrize("good, expected", [(0.5, 0.5), (2, 2.0), (None, None)])
def test_timeout_accepts_numbers_and_null(tmp_path, good, expected):
    path = write(tmp_path / "run.yaml", yaml.safe_dump({"agent": {"timeout_min": good}}))
    assert load_config(path).timeout_min == expected


@pytest.mark.parametrize("bad", ["maybe", 1])
def test_shuffle_must_be_bool(tmp_path, bad):
    path = write(tmp_path / "run.yaml", yaml.safe_dump({"data": {"shuffle": bad}}))
    assert error_of(path) == f"{path}: data.shuffle must be true or false, got {bad!r}"


@pytest.mark.parametrize("bad", ["bad name", "-x", "a/b", "_x", "x" * 82, "ünï"])
def test_run_name_pattern(tmp_path, bad):
    path = write(tmp_path / "run.yaml", yaml.safe_dump({"trainer": {"run_name": bad}}))
    assert error_of(path).startswith(f"{path}: trainer.run_name may hold only letters, digits")


@pytest.mark.parametrize("good", ["run.1_a-b", "x" * 81, "7"])
def test_run_name_accepted(tmp_path, good):
    path = write(tmp_path / "run.yaml", yaml.safe_dump({"trainer": {"run_name": good}}))
    assert load_config(path).run_name == good


def test_paths_must_be_scalars(tmp_path):
    path = write(tmp_path / "run.yaml", "data: {tasks: [a, b]}\n")
    assert error_of(path) == f"{path}: data.tasks must be a path, got a list"


# ----- overrides -----


def test_overrides_parse_values_as_yaml(tmp_path):
    path = write(tmp_path / "run.yaml", "agent: {params: {model: a, keep: 1}}\ndata: {val: v.txt}\n")
    config = load_config(
        path,
        [
            "eval.repeats=3",
            "agent.params.model=x",
            "agent.params.nested.deep=1",
            "data.shuffle=false",
            "data.val=",
            "agent.timeout_min=1.5",
            "llm.model=b/c",
            "trainer.run_name=r1",
        ],
    )
    assert config.repeats == 3
    assert config.agent_params == {"model": "x", "keep": 1, "nested": {"deep": 1}}
    assert config.shuffle is False
    assert config.get("data.val") is None and config.val_path is None
    assert config.timeout_min == 1.5
    assert config.get("llm") == {"model": "b/c"}
    assert config.run_name == "r1"
    assert config.overrides == [
        "eval.repeats=3",
        "agent.params.model=x",
        "agent.params.nested.deep=1",
        "data.shuffle=false",
        "data.val=",
        "agent.timeout_min=1.5",
        "llm.model=b/c",
        "trainer.run_name=r1",
    ]


def test_override_of_a_whole_section_merges_and_a_free_one_replaces(tmp_path):
    path = write(tmp_path / "run.yaml", "agent: {name: a.py:f, params: {a: 1}}\n")
    config = load_config(path, ["agent={concurrency: 2}"])
    assert (config.agent_name, config.concurrency, config.agent_params) == ("a.py:f", 2, {"a": 1})
    assert load_config(path, ["agent.params={b: 2}"]).agent_params == {"b": 2}


@pytest.mark.parametrize(
    "item, message",
    [
        ("agent.concurency=3", "unknown key 'agent.concurency' (did you mean 'agent.concurrency'?)"),
        ("judge.params.x=1", "unknown key 'judge.params'"),
        ("data.shuffle.x=1", "unknown key 'data.shuffle.x' (data.shuffle is not a section)"),
        ("repeats", "expected key.sub=value"),
        ("=3", "expected key.sub=value"),
        ("eval..repeats=3", "expected key.sub=value"),
        ("agent=3", "agent must be a mapping, got 3"),
        ("agent.params=7", "agent.params must be a mapping, got 7"),
        ("eval={repeat: 2}", "unknown key 'eval.repeat' (did you mean 'eval.repeats'?)"),
    ],
)
def test_bad_overrides_name_the_override(tmp_path, item, message):
    path = write(tmp_path / "run.yaml", "")
    assert error_of(path, [item]) == f"override '{item}': {message}"


def test_override_value_that_is_not_yaml(tmp_path):
    path = write(tmp_path / "run.yaml", "")
    message = error_of(path, ["agent.params.x=[1, 2"])
    assert message.startswith("override 'agent.params.x=[1, 2': the value is not valid YAML (")


def test_with_overrides_reloads_and_keeps_the_original(tmp_path):
    path = write(tmp_path / "run.yaml", "eval: {repeats: 2}\n")
    first = load_config(path, ["agent.concurrency=3"])
    second = first.with_overrides(["eval.repeats=5"])
    assert (first.repeats, first.concurrency) == (2, 3)
    assert (second.repeats, second.concurrency) == (5, 3)
    assert second.overrides == ["agent.concurrency=3", "eval.repeats=5"]
    with pytest.raises(InputError, match=r"^override 'eval\.repeats=0'"):
        first.with_overrides(["eval.repeats=0"])


# ----- get and resolve_path -----


def test_get_and_resolve_path(tmp_path, monkeypatch):
    config = load_config(write(tmp_path / "sub" / "run.yaml", "judge: {path: j.py}\n"))
    assert config.get("judge.path") == "j.py"
    assert config.get("judge.nothing", "d") == "d"
    assert config.get("judge.path.deeper", "d") == "d"
    assert config.get("data.val", "d") is None  # present and null: stays None
    monkeypatch.setenv("HT_X", str(tmp_path / "x"))
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert config.resolve_path(None) is None and config.resolve_path("") is None
    assert config.resolve_path("a/../b.txt") == tmp_path / "sub" / "b.txt"
    assert config.resolve_path("../up.txt") == tmp_path / "up.txt"
    assert config.resolve_path("$HT_X/y") == tmp_path / "x" / "y"
    assert config.resolve_path("~/z") == tmp_path / "h" / "z"
    assert config.resolve_path(str(tmp_path / "abs")) == tmp_path / "abs"
    assert config.resolve_path(Path("p")) == tmp_path / "sub" / "p"


# ----- run name, template and tree rules -----


def test_builtin_template(tmp_path):
    path = write(tmp_path / "run.yaml", "template: continual-harness@1.0\nevolver: {name: gepa}\n")
    config = load_config(path)
    assert config.template_dir is None
    assert config.template_id == "continual-harness"
    assert config.run_name == "gepa-continual-harness"
    assert config.run_dir == tmp_path / "runs" / "gepa-continual-harness"
    assert config.tree_dir == tmp_path / "runs" / "trees" / "continual-harness"


def test_run_name_replaces_slashes_and_prefers_trainer_run_name(tmp_path):
    path = write(tmp_path / "run.yaml", "template: continual-harness@1.0\nevolver: {name: plug/evo.py:E}\n")
    assert load_config(path).run_name == "plug-evo.py:E-continual-harness"
    assert load_config(path, ["trainer.run_name=mine"]).run_dir == tmp_path / "runs" / "mine"


def test_tree_dir_setting_needs_no_template(tmp_path):
    path = write(tmp_path / "run.yaml", "trainer: {tree_dir: ../trees/t, output_dir: o, run_name: r}\n")
    config = load_config(path)
    assert config.tree_dir == (tmp_path / ".." / "trees" / "t").resolve()
    assert config.run_dir == tmp_path / "o" / "r"


def test_what_needs_template_or_evolver_says_so(tmp_path):
    path = write(tmp_path / "run.yaml", "")
    config = load_config(path)  # loading does not need them
    for attr in ("template_id", "tree_dir"):
        with pytest.raises(InputError) as info:
            getattr(config, attr)
        assert str(info.value) == f"{path}: template is required to find the adapter tree (or set trainer.tree_dir)"
    with pytest.raises(InputError, match=r"evolver\.name is required to name the run"):
        _ = config.run_name
    with pytest.raises(InputError, match=r"template is required to name the run"):
        _ = load_config(path, ["evolver.name=gepa"]).run_name
    assert config.template_dir is None


def test_template_folder_rules(tmp_path):
    write(tmp_path / "bare" / "README.md", "no manifest here")
    path = write(tmp_path / "run.yaml", "template: ./bare\n")
    with pytest.raises(InputError) as info:
        _ = load_config(path).template_dir
    assert str(info.value) == f"{path}: template './bare' is a folder without adapter.yaml"
    with pytest.raises(InputError, match="neither a folder holding adapter.yaml nor a built-in"):
        _ = load_config(path, ["template=./missing/dir"]).template_id
    # a folder whose manifest has no usable template.id
    write(tmp_path / "odd" / "adapter.yaml", "template: {version: '1'}\n")
    with pytest.raises(InputError, match=r"adapter\.yaml: template\.id must be a lowercase slug, got None"):
        _ = load_config(path, ["template=odd"]).template_id


def test_require_for_eval_lists_what_is_missing(tmp_path):
    path = write(tmp_path / "run.yaml", "data: {tasks: t.jsonl}\n")
    with pytest.raises(InputError) as info:
        load_config(path).require_for_eval()
    assert str(info.value) == f"{path}: evaluation needs data.test, agent.name, judge.path (not set)"
    load_config(path, ["data.test=test.txt", "agent.name=p.py:run", "judge.path=j.py"]).require_for_eval()


def test_template_id_reads_the_manifest_once_while_it_stays_as_it_was(tmp_path, monkeypatch):
    import hermit_tui.core.workspace.config as config_module

    manifest = write(tmp_path / "seed" / "adapter.yaml", "template: {id: first-id, version: '1'}\n")
    config = load_config(write(tmp_path / "run.yaml", "template: ./seed\nevolver: {name: gepa}\n"))
    reads: list[Path] = []
    real = config_module._read_yaml

    def counted(path: Path, shown: str) -> object:
        reads.append(path)
        return real(path, shown)

    monkeypatch.setattr(config_module, "_read_yaml", counted)
    assert [config.template_id, config.tree_dir.name, config.template_id] == ["first-id"] * 3
    assert reads == [manifest]  # the report asks for the tree folder 5 times: one parse
    # an edit (another size) is read again, as is a manifest turned bad: never an id from before
    write(manifest, "template: {id: second-id, version: '10'}\n")
    assert config.template_id == "second-id" and len(reads) == 2
    write(manifest, "template: {version: '1'}\n")
    with pytest.raises(InputError, match=r"template\.id must be a lowercase slug, got None"):
        _ = config.template_id
    manifest.unlink()
    with pytest.raises(InputError, match="is a folder without adapter.yaml"):
        _ = config.template_id
