"""Tools for development and tests; not part of the product."""
