"""Plain-JSON calls to the API server through the official client's transport.

The kubernetes client (37+) maps every object to a pydantic model; the
simulator and the tests mostly want the API's own JSON (status fields,
conditions, error causes) as dicts. This goes through the same ApiClient
(TLS, client certificate) and raises the client's ApiException on errors.
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes.client
from kubernetes.client.exceptions import ApiException

Json = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class RawApi:
    """`request(method, path, body)` -> decoded JSON, e.g. `get('/api/v1/nodes')`."""

    def __init__(self, api_client: kubernetes.client.ApiClient) -> None:
        self.api_client = api_client

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, str] | None = None,
        content_type: str | None = None,
    ) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        serialized = self.api_client.param_serialize(
            method=method,
            resource_path=path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api_client.call_api(*serialized)
        data = response.read() or b""
        if not 200 <= response.status <= 299:
            raise ApiException.from_response(
                http_resp=response, body=data.decode(errors="replace"), data=None
            )
        return json.loads(data) if data else None

    def get(self, path: str, **query: str) -> Any:
        return self.request("GET", path, query=query or None)

    def create(self, path: str, body: Json) -> Any:
        return self.request("POST", path, body)

    def replace(self, path: str, body: Json) -> Any:
        return self.request("PUT", path, body)

    def patch(self, path: str, body: Any, content_type: str = STRATEGIC_MERGE_PATCH) -> Any:
        return self.request("PATCH", path, body, content_type=content_type)

    def delete(self, path: str, body: Json | None = None) -> Any:
        return self.request("DELETE", path, body)


def pod_path(namespace: str, name: str, subresource: str = "") -> str:
    """/api/v1/namespaces/{namespace}/pods/{name}[/{subresource}]"""
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    return f"{path}/{subresource}" if subresource else path


def error_body(error: ApiException) -> Json:
    """The Status object of a failed call (reason, message, details.causes)."""
    try:
        return dict(json.loads(error.body or "{}"))
    except ValueError:
        return {"message": error.body}
