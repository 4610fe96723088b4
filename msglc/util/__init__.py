"""Helpers every layer may use: checksums, runtime switches, the C accelerator."""
