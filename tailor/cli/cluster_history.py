"""`tailor recommend` / `schedule` with no source flag: the kube context's workloads and usage.

Lists the pods asked for, takes their requests as the current ones, finds Prometheus
(`--prometheus URL`, else a Service in the cluster reached through the API server's
proxy) and reads the history of those workloads only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer
from rich.console import Console

from recommender.data.prometheus_settings import PrometheusSettings
from tailor.cli.cluster_source import (
    RULES,
    ClusterSourceError,
    KubeAccess,
    current_from_pods,
    find_prometheus,
    kube_client,
    list_pods,
    list_services,
)
from tailor.cli.inputs import PrometheusOptions, load_with_settings, prometheus_settings
from tailor.cli.options import read_history

Kubeconfig = Annotated[
    Path | None,
    typer.Option(help="Kubeconfig of the cluster (default: in-cluster, else ~/.kube/config)."),
]
Context = Annotated[str | None, typer.Option(help="The kubeconfig context (default: current).")]
AllNamespaces = Annotated[
    bool, typer.Option("--all-namespaces", "-A", help="Every namespace of the cluster.")
]
Selector = Annotated[
    str | None, typer.Option("--selector", "-l", help="Only pods with these labels (k=v,...).")
]
NO_SOURCE = (
    "name a source: --prometheus URL, a history file with --input FILE, or the built-in "
    "fleet with --demo"
)


@dataclass(frozen=True)
class ClusterScope:
    """Which cluster, and which of its pods."""

    kubeconfig: Path | None
    context: str | None
    namespaces: tuple[str, ...]
    all_namespaces: bool
    selector: str | None


def wanted(demo: bool, input: Path | None, prometheus: str | None, scope: ClusterScope) -> bool:
    """The cluster is the source unless another is named; with --prometheus, only when a
    cluster flag says so (--prometheus alone reads Prometheus alone, as it always did)."""
    named = scope.kubeconfig, scope.context, scope.selector
    asked = any(x is not None for x in named) or scope.all_namespaces
    if demo or input is not None:
        if asked:
            raise typer.BadParameter(
                "--kubeconfig, --context, --all-namespaces and --selector read a cluster; "
                "--demo and --input read no cluster"
            )
        return False
    return prometheus is None or asked


@dataclass(frozen=True)
class SourceChoice:
    """Where a command's history comes from: the cluster (scope) or the flags' source."""

    scope: ClusterScope
    from_cluster: bool
    demo: bool
    input: Path | None
    events: Path | None


def source_choice(
    scope: ClusterScope, demo: bool, input: Path | None, events: Path | None, prometheus: str | None
) -> tuple[SourceChoice, str | None]:
    """The choice, and the Prometheus URL its --prometheus flags go with ("" when the
    cluster's Prometheus is to be found)."""
    from_cluster = wanted(demo, input, prometheus, scope)
    url = "" if from_cluster and prometheus is None else prometheus
    return SourceChoice(scope, from_cluster, demo, input, events), url


def read_chosen(
    choice: SourceChoice, source: PrometheusOptions | None, console: Console
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """(usage, events, current requests or None: read from the history's own columns)."""
    if choice.from_cluster:
        assert source is not None
        return read_cluster(choice.scope, source, console)
    namespaces = list(choice.scope.namespaces) or None
    usage, events = read_history(
        console, choice.demo, choice.input, choice.events, source, namespaces
    )
    return usage, events, None


def cluster_scope(
    kubeconfig: Path | None,
    context: str | None,
    namespaces: list[str] | None,
    all_namespaces: bool,
    selector: str | None,
) -> ClusterScope:
    if all_namespaces and namespaces:
        raise typer.BadParameter("give --namespace or --all-namespaces, not both")
    return ClusterScope(kubeconfig, context, tuple(namespaces or ()), all_namespaces, selector)


def read_cluster(
    scope: ClusterScope, source: PrometheusOptions, console: Console
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(usage, events, current) of the scope's workloads; `source.url` empty: discover."""
    try:
        client, access = kube_client(scope.kubeconfig, scope.context)
        chosen = None if scope.all_namespaces else (scope.namespaces or (access.namespace,))
        current = current_from_pods(list_pods(client, chosen, scope.selector))
        if current.empty:
            where = "any namespace" if chosen is None else ", ".join(chosen)
            raise ClusterSourceError(f"no pods in {where}" + _matching(scope.selector))
        settings = _prometheus(client, access, source, chosen, console)
    except ClusterSourceError as error:
        raise typer.BadParameter(f"{error}; or {NO_SOURCE}", param_hint="--kubeconfig") from None
    usage, events = load_with_settings(settings, console)
    keys = ["namespace", "workload"]
    listed = pd.MultiIndex.from_frame(current[keys].drop_duplicates())
    usage = usage[pd.MultiIndex.from_frame(usage[keys]).isin(listed)].reset_index(drop=True)
    if usage.empty:
        raise typer.BadParameter(
            "Prometheus holds no usage of the pods listed (namespace and workload)",
            param_hint="--prometheus",
        )
    return usage, events, current


def _matching(selector: str | None) -> str:
    return "" if selector is None else f" matching {selector}"


def _prometheus(
    client: Any,
    access: KubeAccess,
    source: PrometheusOptions,
    namespaces: tuple[str, ...] | None,
    console: Console,
) -> PrometheusSettings:
    """Settings to read usage: the URL given, else a Service found, through the proxy."""
    scoped = replace(source, namespaces=tuple(namespaces or ()))
    if source.url:
        return prometheus_settings(scoped)
    found = find_prometheus(list_services(client))
    if found is None:
        products = ", ".join(rule.product for rule in RULES)
        raise ClusterSourceError(f"no Prometheus found in the cluster (looked for {products})")
    console.print(
        f"using {found.describe()}, through the API server's service proxy",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    settings = prometheus_settings(replace(scoped, url=access.host + found.proxy_path()))
    headers = {} if access.token is None else {"Authorization": access.token}
    return settings.model_copy(
        update={
            "ca_file": access.ca_file,
            "verify_tls": access.verify,
            "client_cert_file": access.cert_file,
            "client_key_file": access.key_file,
            "headers": {**settings.headers, **headers},
        }
    )
