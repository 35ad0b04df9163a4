"""The benchmark: the paper's evaluation on this machine, written to docs/results.md.

    python scripts/evaluate.py [--quick] [NETWORK ...] [--methods a,b]

Same as ``recommender evaluate --page docs/results.md``. Resumable: each finished search and
each network's comparison is kept under ``out/evaluate/`` and read back on a rerun. Run it
alone on the machine (it times everything).
"""

import sys

from recommender import paths
from recommender.cli import main

if __name__ == "__main__":
    sys.exit(main(["evaluate", "--page", str(paths.ROOT / "docs" / "results.md"), *sys.argv[1:]]))
