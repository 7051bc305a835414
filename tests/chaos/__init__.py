"""The chaos suite (`make chaos`): attacks and outages played against the real programs.

Loopback only, each case bounded in time and stopping by itself. Every test here is
marked `chaos` by this folder's conftest; measured figures go to docs/results/.
"""
