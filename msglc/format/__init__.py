"""The file format, in one place: every offset, header byte, trailer field, TOC node and
hash-index layout (see docs/format.md). Pure functions on bytes; no I/O."""
