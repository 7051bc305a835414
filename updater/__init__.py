"""kube-tailor updater: applies recommendations to running pods with in-place resizes.

Not built yet (its own issue): it will read recommendations from VPA status,
check node fit with the rules in `tailor/`, resize through `pods/resize`, and
fall back to PDB-respecting eviction on Infeasible / long-Deferred answers.
"""
