"""Benchmarks: `make bench` runs them all and writes JSON results."""
