"""Archives made from archives by copying bytes: ``combine``, ``append``, repacking. Built on
``read`` and ``write``; neither of them imports this layer."""
