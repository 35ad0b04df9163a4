"""``python -m recommender.cli``: the command line."""

from .main import main

raise SystemExit(main())
