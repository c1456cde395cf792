"""The Helm chart rendered by Helm's own engine, offline, for the chart tests.

helm-python-sdk is Helm's Go SDK (v4) behind ctypes: the template engine, values-schema validation
and lint of the ``helm`` binary, from a wheel (no binary to download, no cluster). It runs in a
child process (``python -m tests.deploy.helm``, a JSON request on stdin, the answer on stdout), so
that the Go runtime, its threads and its signal handlers never enter a test process that forks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "ladder"
RELEASE = "ladder"
NAMESPACE = "trading"

Values = dict[str, Any]
Manifest = dict[str, Any]


def documented_value_sets(chart: Path = CHART) -> dict[str, Values]:
    """The chart's examples/ (what its README documents), by name."""
    return {
        path.stem: yaml.safe_load(path.read_text()) for path in sorted((chart / "examples").glob("*.yaml"))
    }


@dataclass(frozen=True)
class Rendered:
    """One value set's manifests, or Helm's refusal of it."""

    objects: tuple[Manifest, ...]
    error: str
    lint: tuple[str, ...]
    """What ``helm lint --strict`` found with these values (warnings and errors)."""

    def of_kind(self, *kinds: str) -> list[Manifest]:
        return [o for o in self.objects if o["kind"] in kinds]

    def named(self, kind: str, name: str) -> Manifest:
        found = [o for o in self.of_kind(kind) if o["metadata"]["name"] == name]
        assert len(found) == 1, f"{len(found)} {kind} named {name}"
        return found[0]

    def workloads(self) -> list[Manifest]:
        return self.of_kind("Deployment", "StatefulSet", "DaemonSet")

    def containers(self) -> Iterator[tuple[Manifest, dict[str, Any]]]:
        """Every container with the workload it runs in."""
        for workload in self.workloads():
            for container in workload["spec"]["template"]["spec"]["containers"]:
                yield workload, container


def render(value_sets: Mapping[str, Values], chart: Path = CHART) -> dict[str, Rendered]:
    """Render (and lint) every value set as ``helm install RELEASE -n NAMESPACE -f values`` would."""
    request = {"chart": str(chart), "sets": dict(value_sets)}
    child = subprocess.run(
        [sys.executable, "-m", "tests.deploy.helm"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    rendered: dict[str, Rendered] = {}
    for name, answer in json.loads(child.stdout).items():
        objects = tuple(
            document
            for file_name, text in sorted(answer.get("files", {}).items())
            if file_name.endswith(".yaml")
            for document in yaml.safe_load_all(text)
            if document
        )
        rendered[name] = Rendered(objects, answer.get("error", ""), tuple(answer["lint"]))
    return rendered


def _serve_request() -> None:
    """The child: render and lint each value set of the request with Helm's Go SDK."""
    import helm_python as helm

    request = json.load(sys.stdin)
    chart_path = request["chart"]
    answers: dict[str, dict[str, Any]] = {}
    with helm.Chart.load(chart_path) as chart:
        minimum = chart.metadata["kubeVersion"].removeprefix(">=").removesuffix("-0")
        for name, values in request["sets"].items():
            answer: dict[str, Any] = {}
            try:
                answer["files"] = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
            except helm.HelmError as exc:
                answer["error"] = str(exc)
            report = helm.lint(
                chart_path, values, strict=True, namespace=NAMESPACE, quiet=True, kube_version=f"v{minimum}"
            )
            findings = [m for m in report["messages"] if m["severity"] >= 2]  # warnings and errors
            answer["lint"] = [f"{m['path']}: {m['error']}" for m in findings] + report["errors"]
            answers[name] = answer
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    _serve_request()
