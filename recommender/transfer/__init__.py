"""A source schedule on a new kernel: candidates, applying, timing, the exhaustive run."""
