#!/usr/bin/env bash
# Set up, then run the main job on the shipped default data: recommend schedules for ResNet-18
# (or the model given) from the other networks' logs with the shipped cost model, timing the 3
# best-ranked candidates per kernel; writes the database, library and report to out/MODEL.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
model="${1:-resnet18}"
.venv/bin/recommender recommend "$model" --top-k 3 --out "out/$model"
