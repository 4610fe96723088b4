"""msglc benchmarks: every figure is a ratio against a floor or a peer measured in the same run."""
