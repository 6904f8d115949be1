"""`./dev audit`: an SBOM of the Lambda asset and a vulnerability audit of what it ships.

Role: `main()` builds the asset exactly as `cdk synth` bundles it (infra/bundling.py) into
`build/asset`, writes its CycloneDX SBOM with cyclonedx-py (`reports/audit/asset.cdx.json`),
and runs pip-audit over the same installed distributions, the exact versions the Lambdas run
(`reports/audit/pip-audit.json`). Exit status: 0 when audited with nothing found, 1 when a
vulnerability is known, 2 when the audit could not be done (no vulnerability database reachable)
or the asset could not be built; each case prints one line saying which.

Offline: building the asset needs a package index; when none answers and an asset was built
before, that one is used (and said so). The SBOM needs no network. pip-audit does: it asks the
vulnerability service about every distribution, and when the service cannot be reached it skips
each one and still prints "No known vulnerabilities found"; `audit_outcome` reads its JSON report
and calls that what it is, not audited.

The SBOM reads the asset's `*.dist-info` metadata through a throwaway virtual environment (no pip,
no packages) whose one `.pth` line adds the asset to its path, so the SBOM lists the asset's
distributions and nothing of the machine's. boto3 and botocore are not in it: the Lambda runtime
provides them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
ASSET = REPO_ROOT / "build" / "asset"
REPORTS = REPO_ROOT / "reports" / "audit"
TOOLS = Path(sys.executable).parent


@dataclass(frozen=True, slots=True)
class Outcome:
    """What pip-audit's report says: `audited` distributions checked, `skipped` ones not (name ->
    why), `vulnerable` ones (name -> vulnerability ids).
    """

    audited: int
    skipped: dict[str, str]
    vulnerable: dict[str, list[str]]

    @property
    def reached(self) -> bool:
        """False when the service answered for no distribution at all (it was not reached)."""
        return self.audited > 0 or not self.skipped


def audit_outcome(report: dict[str, Any]) -> Outcome:
    """Read pip-audit's JSON report (`-f json`)."""
    audited = 0
    skipped: dict[str, str] = {}
    vulnerable: dict[str, list[str]] = {}
    for dependency in report.get("dependencies", []):
        name = str(dependency["name"])
        if "skip_reason" in dependency:
            skipped[name] = str(dependency["skip_reason"])
            continue
        audited += 1
        ids = [str(v["id"]) for v in dependency.get("vulns", [])]
        if ids:
            vulnerable[f"{name} {dependency.get('version', '')}".strip()] = ids
    return Outcome(audited, skipped, vulnerable)


def refresh_asset(target: Path) -> str:
    """Build the asset into `target`; when no index answers, keep the one built before.

    Returns how the asset was obtained; raises RuntimeError when there is none.
    """
    from infra.bundling import build_asset  # imports the CDK: only when building

    fresh = target.with_name(target.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(parents=True)
    try:
        build_asset(REPO_ROOT, fresh, install_dependencies=True)
    except RuntimeError as error:
        shutil.rmtree(fresh, ignore_errors=True)
        if not target.is_dir():
            raise RuntimeError(f"the asset could not be built and none was built before:\n{error}") from error
        return f"could not rebuild the asset (no package index?); using the one in {target}"
    shutil.rmtree(target, ignore_errors=True)
    fresh.rename(target)
    return f"built {target}"


def write_sbom(asset: Path, output: Path) -> None:
    """Write the CycloneDX JSON SBOM of the distributions installed in `asset` (offline)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nodewright-sbom-") as scratch:
        environment = Path(scratch) / "venv"
        venv.EnvBuilder(with_pip=False).create(environment)
        (site_packages,) = environment.glob("lib/python*/site-packages")
        (site_packages / "nodewright-asset.pth").write_text(f"{asset.resolve()}\n")
        command = [str(TOOLS / "cyclonedx-py"), "environment", str(environment / "bin" / "python")]
        command += ["--pyproject", str(REPO_ROOT / "pyproject.toml"), "--output-reproducible"]
        command += ["--output-format", "JSON", "--output-file", str(output)]
        subprocess.run(command, check=True, capture_output=True, text=True)


def run_pip_audit(asset: Path, output: Path, *, service: str = "pypi") -> Outcome:
    """pip-audit over the distributions installed in `asset`; its JSON report goes to `output`."""
    command = [str(TOOLS / "pip-audit"), "--path", str(asset), "--format", "json", "--progress-spinner", "off"]
    command += ["--vulnerability-service", service, "--output", str(output)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if not output.is_file():
        # pip-audit gives up before writing a report when the service fails outright (DNS, TLS).
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Outcome(0, {"*": f"pip-audit failed: {last}"}, {})
    return audit_outcome(json.loads(output.read_text()))


def main(argv: list[str] | None = None) -> int:
    """Build the asset, write its SBOM, audit it; print what happened (see the module docstring)."""
    args = argv if argv is not None else sys.argv[1:]
    service = args[0] if args else "pypi"
    try:
        print(f"== asset: {refresh_asset(ASSET)}")
    except RuntimeError as error:
        print(f"== asset: {error}", file=sys.stderr)
        return 2
    sbom = REPORTS / "asset.cdx.json"
    write_sbom(ASSET, sbom)
    components = len(json.loads(sbom.read_text()).get("components", []))
    print(f"== SBOM: {sbom.relative_to(REPO_ROOT)} ({components} components)")
    outcome = run_pip_audit(ASSET, REPORTS / "pip-audit.json", service=service)
    if not outcome.reached:
        why = next(iter(outcome.skipped.values()))
        print(
            f"== pip-audit: NOT AUDITED: the vulnerability service ({service}) could not be reached "
            f"({len(outcome.skipped)} distributions skipped, e.g. {why!r}). Run ./dev audit where "
            "pypi.org or osv.dev answers (./dev audit osv picks the other service).",
            file=sys.stderr,
        )
        return 2
    if outcome.vulnerable:
        for name, ids in sorted(outcome.vulnerable.items()):
            print(f"== pip-audit: {name}: {', '.join(ids)}")
        return 1
    skipped = f", {len(outcome.skipped)} skipped: {', '.join(sorted(outcome.skipped))}" if outcome.skipped else ""
    print(f"== pip-audit: {outcome.audited} distributions audited, no known vulnerability{skipped}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
