"""Pod -> VPA matching and recommender selection."""

from __future__ import annotations

from typing import Any

import pytest

from tailor.api import LabelSelector, OwnerReference, VerticalPodAutoscaler
from tailor.matching import (
    ControllerRef,
    OwnerReferenceError,
    PodRef,
    VpaCandidate,
    controller_reference,
    controlling_vpa,
    is_served_by,
    matching_vpas,
    top_most_controller,
)

WEB = ControllerRef(kind="Deployment", name="web", api_version="apps/v1")
POD = PodRef(namespace="shop", labels={"app": "web"}, controller=WEB, name="web-7d9f-abcde")


def vpa(
    name: str,
    created: str | None = "2024-05-01T10:00:00Z",
    namespace: str = "shop",
    kind: str = "Deployment",
    target: str = "web",
    recommenders: list[str] | None = None,
) -> VerticalPodAutoscaler:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if created is not None:
        metadata["creationTimestamp"] = created
    spec: dict[str, Any] = {"targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target}}
    if recommenders is not None:
        spec["recommenders"] = [{"name": r} for r in recommenders]
    return VerticalPodAutoscaler.from_api({"metadata": metadata, "spec": spec})


def test_the_oldest_matching_vpa_wins() -> None:
    young = vpa("a-young", created="2024-05-02T00:00:00Z")
    old = vpa("z-old", created="2024-05-01T00:00:00Z")
    assert controlling_vpa(POD, [young, old]) is old
    assert [v.name for v in matching_vpas(POD, [young, old])] == ["z-old", "a-young"]


def test_equal_timestamps_fall_back_to_name() -> None:
    b, a = vpa("b"), vpa("a")
    assert controlling_vpa(POD, [b, a]) is a


def test_unset_creation_time_counts_as_oldest_like_upstream() -> None:
    unset = vpa("unset", created=None)
    assert controlling_vpa(POD, [vpa("set"), unset]) is unset


def test_namespace_kind_and_name_must_all_match() -> None:
    others = [
        vpa("elsewhere", namespace="other"),
        vpa("statefulset", kind="StatefulSet"),
        vpa("api", target="api"),
    ]
    assert controlling_vpa(POD, others) is None
    assert controlling_vpa(POD, [*others, vpa("right")]) is not None


def test_target_api_version_is_not_compared() -> None:
    pod = PodRef(
        namespace="shop", controller=ControllerRef("Deployment", "web", "extensions/v1beta1")
    )
    assert controlling_vpa(pod, [vpa("web")]) is not None


def test_a_pod_without_controller_has_no_vpa() -> None:
    assert controlling_vpa(PodRef(namespace="shop", labels={"app": "web"}), [vpa("web")]) is None


def test_known_selector_must_match_the_pod_labels() -> None:
    target = vpa("web")
    matching = VpaCandidate(target, LabelSelector(match_labels={"app": "web"}))
    other = VpaCandidate(target, LabelSelector(match_labels={"app": "api"}))
    assert controlling_vpa(POD, [matching]) is target
    assert controlling_vpa(POD, [other]) is None
    assert controlling_vpa(POD, [VpaCandidate(target, None)]) is target  # unknown: not checked


def test_a_vpa_for_another_recommender_still_claims_the_pod() -> None:
    theirs = vpa("theirs", created="2024-01-01T00:00:00Z", recommenders=["upstream"])
    ours = vpa("ours", created="2024-06-01T00:00:00Z", recommenders=["tailor"])
    owner = controlling_vpa(POD, [ours, theirs])
    assert owner is theirs
    assert not is_served_by(owner, "tailor", is_default=False)  # so we leave this pod alone


@pytest.mark.parametrize(
    ("named", "recommender", "is_default", "served"),
    [
        ([], "default", False, True),  # upstream's default serves VPAs naming none
        ([], "tailor", False, False),  # a named alternative does not
        ([], "tailor", True, True),  # unless it runs as the default
        (["tailor"], "tailor", False, True),
        (["tailor"], "default", False, False),
        (["upstream"], "tailor", True, False),  # naming another excludes even the default
        (["default"], "tailor", True, True),  # replacing the default covers "default" too
        (["default"], "tailor", False, False),
    ],
)
def test_is_served_by(named: list[str], recommender: str, is_default: bool, served: bool) -> None:
    assert is_served_by(vpa("web", recommenders=named or None), recommender, is_default) is served


def test_controller_reference_takes_the_controller_owner() -> None:
    owners = [
        OwnerReference(api_version="v1", kind="Node", name="n1", uid="1"),
        OwnerReference(
            api_version="apps/v1", kind="ReplicaSet", name="web-7d9f", uid="2", controller=True
        ),
    ]
    assert controller_reference(owners) == ControllerRef("ReplicaSet", "web-7d9f", "apps/v1")
    assert controller_reference(owners[:1]) is None
    assert controller_reference(None) is None


def test_two_controller_owners_are_refused() -> None:
    # The first used to win, so list order decided which VPA owned the pod.
    owners = [
        OwnerReference(api_version="apps/v1", kind="ReplicaSet", name=n, uid=n, controller=True)
        for n in ("a", "b")
    ]
    with pytest.raises(OwnerReferenceError, match="ReplicaSet/a, ReplicaSet/b"):
        controller_reference(owners)


def test_top_most_controller_walks_up_and_stops_on_cycles() -> None:
    replica_set = ControllerRef("ReplicaSet", "web-7d9f")
    parents = {replica_set: WEB}
    assert top_most_controller(replica_set, parents.get) == WEB
    job = ControllerRef("Job", "nightly-1")
    assert top_most_controller(job, lambda ref: None) == job
    a, b = ControllerRef("A", "a"), ControllerRef("B", "b")
    assert top_most_controller(a, {a: b, b: a}.get) == b


def test_a_pod_ref_reads_a_pods_json_including_one_being_created() -> None:
    owner = ControllerRef("Deployment", "web")
    created = {"metadata": {"generateName": "web-5d8f-", "namespace": "shop", "labels": None}}
    ref = PodRef.of_pod(created, owner)
    assert (ref.namespace, ref.name, dict(ref.labels), ref.controller) == (
        "shop", "web-5d8f-", {}, owner,
    )  # fmt: skip
    running = {"metadata": {"name": "web-5d8f-x", "namespace": "shop", "labels": {"app": "w"}}}
    assert PodRef.of_pod(running, None).labels == {"app": "w"}
