"""kube-tailor admission: the mutating webhook that sets requests on pod creation.

Not built yet (its own issue): it will apply the capped target and scale limits
proportionally with the shared capping rules in `tailor/`.
"""
