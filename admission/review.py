"""AdmissionReview (admission.k8s.io/v1) in and out (pure).

A body that is not an AdmissionReview is the caller's mistake, answered 400 with
the reason (`ReviewError`); anything readable gets a response that allows the
object, since a webhook that sizes pods must never be the reason one is refused.

Parsing is orjson (faster than json, and no slower on hostile input), after a count
of the body's objects and arrays: a body of millions of tiny objects (`[{},{},...]`, a
memory bomb) costs many times its size in memory and holds the worker while it is
parsed, where a real pod of the same size is mostly strings (the figures:
docs/results/implementation-choices.md).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from tailor.api.crd import GROUP, VPA_PLURAL

REVIEW_API_VERSION = "admission.k8s.io/v1"
REVIEW_KIND = "AdmissionReview"
# Objects plus arrays a review may hold (counted as `{` and `[` bytes, strings included):
# a pod with 100 containers of 100 env vars and its last-applied annotation is ~25,000.
MAX_JSON_CONTAINERS = 100_000


class ReviewError(ValueError):
    """The body is not an AdmissionReview v1 request; the message says what is wrong."""


@dataclass(frozen=True)
class AdmissionRequest:
    """The fields of `request` the webhook acts on; `obj` is the object as sent."""

    uid: str
    operation: str
    namespace: str
    group: str
    version: str
    resource: str
    sub_resource: str = ""
    obj: object = None
    dry_run: bool = False

    def is_vpa_write(self) -> bool:
        """A VerticalPodAutoscaler being created or changed (not its status)."""
        return (
            self.operation in ("CREATE", "UPDATE")
            and (self.group, self.resource) == (GROUP, VPA_PLURAL)
            and not self.sub_resource
        )

    def is_pod_create(self) -> bool:
        """A v1 Pod being created (not a subresource such as pods/binding)."""
        return (
            self.operation == "CREATE"
            and (self.group, self.version, self.resource) == ("", "v1", "pods")
            and not self.sub_resource
        )


@dataclass(frozen=True)
class Verdict:
    """What to answer: JSON Patch operations (possibly none) and warnings for the client;
    `denied` refuses the object with that message (a VPA upstream's rules refuse)."""

    operations: Sequence[Mapping[str, Any]] = ()
    warnings: Sequence[str] = ()
    reason: str = ""
    denied: str = ""
    sized_by: Any = None  # the VerticalPodAutoscaler whose recommendation patched the pod
    # False: given for a failure (cluster unreadable, an error of ours), not for the pod:
    # never reused for an identical pod (`admission.verdicts`)
    lasting: bool = True


def _text(value: object, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReviewError(f"{where} must be a string")
    return value


def parse_review(body: bytes, max_containers: int = MAX_JSON_CONTAINERS) -> AdmissionRequest:
    """The request of an AdmissionReview v1 body; ReviewError for anything else, including
    a body of more than `max_containers` JSON objects and arrays (refused before parsing)."""
    containers = body.count(b"{") + body.count(b"[")
    if containers > max_containers:
        raise ReviewError(
            f"body has {containers} JSON objects and arrays, more than a pod needs "
            f"({max_containers})"
        )
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:  # bad UTF-8 or JSON, nested past 1024
        raise ReviewError(f"body is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise ReviewError("body is not an AdmissionReview: expected a JSON object")
    kind, version = document.get("kind"), document.get("apiVersion")
    if kind != REVIEW_KIND:
        raise ReviewError(f"body is not an AdmissionReview: kind is {kind!r}")
    if version != REVIEW_API_VERSION:
        raise ReviewError(f"AdmissionReview apiVersion {version!r}: only {REVIEW_API_VERSION}")
    request = document.get("request")
    if not isinstance(request, dict):
        raise ReviewError("AdmissionReview has no request object")
    uid = _text(request.get("uid"), "request.uid")
    if not uid:
        raise ReviewError("AdmissionReview request has no uid")
    resource = request.get("resource")
    if not isinstance(resource, dict):
        raise ReviewError("AdmissionReview request has no resource object")
    return AdmissionRequest(
        uid=uid,
        operation=_text(request.get("operation"), "request.operation"),
        namespace=_text(request.get("namespace"), "request.namespace"),
        group=_text(resource.get("group"), "request.resource.group"),
        version=_text(resource.get("version"), "request.resource.version"),
        resource=_text(resource.get("resource"), "request.resource.resource"),
        sub_resource=_text(request.get("subResource"), "request.subResource"),
        obj=request.get("object"),
        dry_run=request.get("dryRun") is True,
    )


def review_response(request: AdmissionRequest, verdict: Verdict) -> dict[str, Any]:
    """The AdmissionReview answer: allowed, with the patch (base64) when there is one; or
    refused with the verdict's message (the API server shows it to the client)."""
    response: dict[str, Any] = {"uid": request.uid, "allowed": True}
    if verdict.denied:
        response["allowed"] = False
        response["status"] = {"code": 400, "reason": "BadRequest", "message": verdict.denied}
        return {"apiVersion": REVIEW_API_VERSION, "kind": REVIEW_KIND, "response": response}
    if verdict.operations:
        patch = orjson.dumps(list(verdict.operations))
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(patch).decode()
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    return {"apiVersion": REVIEW_API_VERSION, "kind": REVIEW_KIND, "response": response}
