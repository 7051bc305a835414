"""kube-tailor updater: brings running pods to their planned requests with in-place resizes.

The plan is the forecaster's schedule, or each pod's VPA recommendation under upstream's
update rules (`recommendations`); pods go in upstream's priority order (`priority`), node
fit is checked first (`fit`), the kubelet's answers are honoured (`progress`, `decide`),
and eviction is a fallback within upstream's restriction (`restriction`) and the pods'
PodDisruptionBudgets.
"""
