"""Development tools for msglc, run from the checkout (not installed): the fuzz harness
(``python -m tools.fuzz``), and the S3 server, latency file system and fault-injecting proxy
that the tests and the benchmark's remote figures use."""
