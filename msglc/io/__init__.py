"""Storage: sources that serve byte ranges (local files, buffers, remote objects) and targets
that receive an archive atomically. Knows nothing of the format's nodes."""
