"""The well-known controllers: the kinds a pod's owner chain passes and a targetRef names.

One table for the API calls that read them (`tailor.kube.Cluster`) and for the
API group a targetRef must carry to name one (the recommender's target check).
"""

from __future__ import annotations

# kind: (client, list-all call, read call) of the well-known controllers: those a pod's
# owner chain passes, and those a VPA's targetRef names
CONTROLLER_KINDS = {
    "ReplicaSet": ("apps", "list_replica_set_for_all_namespaces", "read_namespaced_replica_set"),
    "Job": ("batch", "list_job_for_all_namespaces", "read_namespaced_job"),
    "StatefulSet": (
        "apps",
        "list_stateful_set_for_all_namespaces",
        "read_namespaced_stateful_set",
    ),
    "DaemonSet": ("apps", "list_daemon_set_for_all_namespaces", "read_namespaced_daemon_set"),
    "ReplicationController": (
        "core",
        "list_replication_controller_for_all_namespaces",
        "read_namespaced_replication_controller",
    ),
    "Deployment": ("apps", "list_deployment_for_all_namespaces", "read_namespaced_deployment"),
    "CronJob": ("batch", "list_cron_job_for_all_namespaces", "read_namespaced_cron_job"),
}


def controller_group(kind: str) -> str:
    """The API group of a well-known controller kind (`CONTROLLER_KINDS`): its client's."""
    client = CONTROLLER_KINDS[kind][0]
    return "" if client == "core" else client
