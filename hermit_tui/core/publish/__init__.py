"""Publishing final's card: the card itself and hermit's update of it (``card``), the rows of its Evaluation
table (``table``), the review before publishing (``plan``, ``checks``) and the guarded, reversible commit and tag
move (``apply``). Imports stats and below; never report."""
