"""Values to archives: validation, encoding with msgspec, TOC building, streaming writes.
Never imports ``read``."""
