"""What each ServiceAccount may do: the one list the shipped RBAC is checked against.

tests/deploy/test_rbac_cluster.py applies deploy/ and the chart's render on the real API
server, asks it as each account what that account may do (SelfSubjectRulesReview), and
fails on any right beyond this list or missing from it. docs/reference/rbac.md is this list
rendered (`python -m tests.deploy.rights > docs/reference/rbac.md`); a test keeps the two
in step. A new right is one line here, beside the manifests' and the chart's rule.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

HOME = "kube-tailor"  # the project's namespace in the plain manifests
SCHEDULE = "tailor-schedule"
STATUS_LEASE = "tailor-admission-status"
REGISTRATION = "kube-tailor-admission"


@dataclass(frozen=True)
class Right:
    """`verbs` on `resource` (with its subresource, `pods/resize`) of API `group`; on the
    objects `names` only (none: any); in every namespace, or only in the project's own
    (`home`); `why` the code needs it."""

    group: str
    resource: str
    verbs: str
    why: str
    names: tuple[str, ...] = ()
    home: bool = False

    def grants(self) -> set[tuple[str, str, str, str]]:
        """(group, resource, verb, name or '*') of each verb and name."""
        return {
            (self.group, self.resource, verb, name)
            for verb in self.verbs.split()
            for name in (self.names or ("*",))
        }


VPA = "autoscaling.k8s.io"
COORDINATION = "coordination.k8s.io"
EVENTS = Right("", "events", "create patch", "Events on the VPAs and pods it acts on")

RECOMMENDER = [
    EVENTS,
    Right("", "pods", "list", "which pods each VPA controls"),
    Right("apps", "replicasets", "list get", "pod -> Deployment links; a VPA's target"),
    Right("batch", "jobs", "list get", "pod -> CronJob links; a VPA's target"),
    Right(VPA, "verticalpodautoscalers", "list get", "the VPAs; one re-read on a 409"),
    Right(VPA, "verticalpodautoscalers", "patch", "a DaemonSet's node-group annotation"),
    Right("", "nodes", "list", "a DaemonSet's node groups (their labels)"),
    Right("apps", "deployments statefulsets daemonsets", "get", "a VPA's target (why no pod)"),
    Right("batch", "cronjobs", "get", "a VPA's target (why no pod)"),
    Right("", "replicationcontrollers", "get", "a VPA's target (why no pod)"),
    Right("autoscaling", "horizontalpodautoscalers", "list", "HorizontalAutoscalerConflict"),
    Right(VPA, "verticalpodautoscalers/status", "patch", "the recommendation and conditions"),
    Right(VPA, "verticalpodautoscalercheckpoints", "create patch list delete", "--strategy vpa"),
    Right("", "configmaps", "create patch", "the schedule", names=(SCHEDULE,), home=True),
    Right(
        COORDINATION, "leases", "create get update", "--leader-elect", ("tailor-recommender",), True
    ),
]

UPDATER = [
    EVENTS,
    Right("", "pods nodes limitranges", "list", "a pass's pods, node fit, capping"),
    Right("apps", "replicasets statefulsets daemonsets", "list", "pod -> controller links"),
    Right("", "replicationcontrollers", "list", "pod -> controller links"),
    Right("batch", "jobs", "list", "pod -> CronJob links"),
    Right(VPA, "verticalpodautoscalers", "list", "--vpa: each pod's VPA"),
    Right("autoscaling", "horizontalpodautoscalers", "list", "resources an HPA scales"),
    Right("autoscaling", "horizontalpodautoscalers", "patch", "a coordinated HPA's target"),
    Right("apps", "deployments", "list", "a coordinated HPA: the template's requests"),
    Right(VPA, "verticalpodautoscalers/status", "patch", "a coordinated HPA's condition"),
    Right(VPA, "verticalpodautoscalers", "get", "that condition: one re-read on a 409"),
    Right("", "pods/resize", "patch", "in-place resizes"),
    Right("", "pods", "patch", "the change budget: a resize's time, on the pod"),
    Right("", "pods/eviction", "create", "--evict"),
    Right("", "configmaps", "get", "the schedule", names=(SCHEDULE,), home=True),
    Right(COORDINATION, "leases", "create get update", "--leader-elect", ("tailor-updater",), True),
    Right(COORDINATION, "leases", "get", "--evict: the webhook is up", (STATUS_LEASE,), True),
]

ADMISSION = [
    EVENTS,
    Right(VPA, "verticalpodautoscalers", "list watch", "the VPAs, kept in memory"),
    Right("", "limitranges", "list watch", "capping, kept in memory"),
    Right("apps", "replicasets", "get list watch", "pod -> Deployment links, kept in memory"),
    Right("batch", "jobs", "get list watch", "pod -> CronJob links, kept in memory"),
    Right("autoscaling", "horizontalpodautoscalers", "list watch", "resources an HPA scales"),
    Right("", "nodes", "list watch", "a DaemonSet pod's node group, kept in memory"),
    Right(COORDINATION, "leases", "create get update", "its status Lease", (STATUS_LEASE,), True),
]

# --register-webhook or --self-signed-certs (deploy/admission/registration-rbac.yaml,
# admission.registerWebhook or admission.selfSignedCerts)
REGISTRATION_RIGHTS = [
    Right(
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        "get patch",
        "its CA bundle",
        names=(REGISTRATION,),
    ),
]

ACCOUNTS = {
    "tailor-recommender": RECOMMENDER,
    "tailor-updater": UPDATER,
    "tailor-admission": ADMISSION,
}

Grant = tuple[str, str, str, str]


def expected(rights: list[Right]) -> tuple[set[Grant], set[Grant]]:
    """(in every namespace, in the home namespace only), each (group, resource, verb, name)."""
    everywhere: set[Grant] = set()
    home: set[Grant] = set()
    for right in rights:
        for resource in right.resource.split():
            grants = Right(right.group, resource, right.verbs, "", right.names).grants()
            (home if right.home else everywhere).update(grants)
    return everywhere, home


def markdown() -> str:
    """docs/reference/rbac.md."""
    lines = [
        "# RBAC: what each ServiceAccount may do",
        "",
        "Generated from `tests/deploy/rights.py` (`python -m tests.deploy.rights`). The test",
        "`tests/deploy/test_rbac_cluster.py` applies the plain manifests in `deploy/` and the",
        "helm chart's render on a real API server, asks the API server what each account may",
        "do (SelfSubjectRulesReview, as that account), and fails on any right beyond these",
        "tables or missing from them; `tests/deploy/test_rbac_doc.py` keeps this page in step.",
        "",
        f"*Where*: `all` is every namespace (a ClusterRole); `{HOME}` is the project's own",
        "namespace only (a Role; the chart's release namespace). *Names*: the objects the",
        "right is limited to (`resourceNames`); `any` when RBAC cannot name them.",
        "",
    ]
    sections = [
        *ACCOUNTS.items(),
        ("tailor-admission with --register-webhook or --self-signed-certs", REGISTRATION_RIGHTS),
    ]
    for account, rights in sections:
        lines += [f"## {account}", "", "| API group | resource | verbs | names | where | why |"]
        lines.append("| --- | --- | --- | --- | --- | --- |")
        for right in rights:
            names = ", ".join(right.names) or "any"
            where = HOME if right.home else "all"
            group = right.group or "core"
            cells = [group, right.resource, right.verbs, names, where, right.why]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "The webhook's registration (MutatingWebhookConfiguration `kube-tailor-admission`) is",
        "created by the chart or `deploy/admission/webhook.yaml`; with `--register-webhook` or",
        "`--self-signed-certs` the webhook may only read and update that one object, never",
        "create one.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(markdown())
