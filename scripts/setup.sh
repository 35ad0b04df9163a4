#!/usr/bin/env bash
# Create .venv (once) and install the package with its test tools. Idempotent and quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3.11 -m venv .venv 2>/dev/null || python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip 2>&1 | grep -v "is ignored" || true
.venv/bin/python -m pip install --quiet -e ".[dev]" 2>&1 | grep -v "is ignored" || true
.venv/bin/python -c "import recommender, tvm, xgboost" # fail here, not in the job, if pip did
