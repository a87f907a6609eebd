"""Stop when decided: a candidate compared with a baseline look by look, by one of two designs, each in its stages
(the import contract in pyproject.toml keeps them in this order, lower modules never importing higher ones).

The group-sequential design (``eval --stop-when-decided``): the error spending and its critical values
(``spending``); the futility rule and the inference at stopping (``stopping``); when and in which order the looks are
taken, clustered or not (``schedule``); one look's record and decision (``look``); one look's figures and repeated
interval (``repeated``); one candidate over a launch (``monitor``), with clusters above the task (``clustered``); the
launch's plan and state of the looks (``tracker``).

The anytime-valid design (``--anytime``): the confidence sequences (``anytime``); its looks and entries told apart
and named (``anytime_looks``); its plan (``anytime_plan``) and state of the looks (``anytime_tracker``); how it reads
(``anytime_text``).

Both read back: the looks recomputed from the files (``replay``) and how they read (``text``)."""
