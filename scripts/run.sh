#!/usr/bin/env bash
# Set up, then run the main job on the shipped default data: ResNet-18's tasks and kernel classes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/recommender tasks "${1:-resnet18}"
