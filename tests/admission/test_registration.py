"""The registration the webhook applies is the one deploy/ ships, and bad flags are exit 2."""

from __future__ import annotations

import base64
import string
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from admission.registration import Endpoint, registration
from tailor.cli.main import app
from tests.admission.https import serving_pair
from tests.cli_text import plain

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "admission"


def test_the_shipped_registration_is_what_the_webhook_would_register_for_its_service() -> None:
    bundle = base64.b64encode(b"CA").decode()
    text = string.Template((DEPLOY / "webhook.yaml").read_text()).substitute(CA_BUNDLE=bundle)
    shipped = yaml.safe_load(text)
    built = registration(Endpoint(service=("kube-tailor", "tailor-admission")), b"CA")
    assert shipped == built


def test_a_url_endpoint_is_registered_instead_of_the_service_and_its_home_exempt() -> None:
    built = registration(Endpoint(url="https://10.0.0.1:8443/mutate", home="ops"), b"CA", 9)
    [hook] = built["webhooks"]
    assert hook["clientConfig"] == {"url": "https://10.0.0.1:8443/mutate", "caBundle": "Q0E="}
    assert hook["timeoutSeconds"] == 9
    [exempt] = hook["namespaceSelector"]["matchExpressions"]
    assert exempt["values"] == ["ops", "kube-system"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], "--register-webhook needs --ca-file"),
        (["--ca-file", "{key}"], "holds no PEM CA certificate"),
        (["--ca-file", "{ca}", "--webhook-url", "http://x/mutate"], "https:// URL"),
        (["--ca-file", "{ca}", "--webhook-timeout", "31s"], "whole seconds from 1s to 30s"),
        (["--ca-file", "{ca}", "--webhook-service", "tailor-admission"], "NAMESPACE/NAME"),
    ],
)
def test_a_registration_that_could_not_work_is_refused_before_serving(
    flags: list[str], message: str, tmp_path: Path
) -> None:
    ca, pair = serving_pair(tmp_path)
    files = {"{ca}": str(ca.folder / "ca.crt"), "{key}": str(pair.key_file)}
    args = [
        "admission", "--tls-cert", str(pair.cert_file), "--tls-key", str(pair.key_file),
        "--kubeconfig", str(tmp_path / "absent"), "--metrics-port", "0", "--register-webhook",
        *(files.get(flag, flag) for flag in flags),
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in plain(result.output)
