"""Below everything: errors, where the data lives (corpora, paths), Ctrl-C, targets."""
