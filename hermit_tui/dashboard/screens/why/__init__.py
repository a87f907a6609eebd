"""Why it changed: the Changes screen (the adapter's diff beside the flips, the pair's summary) and the aligned
trajectories of one task (``core/why``; docs/why.md)."""
