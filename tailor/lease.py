"""The leader-election record as a coordination.k8s.io/v1 Lease on the API server.

Every write carries the resourceVersion read before it, so two replicas racing for
the same Lease cannot both win: the API server answers the slower one 409.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, cast

import kubernetes.client
from kubernetes.client.exceptions import ApiException

from tailor.kube import FIELD_MANAGER, UNREACHABLE, ClusterError, Json, api_message
from tailor.leader import LeaseRecord
from tailor.schedule_file import aware_time


def micro_time(moment: datetime) -> str:
    """MicroTime as the API server parses it: RFC 3339 with exactly six fractional digits."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _time(text: object) -> datetime | None:
    return aware_time(text) if isinstance(text, str) and text else None


def record_of(lease: Json) -> LeaseRecord:
    """A Lease's spec as a record; absent fields read as Go's zero values."""
    spec = lease.get("spec") or {}
    return LeaseRecord(
        holder=str(spec.get("holderIdentity") or ""),
        duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=_time(spec.get("acquireTime")),
        renew_time=_time(spec.get("renewTime")),
        transitions=int(spec.get("leaseTransitions") or 0),
    )


def spec_of(record: LeaseRecord) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "holderIdentity": record.holder,
        "leaseDurationSeconds": record.duration_seconds,
        "leaseTransitions": record.transitions,
    }
    if record.acquire_time is not None:
        spec["acquireTime"] = micro_time(record.acquire_time)
    if record.renew_time is not None:
        spec["renewTime"] = micro_time(record.renew_time)
    return spec


# Seconds one Lease call may take. Without a bound a blackholed API server blocks the
# elector's thread: the renew deadline passes, but on_lost never fires while a pass goes on.
REQUEST_TIMEOUT = 5.0


class ApiLease:
    """One named Lease, read and written with optimistic concurrency."""

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        namespace: str,
        name: str,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self.coordination = kubernetes.client.CoordinationV1Api(api_client)
        self.namespace, self.name, self.timeout = namespace, name, timeout

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    def read(self) -> tuple[LeaseRecord, str] | None:
        try:
            response = self.coordination.read_namespaced_lease(
                self.name, self.namespace, _preload_content=False, _request_timeout=self.timeout
            )
        except ApiException as error:
            if error.status == 404:
                return None
            raise ClusterError(f"cannot read Lease {self}: {api_message(error)}") from None
        except UNREACHABLE as error:
            raise ClusterError(f"cannot read Lease {self}: {error}") from None
        lease = json.loads(cast(Any, response).data)
        return record_of(lease), str(lease["metadata"]["resourceVersion"])

    def _body(self, record: LeaseRecord, version: str | None) -> Any:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if version is not None:
            metadata["resourceVersion"] = version
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": spec_of(record),
        }
        return cast(Any, body)

    def _sent(self, call: Any, what: str, lost: tuple[int, ...] = (409,)) -> bool:
        """True when written; False when answered one of `lost` (409: another replica was
        first)."""
        try:
            call()
        except ApiException as error:
            if error.status in lost:
                return False
            raise ClusterError(f"cannot {what} Lease {self}: {api_message(error)}") from None
        except UNREACHABLE as error:
            raise ClusterError(f"cannot {what} Lease {self}: {error}") from None
        return True

    def create(self, record: LeaseRecord) -> bool:
        """Create the Lease with a PUT to its own name, not a POST to the collection.

        Leases may be created by an update (the API server's lease strategy allows it), and
        an update names the object, so RBAC can grant `create` on this name alone
        (`resourceNames`); a POST carries no name and would need `create` on every Lease of
        the namespace. Without a resourceVersion the PUT cannot overwrite: when another
        replica created it first the API server refuses it (422, a resourceVersion "must be
        specified for an update"), which is that replica's win, as a POST's 409 would be."""
        return self._sent(
            lambda: self.coordination.replace_namespaced_lease(
                self.name,
                self.namespace,
                self._body(record, None),
                field_manager=FIELD_MANAGER,
                _preload_content=False,
                _request_timeout=self.timeout,
            ),
            "create",
            lost=(409, 422),
        )

    def replace(self, record: LeaseRecord, version: str) -> bool:
        return self._sent(
            lambda: self.coordination.replace_namespaced_lease(
                self.name,
                self.namespace,
                self._body(record, version),
                field_manager=FIELD_MANAGER,
                _preload_content=False,
                _request_timeout=self.timeout,
            ),
            "update",
        )
