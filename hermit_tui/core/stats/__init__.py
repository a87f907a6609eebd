"""The statistics, pure functions of the records: per-selector intervals and paired comparisons (``figures``,
``intervals``), the paired randomisation test (``paired``), the group-sequential design (``sequential``) and its looks
recomputed from the files (``looks``). Imports records, the workspace and the base modules only."""
