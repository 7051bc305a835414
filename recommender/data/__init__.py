"""Usage-history sources and the canonical long format every source produces."""
