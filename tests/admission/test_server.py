"""The HTTPS edge on a real socket with a real certificate (no cluster: a fake view)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import granian
import pytest

from admission.edge import GRANIAN, require_granian
from tests.admission.https import answer, call, serve
from tests.admission.objects import APP_TARGETS, vpa
from tests.admission.test_admit import View, new_pod, review


def test_mutate_answers_a_review_with_the_patch_and_garbage_with_400(tmp_path: Path) -> None:
    served = serve(View([vpa("Auto", APP_TARGETS)]), tmp_path)
    try:
        status, text = served.post("/mutate", review(new_pod()))
        assert status == 200
        response = answer(text)
        assert response["allowed"] is True
        patch = json.loads(base64.b64decode(response["patch"]))
        assert {"op": "add", "path": "/spec/containers/0/resources/requests/cpu", "value": "1"} in (
            patch
        )
        for body, message in (
            (b"not json at all", "body is not JSON"),
            (b'{"kind": "Pod", "apiVersion": "v1"}', "body is not an AdmissionReview"),
        ):
            status, text = served.post("/mutate", body)
            assert status == 400
            assert message in text
        status, text = served.post("/mutate", review("not a pod"))
        assert status == 200
        assert answer(text)["warnings"][0].startswith("kube-tailor admission: cannot read the pod")
        assert "patch" not in answer(text)
        assert call(served.url + "/healthz", served.ca) == (200, "ok\n")
        assert served.verdicts[0][1].reason.startswith("Pod resources updated by web")
    finally:
        served.server.stop()


def test_healthz_is_503_until_the_lists_are_loaded(tmp_path: Path) -> None:
    served = serve(View([]), tmp_path, ready=lambda: False)
    try:
        status, text = call(served.url + "/healthz", served.ca)
        assert status == 503
        assert "not loaded" in text
    finally:
        served.server.stop()


def test_another_granian_than_the_pinned_one_is_refused_by_name() -> None:
    assert granian.__version__ == GRANIAN  # what the import of admission.edge checked
    require_granian(GRANIAN)
    with pytest.raises(ImportError, match=r"needs granian 2\.8\.7 .* found 2\.9\.0"):
        require_granian("2.9.0")
