"""AdmissionReview parsing and answers, and the decision over a fake cluster view (pure)."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest

from admission.admit import admit
from admission.review import AdmissionRequest, ReviewError, Verdict, parse_review, review_response
from tailor.api import LimitRange, VerticalPodAutoscaler
from tailor.kube import ClusterError
from tailor.scope import NamespaceScope
from tests.admission.objects import APP_TARGETS, apply_patch, container, limit_range, pod, vpa

REPLICA_SET = {
    "metadata": {
        "name": "web-5d9",
        "namespace": "shop",
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "web",
                "uid": "d1",
                "controller": True,
            }
        ],
    }
}

JOB = {  # what the CronJob controller creates for each run: <cronjob>-<minutes since epoch>
    "metadata": {
        "name": "backup-29412345",
        "namespace": "shop",
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "name": "backup",
                "uid": "c1",
                "controller": True,
            }
        ],
    }
}
CONTROLLERS = {
    ("ReplicaSet", "shop", "web-5d9"): REPLICA_SET,
    ("Job", "shop", "backup-29412345"): JOB,
}


class View:
    """A cluster of plain objects; `broken` makes every ReplicaSet read fail."""

    def __init__(
        self,
        vpas: list[VerticalPodAutoscaler],
        ranges: list[LimitRange] | None = None,
        broken: Exception | None = None,
        hpas: list[dict[str, Any]] | None = None,
    ) -> None:
        self._vpas, self._ranges, self.broken = vpas, ranges or [], broken
        self._hpas = hpas or []
        self.nodes: dict[str, dict[str, Any]] = {}
        self.controller_reads: list[tuple[str, str]] = []
        self.hpa_reads: list[str] = []

    def vpas(self, namespace: str) -> list[VerticalPodAutoscaler]:
        return [v for v in self._vpas if v.namespace == namespace]

    def limit_ranges(self, namespace: str) -> list[LimitRange]:
        return self._ranges

    def hpas(self, namespace: str) -> list[dict[str, Any]]:
        self.hpa_reads.append(namespace)
        return self._hpas

    def node(self, name: str) -> dict[str, Any] | None:
        return self.nodes.get(name)

    def has_controller(self, kind: str, namespace: str, name: str) -> bool:
        return self.broken is None  # a broken view reads, and fails, in a thread

    def controller(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        self.controller_reads.append((namespace, name))
        if self.broken is not None:
            raise self.broken
        return CONTROLLERS.get((kind, namespace, name))


def review(obj: object, operation: str = "CREATE", resource: str = "pods", **extra: Any) -> bytes:
    request = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": resource},
        "namespace": "shop",
        "operation": operation,
        "object": obj,
        **extra,
    }
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(body).encode()


def creating(pod_json: object) -> AdmissionRequest:
    return parse_review(review(pod_json))


def new_pod() -> dict[str, Any]:
    created = pod(container("app", {"cpu": "250m", "memory": "128Mi"}, {"memory": "256Mi"}))
    del created["metadata"]["namespace"]  # a pod being created may not carry it yet
    return created


# --- reviews in and out ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>", "body is not JSON"),
        (b"\xff\xfe", "body is not JSON"),
        (b'{"kind": ' + b"9" * 5000 + b"}", "body is not JSON"),  # past int's digit limit
        (b"[" * 100_000 + b"]" * 100_000, "body is not JSON"),  # too deep to decode
        (b"[1, 2]", "expected a JSON object"),
        (b'{"kind": "Pod"}', "kind is 'Pod'"),
        (b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1"}', "only"),
        (b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}', "no request"),
        (
            b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {}}',
            "no uid",
        ),
    ],
)
def test_a_body_that_is_not_an_admission_review_v1_is_refused_with_the_reason(
    body: bytes, message: str
) -> None:
    with pytest.raises(ReviewError, match=message):
        parse_review(body)


def test_the_answer_echoes_the_uid_and_carries_the_patch_in_base64() -> None:
    request = creating(new_pod())
    operations = [{"op": "add", "path": "/metadata/annotations", "value": {}}]
    answer = review_response(request, Verdict(operations=operations, warnings=("w",)))
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == request.uid
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == operations
    assert response["warnings"] == ["w"]
    bare = review_response(request, Verdict())["response"]
    assert bare == {"uid": request.uid, "allowed": True}


# --- the decision -------------------------------------------------------------------------


def test_a_deployment_pod_gets_its_vpa_recommendation_through_its_replica_set() -> None:
    view = View([vpa("Auto", APP_TARGETS)])
    verdict = admit(creating(new_pod()), view)
    assert view.controller_reads == [("shop", "web-5d9")]
    result = apply_patch(new_pod(), verdict.operations)
    assert result["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "200Mi"},
        "limits": {"memory": "400Mi"},
    }
    assert verdict.reason.startswith("Pod resources updated by web")


def test_a_cronjob_pod_gets_the_recommendation_of_the_vpa_targeting_the_cronjob() -> None:
    """Pod -> Job -> CronJob, as upstream's controller fetcher walks it."""
    found = vpa("Auto", APP_TARGETS, name="backup").to_api()
    found["spec"]["targetRef"] = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "backup"}
    view = View([VerticalPodAutoscaler.from_api(found)])
    run = new_pod()
    run["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "backup-29412345", "uid": "j1"}
    ]
    run["metadata"]["ownerReferences"][0]["controller"] = True
    verdict = admit(creating(run), view)
    assert view.controller_reads == [("shop", "backup-29412345")]
    assert verdict.reason.startswith("Pod resources updated by backup")
    assert apply_patch(run, verdict.operations)["spec"]["containers"][0]["resources"][
        "requests"
    ] == {"cpu": "1", "memory": "200Mi"}


def hpa(resource: str, target: str = "web") -> dict[str, Any]:
    metric = {"type": "Resource", "resource": {"name": resource, "target": {"type": "Utilization"}}}
    return {
        "metadata": {"name": f"{target}-{resource}", "namespace": "shop"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "metrics": [metric],
        },
    }


def test_what_an_hpa_scales_on_keeps_the_pods_own_request() -> None:
    view = View([vpa("Auto", APP_TARGETS)], hpas=[hpa("cpu"), hpa("memory", target="other")])
    verdict = admit(creating(new_pod()), view)
    result = apply_patch(new_pod(), verdict.operations)
    assert result["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "250m", "memory": "200Mi"},  # cpu as written: the HPA's
        "limits": {"memory": "400Mi"},
    }
    said = "HPA web-cpu scales on cpu (Resource metric)"
    assert result["metadata"]["annotations"]["kube-tailor.io/hpa-conflicts"] == said
    assert verdict.reason.endswith(f"left to the HPA: {said}")
    both = View([vpa("Auto", APP_TARGETS)], hpas=[hpa("cpu"), hpa("memory")])
    untouched = apply_patch(new_pod(), admit(creating(new_pod()), both).operations)
    assert untouched["spec"] == new_pod()["spec"]


def test_hpas_are_read_only_for_a_pod_with_a_vpa() -> None:
    view = View([], hpas=[hpa("cpu")])
    assert admit(creating(new_pod()), view).operations == ()
    assert view.hpa_reads == []
    off = View([vpa("Off", APP_TARGETS)], hpas=[hpa("cpu")])
    assert admit(creating(new_pod()), off).operations == ()  # Off: nothing to fight over
    assert off.hpa_reads == []


def test_a_pod_outside_the_namespace_scope_is_admitted_as_written() -> None:
    view = View([vpa("Auto", APP_TARGETS)])
    ignored = admit(creating(new_pod()), view, NamespaceScope.parse(None, "shop"))
    assert not ignored.operations
    assert ignored.reason == "namespace shop is outside all namespaces but shop"
    assert view.controller_reads == []  # not even looked up
    elsewhere = admit(creating(new_pod()), view, NamespaceScope.parse("ops", None))
    assert elsewhere.reason == "namespace shop is outside namespace ops"
    assert admit(creating(new_pod()), view, NamespaceScope.parse("shop", None)).operations


def test_the_oldest_matching_vpa_not_in_mode_off_decides() -> None:
    """Upstream's webhook drops VPAs in mode Off before the oldest match wins."""
    oldest_off = vpa("Off", APP_TARGETS, name="off", created="2023-01-01T00:00:00Z")
    older = vpa("Initial", APP_TARGETS, name="old", created="2024-01-01T00:00:00Z")
    younger = vpa("Auto", {"app": {"cpu": "3"}}, name="young", created="2025-01-01T00:00:00Z")
    verdict = admit(creating(new_pod()), View([younger, oldest_off, older]))
    assert verdict.reason.startswith("Pod resources updated by old")
    verdict = admit(creating(new_pod()), View([younger, oldest_off]))
    assert verdict.reason.startswith("Pod resources updated by young")
    only_off = admit(creating(new_pod()), View([oldest_off]))
    assert (only_off.operations, only_off.reason) == ((), "VPA off has updateMode Off")


def test_pods_without_a_controlling_vpa_are_admitted_as_written() -> None:
    other = vpa("Auto", APP_TARGETS, target_name="api")
    orphan = new_pod()
    del orphan["metadata"]["ownerReferences"]
    for candidate, view in ((new_pod(), View([other])), (orphan, View([vpa("Auto", APP_TARGETS)]))):
        verdict = admit(creating(candidate), view)
        assert verdict == Verdict(reason="no VerticalPodAutoscaler controls it")


def test_limit_ranges_of_the_namespace_bound_the_patch() -> None:
    ceiling = limit_range({"type": "Container", "max": {"memory": "300Mi"}})
    verdict = admit(creating(new_pod()), View([vpa("Auto", APP_TARGETS)], [ceiling]))
    result = apply_patch(new_pod(), verdict.operations)
    assert result["spec"]["containers"][0]["resources"]["limits"] == {"memory": "300Mi"}


@pytest.mark.parametrize(
    ("operation", "resource", "extra"),
    [
        ("UPDATE", "pods", {}),
        ("CREATE", "services", {}),
        ("CREATE", "pods", {"subResource": "binding"}),
    ],
)
def test_only_pod_creations_are_patched(operation: str, resource: str, extra: dict) -> None:
    request = parse_review(review(new_pod(), operation, resource, **extra))
    verdict = admit(request, View([vpa("Auto", APP_TARGETS)]))
    assert verdict.operations == ()
    assert verdict.reason.startswith("not a pod CREATE")


@pytest.mark.parametrize(
    "obj",
    [
        None,
        "a pod",
        {"metadata": {}, "spec": {}},
        {"metadata": {"ownerReferences": [{"kind": "ReplicaSet"}]}, "spec": {"containers": []}},
        {"metadata": 7, "spec": {}},
        {"metadata": "web", "spec": {}},
        {**new_pod(), "spec": ["oops"]},
    ],
)
def test_a_pod_that_cannot_be_read_is_admitted_with_a_warning(obj: object) -> None:
    verdict = admit(creating(obj), View([vpa("Auto", APP_TARGETS)]))
    assert verdict.operations == ()
    assert len(verdict.warnings) == 1
    assert verdict.warnings[0].startswith("kube-tailor admission: cannot read the pod")


def test_a_cluster_read_that_fails_admits_the_pod_as_written_and_logs_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    view = View([vpa("Auto", APP_TARGETS)], broken=ClusterError("cannot reach the API server"))
    with caplog.at_level(logging.ERROR, "tailor.admission"):
        verdict = admit(creating(new_pod()), view)
    assert verdict.operations == ()
    assert "cannot reach the API server" in caplog.text


def test_an_internal_error_admits_the_pod_as_written_and_logs_the_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    view = View([vpa("Auto", APP_TARGETS)], broken=KeyError("bug"))
    with caplog.at_level(logging.ERROR, "tailor.admission"):
        verdict = admit(creating(new_pod()), view)
    assert verdict.operations == ()
    assert verdict.warnings == ("kube-tailor admission: internal error, pod admitted as written",)
    assert "KeyError: 'bug'" in caplog.text


def vpa_review(obj: object, operation: str = "CREATE", sub_resource: str | None = None) -> Any:
    group = {"group": "autoscaling.k8s.io", "version": "v1"}
    extra: dict[str, Any] = {"kind": {**group, "kind": "VerticalPodAutoscaler"}}
    if sub_resource:
        extra["subResource"] = sub_resource
    body = json.loads(review(obj, operation, "verticalpodautoscalers", **extra))
    body["request"]["resource"]["group"] = "autoscaling.k8s.io"
    return parse_review(json.dumps(body).encode())


TARGET_REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
BAD_BOUNDS: dict[str, Any] = {
    "metadata": {"name": "web"},
    "spec": {
        "targetRef": TARGET_REF,
        "updatePolicy": {"updateMode": "Auto"},
        "resourcePolicy": {"containerPolicies": [
            {"containerName": "app", "minAllowed": {"cpu": "2"}, "maxAllowed": {"cpu": "1"}}
        ]},
    },
}  # fmt: skip


def test_a_vpa_upstream_refuses_is_refused_with_its_message_in_any_namespace() -> None:
    request = vpa_review(BAD_BOUNDS)
    verdict = admit(request, View([]), NamespaceScope.parse("ops", None))  # scope: pods only
    assert verdict.denied == "max resource for cpu is lower than min"
    response = review_response(request, verdict)["response"]
    assert response["allowed"] is False
    assert response["status"]["message"] == "max resource for cpu is lower than min"
    assert "patch" not in response
    assert admit(vpa_review(BAD_BOUNDS, "UPDATE"), View([])).denied  # an edit too


def test_a_vpa_without_update_policy_gets_upstreams_default_and_its_status_is_not_judged() -> None:
    bare = {"metadata": {"name": "web"}, "spec": {"targetRef": TARGET_REF}}
    verdict = admit(vpa_review(bare), View([]))
    assert not verdict.denied
    assert list(verdict.operations) == [
        {"op": "add", "path": "/spec/updatePolicy", "value": {"updateMode": "Recreate"}}
    ]
    assert apply_patch(bare, verdict.operations)["spec"]["updatePolicy"] == {
        "updateMode": "Recreate"
    }
    status_write = admit(vpa_review(BAD_BOUNDS, "UPDATE", sub_resource="status"), View([]))
    assert not status_write.denied and not status_write.operations
