"""Stop when decided: the group-sequential design (``monitor``) and its looks recomputed from the files
(``looks``), the anytime-valid confidence sequence (``anytime``) and the ``--anytime`` launch's design and looks
(``anytime_looks``)."""
