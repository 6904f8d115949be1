"""`./dev audit` (infra/audit.py): the asset's SBOM offline, and reading pip-audit's report honestly.

Real: cyclonedx-py over a throwaway environment that sees only a small asset directory laid out as
pip's `--target` writes it. Observed: the SBOM's components. pip-audit itself needs the network
(its vulnerability service), so its report is given here as pip-audit writes it.
"""

from __future__ import annotations

import json
from pathlib import Path

from infra.audit import audit_outcome, write_sbom


def _installed(asset: Path, name: str, version: str) -> None:
    info = asset / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (asset / name.replace("-", "_")).mkdir()
    (asset / name.replace("-", "_") / "__init__.py").write_text("")


def test_the_sbom_lists_the_assets_distributions_and_nothing_of_the_machine(tmp_path: Path) -> None:
    asset = tmp_path / "asset"
    _installed(asset, "kubernetes", "36.0.3")
    _installed(asset, "tiny-dependency", "1.2.3")
    output = tmp_path / "reports" / "asset.cdx.json"

    write_sbom(asset, output)

    sbom = json.loads(output.read_text())
    assert sbom["bomFormat"] == "CycloneDX"
    assert sbom["metadata"]["component"]["name"] == "nodewright"
    assert sorted((c["name"], c["version"]) for c in sbom["components"]) == [
        ("kubernetes", "36.0.3"),
        ("tiny-dependency", "1.2.3"),
    ]


def test_a_report_where_every_distribution_was_skipped_is_not_an_audit() -> None:
    # What pip-audit writes when pypi.org's JSON API cannot be reached: it also prints
    # "No known vulnerabilities found", which must not be read as a clean result.
    report = {
        "dependencies": [
            {"name": "kubernetes", "skip_reason": "Dependency not found on PyPI and could not be audited"},
            {"name": "pyyaml", "skip_reason": "Dependency not found on PyPI and could not be audited"},
        ],
        "fixes": [],
    }
    outcome = audit_outcome(report)
    assert not outcome.reached
    assert outcome.audited == 0
    assert outcome.vulnerable == {}


def test_known_vulnerabilities_are_named_with_their_ids() -> None:
    report = {
        "dependencies": [
            {"name": "urllib3", "version": "2.0.0", "vulns": [{"id": "GHSA-xxxx", "fix_versions": ["2.0.7"]}]},
            {"name": "pyyaml", "version": "6.0.4", "vulns": []},
            {"name": "local-thing", "skip_reason": "not on PyPI"},
        ]
    }
    outcome = audit_outcome(report)
    assert outcome.reached
    assert outcome.audited == 2
    assert outcome.vulnerable == {"urllib3 2.0.0": ["GHSA-xxxx"]}
    assert set(outcome.skipped) == {"local-thing"}
