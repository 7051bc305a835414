"""The shipped deploy/ manifests as tests read them: documents, Deployments, commands."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.cluster.rawapi import Json

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPONENTS = ("recommender", "updater", "admission")


def documents(relative: str) -> list[Json]:
    """Every object of deploy/`relative`."""
    return [d for d in yaml.safe_load_all((DEPLOY / relative).read_text()) if d]


def shipped(component: str, kind: str = "Deployment") -> Json:
    """The one object of `kind` in deploy/`component`/deployment.yaml."""
    [found] = [d for d in documents(f"{component}/deployment.yaml") if d["kind"] == kind]
    return found


def container(component: str) -> Json:
    [only] = shipped(component)["spec"]["template"]["spec"]["containers"]
    return only


def command(component: str) -> list[str]:
    """The shipped container's `tailor` arguments (the command without `tailor`)."""
    program, *args = container(component)["command"]
    assert program == "tailor"
    return list(args)


def option(args: list[str], name: str) -> str:
    """The value of `--name=value` in `args`."""
    [value] = [a.split("=", 1)[1] for a in args if a.startswith(f"{name}=")]
    return value


def replace_option(args: list[str], name: str, value: str) -> list[str]:
    """`args` with `--name=...` set to `value` (it must be there)."""
    option(args, name)
    return [f"{name}={value}" if a.startswith(f"{name}=") else a for a in args]
