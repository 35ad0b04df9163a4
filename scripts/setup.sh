#!/usr/bin/env bash
# Create .venv (once) and install the package; `setup.sh test` adds the test tools and the zoo
# extra (PyTorch eager and ONNX Runtime are tested baselines). Idempotent and quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3.11 -m venv .venv 2>/dev/null || python3 -m venv .venv
fi
pip() { .venv/bin/python -m pip install --quiet "$@" 2>&1 | grep -v "is ignored" || true; }
# installed once per state of pyproject.toml (the install is editable: code changes need none)
stamp=".venv/.installed-${1:-main}"
wanted="$(sha256sum pyproject.toml | cut -c1-16)"
installed="$(cat "$stamp" 2>/dev/null || true)"
if [ "$installed" != "$wanted" ]; then
  rm -f "$stamp"
  pip --upgrade pip
  if [ "${1:-}" = "test" ]; then
    pip -e ".[dev,zoo]"
    # torchvision's wheel pins a CUDA torch build; its model code runs on the CPU torch above
    pip --no-deps torchvision==0.28.0
    .venv/bin/python -c "import recommender.networks.torch_zoo"  # torchvision needs the shim there
  else
    pip -e "."
  fi
fi
.venv/bin/python -c "import recommender, tvm, xgboost" # fail here, not in the job, if pip did
if [ "$installed" != "$wanted" ]; then
  echo "$wanted" > "$stamp"
fi
