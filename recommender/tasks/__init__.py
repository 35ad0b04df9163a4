"""A network's kernels: lowering, task extraction, kernel classes (exact and anchor)."""
