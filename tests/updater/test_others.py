"""Resizes another actor made, read from managedFields: awaited, not overwritten."""

from __future__ import annotations

from typing import Any

from updater.others import others_resize

APP = 'k:{"name":"app"}'


def entry(manager: str, *resources: str, subresource: str = "resize") -> dict[str, Any]:
    fields: dict[str, Any] = {
        "f:spec": {
            "f:containers": {
                APP: {"f:resources": {"f:requests": {f"f:{r}": {} for r in resources}}}
            }
        }
    }
    return {"manager": manager, "operation": "Update", "subresource": subresource,
            "fieldsV1": fields}  # fmt: skip


def pod(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"managedFields": list(entries)}}


def test_a_resize_through_the_subresource_by_another_manager_is_theirs() -> None:
    assert others_resize(pod(entry("kubectl-patch", "cpu")), "kube-tailor") == ("kubectl-patch",)


def test_the_creators_and_our_own_sizes_are_not_another_actors() -> None:
    created = entry("kube-controller-manager", "cpu", "memory", subresource="")
    assert others_resize(pod(created), "kube-tailor") == ()
    assert others_resize(pod(created, entry("kube-tailor", "cpu", "memory")), "kube-tailor") == ()


def test_a_field_we_still_own_beside_theirs_is_not_theirs_alone() -> None:
    # they set memory after we set cpu and memory: memory moved to them
    both = pod(entry("kube-tailor", "cpu"), entry("kubectl-patch", "memory"))
    assert others_resize(both, "kube-tailor") == ("kubectl-patch",)
    shared = pod(entry("kube-tailor", "cpu", "memory"), entry("script", "memory"))
    assert others_resize(shared, "kube-tailor") == ()  # the same value: ownership shared
