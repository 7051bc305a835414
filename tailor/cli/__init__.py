"""The tailor command line."""
