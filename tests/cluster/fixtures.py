"""Placeholder: the real-cluster fixtures are written by the control-plane engineer."""
