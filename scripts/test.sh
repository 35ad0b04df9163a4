#!/usr/bin/env bash
# Set up, then run the whole test suite (real TVM builds and timings on tiny workloads).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
exec .venv/bin/python -m pytest -q "$@"
