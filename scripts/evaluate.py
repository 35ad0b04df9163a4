"""The benchmark: the paper's evaluation on this machine, written to docs/results.md.

    python scripts/evaluate.py [--quick] [NETWORK ...] [--methods a,b]

Same as ``recommender evaluate ... --page`` (the page of the mode chosen). Resumable: each
finished search and each network's comparison is kept under ``out/evaluate/`` and read back on
a rerun. Run it alone on the machine (it times everything). ``--quick`` (2 networks, 3
methods, under 20 minutes) keeps its own state and page (``out/evaluate_quick/``,
``docs/results_quick.md``).
"""

import sys

from recommender.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["evaluate", *sys.argv[1:], "--page"]))
