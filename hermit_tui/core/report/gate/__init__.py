"""The gate: pass/fail checks over the evaluations on disk, for CI (``hermit-tui gate``, ``eval --require``).

A candidate selector is checked against a baseline (by default ``final`` against ``none``) by the requirements
asked for; each check passes or fails on one figure, which its line names:

- ``improvement``: the 95% interval for the mean difference candidate - baseline lies above ``+margin``;
- ``no-regression``: that interval does not lie entirely below ``-margin``;
- ``comparable``: both evaluations carry one protocol fingerprint (test tasks and rows, judge, pipeline, agent
  params, model, repeats, smoke limit). An evaluation written by ``hermit eval`` records no fingerprint: the check
  FAILS as "cannot be checked", unless ``allow_unchecked``, which compares only what hermit's summaries record (the
  task count and the repeats) and says so;
- ``complete`` (one check per selector): every expected attempt is present (each test task of the config's test split
  times the evaluation's repeats; an evaluation whose sequential design stopped it when decided needs the rounds it
  ran), it was not cancelled, and it is not a smoke subset;
- ``max_error_rate`` (one check per selector): pipeline errors + judge errors over the attempts recorded on the test
  tasks is at most this share.

The interval is the one the report shows (``core.stats.figures.pair_stats``: the bounded interval of
``core.stats.intervals``, on the tasks both attempted), or, when the candidate's summary carries a ``sequential`` entry
against the same baseline (``--stop-when-decided``), that entry's repeated confidence interval, which stays valid
however early the run stopped. Nothing here writes anything; ``load.load_gate`` reads the disk, the rest is pure.

The modules, top to bottom (the import contract in pyproject.toml keeps them in this order): the gate over the
evaluations on disk and the facts of each evaluation (``load``); the checks, the interval that decides improvement
and no-regression, and the result (``checks``); the result as text, JSON and Markdown (``text``); what a gate is
asked, checked (``options``); the objects the gate builds (``model``). The requirements' names are
``core.report.requirements``, which loads nothing.
"""
