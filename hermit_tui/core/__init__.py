"""The evaluation engine, in stage packages; nothing in it imports Textual, Rich, the dashboard or the CLI.

Each stage imports only the stages below it (an import-linter layers contract in pyproject.toml):

    run        a launch: its plan, the runner, executors (threads, processes, Ray), attempts, events, summaries
    report     the report (text, JSON, CSV, HTML, JUnit), the gate, the protocol checks, comparability
    publish    the card: its table, the plan and its checks, the guarded commit and tag move, undo
    why        why a pair changed: the adapter's diff, aligned trajectories, whether the adapter was used
    stats      intervals, paired tests, the verdict, power, the group-sequential design and its looks
    records    hermit's files and hermit-tui's sidecars: results, summaries, columns, journal, transcripts, triage
    workspace  the user's files: run.yaml, task rows and splits, the adapter tree, selectors, fingerprints

with the base modules beside them, which every stage may use: ``errors``, ``present`` (every wording),
``outputs`` (``RunOutput``, ``JudgeResult``), ``context`` (what a pipeline may ask about its attempt), ``version``.
``report`` and ``publish`` stand side by side and import nothing of each other.
"""
