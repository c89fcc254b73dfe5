"""Selection accuracy: how often the scorer ranks the right candidate first (``python -m
bench.selection``), on the labeled corpus in ``corpus/``."""
