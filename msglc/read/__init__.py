"""Archives read lazily: ``Archive`` (bytes, trailer, node cache), the views, batch reads,
``verify``, inspection, and ``LazyReader`` on top. Never imports ``write``."""
