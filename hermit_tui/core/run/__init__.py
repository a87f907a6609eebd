"""A launch: what it is asked (``launch``), resolved against the config (``plan``) and what it continues
(``continuing``); the runner, where attempts run (``executors``, ``threads``, ``process_executor``,
``ray_executor``), one attempt (``attempts``) and what it prints (``printed``), the events it emits, the summaries it
writes, the cost cap and the rounds of stop-when-decided. The top stage: it may use every other."""
