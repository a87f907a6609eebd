"""Why it changed: what an adapter changed between two versions (``adapter_files``, ``adapter_diff``), the
trajectories of two or more selectors aligned step by step with their first divergence (``align``), whether an
attempt used what its adapter exports (``usage``), and all of it over a compared pair of evaluations (``pair``).
Descriptive only: none of it is a causal claim. Imports the stats, records and workspace stages and the base
modules."""
