"""Scripts that print figures (not tests), a subpackage per suite, run from the repository root with python -m."""
