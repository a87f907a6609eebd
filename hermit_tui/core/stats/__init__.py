"""The statistics, pure functions of the records: per-selector intervals (``selector``), paired comparisons and the
test that inverts the pair interval (``figures``, ``intervals``), the secondary randomisation test of the sharp null
(``paired``), clusters above the task and the cluster-robust variance (``clusters``), and stop when decided, the
group-sequential and the anytime-valid designs and their looks recomputed from the files, in the sub-package
``sequential`` (its ``__init__`` says what is where).
Imports records, the workspace and the base modules only."""
