"""Loaders that turn the real public traces into the canonical usage format.

The traces live outside the repository (../shared/data, or $KUBE_TAILOR_DATA)
and are read where they are. Each dataset family has its own module (bitbrains,
azure, google2011; `common` holds what they share), which documents its unit
conversions and any repair of the raw data; repairs are counted in
`frame.attrs["cleaning"]` and logged, never done silently. Every result passes
`validate_usage`. This module says which datasets exist and where they live.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from recommender.data.files import PathLike
from recommender.data.traces.azure import load_azure
from recommender.data.traces.bitbrains import load_bitbrains
from recommender.data.traces.google2011 import load_google2011

DATASETS = ("bitbrains", "azure", "google2011")
DATA_ENV = "KUBE_TAILOR_DATA"
REPO_ROOT = Path(__file__).resolve().parents[3]

CITATIONS = {
    "bitbrains": "Bitbrains GWA-T-12 Rnd trace, Grid Workloads Archive, TU Delft; Shen, van Beek, "
    'Iosup, "Statistical Characterization of Business-Critical Workloads Hosted in Cloud '
    'Datacenters", CCGrid 2015.',
    "azure": 'Azure Public Dataset V1 (Cortez et al., "Resource Central", SOSP 2017; CC-BY 4.0), '
    "100 VMs as packaged in the R package DataCenterSim.",
    "google2011": "Google cluster-data 2011, job-aggregated series prepared by HiPro-IT.",
}


def default_data_root() -> Path:
    """$KUBE_TAILOR_DATA if set, else ../shared/data beside the repository."""
    configured = os.environ.get(DATA_ENV)
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"


def load_dataset(name: str, root: PathLike | None = None, **options: Any) -> pd.DataFrame:
    """Load trace `name` (one of DATASETS) from `root` (default: default_data_root())."""
    loaders: dict[str, Callable[..., pd.DataFrame]] = {
        "bitbrains": load_bitbrains,
        "azure": load_azure,
        "google2011": load_google2011,
    }
    if name not in loaders:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    folder = Path(root) if root is not None else default_data_root()
    if not folder.is_dir():
        raise FileNotFoundError(f"data folder {folder} not found; set ${DATA_ENV} to the traces")
    return loaders[name](folder, **options)
