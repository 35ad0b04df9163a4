"""TVM wrapped once: work-arounds, worker processes; building, checking, timing kernels."""
