"""docs/reference/rbac.md is the rights list of tests/deploy/rights.py, rendered: it cannot
drift from what test_rbac_cluster.py checks on the real API server."""

from __future__ import annotations

from tests.deploy.manifests import ROOT
from tests.deploy.rights import markdown


def test_the_rbac_reference_page_is_the_checked_rights_list() -> None:
    page = ROOT / "docs" / "reference" / "rbac.md"
    assert page.read_text() == markdown(), "run: python -m tests.deploy.rights > " + str(page)
