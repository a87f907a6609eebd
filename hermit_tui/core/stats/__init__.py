"""The statistics, pure functions of the records: per-selector intervals, paired comparisons and the test that
inverts the pair interval (``figures``, ``intervals``), the secondary randomisation test of the sharp null
(``paired``), clusters above the task and the cluster-robust variance (``clusters``), the group-sequential design
(``sequential``) and its looks recomputed from the files (``looks``), the anytime-valid confidence sequence
(``anytime``) and the ``--anytime`` launch's design and looks (``anytime_looks``).
Imports records, the workspace and the base modules only."""
