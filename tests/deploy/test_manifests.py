"""Keep deploy/ honest: manifests parse, every variable they set is one Fleet reads, every image is
pinned, every port and URL points at something that listens there.

The names Fleet reads are derived from the code, not listed here: the string literals that
``Settings.from_env`` passes to its readers (parsed with ``ast``), the event store's ``NATS_*``
keys (also read with the application's ``FLEET_`` prefix), the Ray settings Fleet applies
(``fleet.embedded.ray_local.LOCAL_ONLY_ENV``) and what the CLI reads (``CLIENT_ENV``). A manifest
that sets a variable nobody reads fails here.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "compose.yaml"
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]+$")
FLEET_CONFIG, FLEET_SECRETS = "fleet-config", "fleet-secrets"


# ------------------------------------------------------------------------------ what Fleet reads


def _settings_names() -> set[str]:
    tree = ast.parse((ROOT / "fleet" / "config.py").read_text())
    from_env = next(
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "from_env"
    )
    return {
        a.value
        for call in ast.walk(from_env)
        if isinstance(call, ast.Call)
        for a in call.args
        if isinstance(a, ast.Constant) and isinstance(a.value, str) and ENV_NAME.match(a.value)
    }


def _eventstore_names() -> set[str]:
    tree = ast.parse((ROOT / "eventstore" / "jetstream.py").read_text())
    keys = {
        n.value.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str)
        and n.value.value.startswith("NATS_")
        and ENV_NAME.match(n.value.value)
    }
    # eventsourcing reads each key with the application's name first (FLEET_NATS_URL, …).
    return keys | {f"FLEET_{k}" for k in keys} | {"PERSISTENCE_MODULE"}


def fleet_reads() -> set[str]:
    from fleet.cli._common import CLIENT_ENV
    from fleet.embedded.ray_local import LOCAL_ONLY_ENV

    return _settings_names() | _eventstore_names() | set(LOCAL_ONLY_ENV) | set(CLIENT_ENV)


def test_the_derived_set_is_plausible() -> None:
    names = fleet_reads()
    seed = {"NATS_URL", "NEO4J_URI", "VLLM_URL", "VLLM_MODEL", "RAY_ADDRESS"}
    assert seed | {"DELIBERATION_TIMEOUT", "FLEET_STREAM_REPLICAS", "FLEET_GRPC_PORT"} <= names
    assert "FLEET_NATS_STREAM" in names and "FLEET_API_TOKEN" in names
    assert "NOT_A_FLEET_SETTING" not in names


# ------------------------------------------------------------------------------ manifests


def _k8s_docs() -> list[dict[str, Any]]:
    docs = []
    for f in sorted(K8S.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(f.read_text()) if d]
    return docs


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def _pod_spec(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind = doc.get("kind")
    if kind in ("Deployment", "StatefulSet"):
        yield doc["spec"]["template"]["spec"]
    elif kind == "RayCluster":
        yield doc["spec"]["headGroupSpec"]["template"]["spec"]
        for g in doc["spec"].get("workerGroupSpecs", []):
            yield g["template"]["spec"]


def _containers() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for doc in _k8s_docs():
        for spec in _pod_spec(doc):
            for c in spec.get("containers", []):
                yield doc, c


def _fleet_image() -> str:
    from fleet import __version__ as version  # the one version source

    return f"fleet:{version}"


def _is_fleet(image: str) -> bool:
    return image.split(":")[0].rsplit("/", 1)[-1] == "fleet"


@pytest.mark.parametrize("path", sorted(DEPLOY.rglob("*.yaml")), ids=lambda p: p.name)
def test_every_manifest_parses(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert docs
    if path.parent == K8S and path.name != "kustomization.yaml":
        for d in docs:
            assert {"apiVersion", "kind", "metadata"} <= set(d), path


def test_kustomization_lists_every_manifest() -> None:
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_every_variable_set_for_fleet_is_one_fleet_reads() -> None:
    reads = fleet_reads()
    set_here: dict[str, str] = {}
    for doc in _k8s_docs():
        if doc["kind"] in ("ConfigMap", "Secret") and doc["metadata"]["name"] in (
            FLEET_CONFIG,
            FLEET_SECRETS,
        ):
            for k in {**doc.get("data", {}), **doc.get("stringData", {})}:
                set_here[k] = f"{doc['kind']} {doc['metadata']['name']}"
    for doc, c in _containers():
        if _is_fleet(c["image"]):
            for e in c.get("env", []):
                set_here[e["name"]] = f"{doc['metadata']['name']}/{c['name']}"
    for name, svc in _compose()["services"].items():
        if _is_fleet(svc.get("image", "")):
            for k in svc.get("environment") or {}:
                set_here[k] = f"compose {name}"
    unread = {k: where for k, where in set_here.items() if k not in reads}
    assert not unread, f"set but never read by Fleet: {unread}"
    assert set_here, "nothing checked"


def test_fleet_containers_take_the_one_configmap() -> None:
    for doc, c in _containers():
        if _is_fleet(c["image"]):
            refs = [e.get("configMapRef", {}).get("name") for e in c.get("envFrom", [])]
            assert refs == [FLEET_CONFIG], f"{doc['metadata']['name']}/{c['name']}"


def test_images_are_pinned_and_fleet_is_one_image() -> None:
    images = [c["image"] for _, c in _containers()]
    images += [s["image"] for s in _compose()["services"].values() if "image" in s]
    for image in images:
        name, _, tag = image.rpartition(":")
        assert name and tag and tag != "latest", f"{image}: pin a tag"
    assert {i for i in images if _is_fleet(i)} == {_fleet_image()}


def test_the_ray_cluster_runs_fleets_image() -> None:
    """Ray workers import agent_runtime, the NATS client and the rest of Fleet: a stock Ray image
    has none of them (the seed's system lost weeks to that), so the head and every worker group
    run the image built from deploy/Dockerfile, in Kubernetes and in compose alike."""
    clusters = [d for d in _k8s_docs() if d["kind"] == "RayCluster"]
    assert clusters, "no KubeRay RayCluster"
    for rc in clusters:
        groups = rc["spec"].get("workerGroupSpecs") or []
        assert groups, f"RayCluster {rc['metadata']['name']} has no worker group"
        pods = [("head", rc["spec"]["headGroupSpec"])] + [(g["groupName"], g) for g in groups]
        for group, spec in pods:
            containers = spec["template"]["spec"]["containers"]
            assert containers, f"{rc['metadata']['name']} {group}: no container"
            for c in containers:
                where = f"{rc['metadata']['name']} {group}/{c['name']}"
                assert c["image"] == _fleet_image(), f"{where} runs {c['image']}"
    assert _compose()["services"]["ray-head"]["image"] == _fleet_image()


def test_production_settings() -> None:
    cm = next(d for d in _k8s_docs() if d["metadata"]["name"] == FLEET_CONFIG)["data"]
    assert cm["FLEET_STREAM_REPLICAS"] == "3"
    nats = next(
        d for d in _k8s_docs() if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "nats"
    )
    assert nats["spec"]["replicas"] >= 3 and nats["spec"]["volumeClaimTemplates"]
    api = next(
        d for d in _k8s_docs() if d["metadata"]["name"] == "fleet-api" and d["kind"] == "Deployment"
    )
    assert api["spec"]["replicas"] == 2
    fleet = api["spec"]["template"]["spec"]["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert fleet[probe]["grpc"]["port"] == int(cm["FLEET_GRPC_PORT"]), probe
    vllm = next(c for _, c in _containers() if c["name"] == "vllm")
    assert cm["VLLM_MODEL"] in vllm["args"]
    assert cm["VLLM_MODEL"] == "Qwen/Qwen3-0.6B"


def _service_ports() -> dict[str, set[int]]:
    ports: dict[str, set[int]] = {}
    for d in _k8s_docs():
        if d["kind"] == "Service":
            ports[d["metadata"]["name"]] = {p["port"] for p in d["spec"]["ports"]}
        elif d["kind"] == "RayCluster":  # KubeRay's head Service, named by the operator
            head = d["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
            ports[f"{d['metadata']['name']}-head-svc"] = {
                p["containerPort"] for p in head.get("ports", [])
            }
    return ports


def _urls(env: dict[str, str]) -> Iterator[tuple[str, str, int]]:
    for k, v in env.items():
        if isinstance(v, str) and "://" in v:
            u = urlsplit(v)
            assert u.hostname and u.port, f"{k}={v}: name host and port"
            yield k, u.hostname, u.port


def test_every_configured_url_reaches_a_service_port() -> None:
    cm = next(d for d in _k8s_docs() if d["metadata"]["name"] == FLEET_CONFIG)["data"]
    services = _service_ports()
    for key, host, port in _urls(cm):
        assert host in services, f"{key}: no Service {host}"
        assert port in services[host], f"{key}: {host} has no port {port}"


def test_service_and_probe_ports_exist_on_their_pods() -> None:
    docs = _k8s_docs()
    pods = [(d, spec) for d in docs for spec in _pod_spec(d)]
    for svc in (d for d in docs if d["kind"] == "Service"):
        selector = svc["spec"]["selector"]
        matching = [
            spec
            for d, spec in pods
            if d["kind"] != "RayCluster"
            and selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert matching, f"Service {svc['metadata']['name']} selects no pod"
        declared = {
            key
            for spec in matching
            for c in spec["containers"]
            for p in c.get("ports", [])
            for key in (p.get("name"), p["containerPort"])
        }
        for p in svc["spec"]["ports"]:
            assert p.get("targetPort", p["port"]) in declared, (svc["metadata"]["name"], p)
    for doc, c in _containers():
        declared = {k for p in c.get("ports", []) for k in (p.get("name"), p["containerPort"])}
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            for how in ("grpc", "httpGet", "tcpSocket"):
                port = c.get(probe, {}).get(how, {}).get("port")
                if port is not None:
                    assert port in declared, f"{doc['metadata']['name']}/{c['name']} {probe}"


def test_compose_urls_name_its_services_and_their_ports() -> None:
    services = _compose()["services"]

    def listens(svc: dict[str, Any]) -> set[int]:
        out = {int(str(p).split(":")[-1].split("/")[0]) for p in svc.get("ports", [])}
        return out | {int(str(p)) for p in svc.get("expose", [])}

    checked = 0
    for name, svc in services.items():
        for key, host, port in _urls(svc.get("environment") or {}):
            assert host in services, f"compose {name}: {key} names no service {host}"
            assert port in listens(services[host]), f"compose {name}: {key}: {host}:{port}"
            checked += 1
        for dep in svc.get("depends_on") or {}:
            assert dep in services, f"compose {name} depends on unknown {dep}"
    assert checked >= 5


def test_compose_runs_the_same_services_as_kubernetes() -> None:
    names = set(_compose()["services"])
    assert {"nats", "neo4j", "valkey", "vllm", "ray-head", "fleet-api", "fleet-worker"} <= names


# ------------------------------------------------------------------------------ schemas

KUBERNETES = "1.33.0"
"""The oldest Kubernetes the manifests are for: the agent pods' sandbox needs user namespaces
(``hostUsers: false``) and ``procMount: Unmasked``, both on by default from 1.33."""


def _validated(doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


@pytest.mark.parametrize(
    "doc",
    [d for d in _k8s_docs() if d["kind"] not in ("RayCluster", "Kustomization")],
    ids=lambda d: f"{d['kind']}/{d['metadata'].get('name', '')}",
)
def test_every_resource_validates_against_the_kubernetes_schema(doc: dict[str, Any]) -> None:
    """The upstream OpenAPI schemas of each kind (shipped by ``kubernetes-validate``, read
    offline), strict: a misspelt field is an error, not something the API server drops.
    kustomization.yaml is kustomize's input, not a resource."""
    _validated(doc)


def test_the_ray_clusters_pods_validate_as_pod_templates() -> None:
    """RayCluster is KubeRay's CRD, whose schema no Kubernetes release ships: its own fields are
    checked by the tests above; the pod templates it holds are core PodTemplateSpecs, validated
    as such."""
    checked = 0
    for rc in (d for d in _k8s_docs() if d["kind"] == "RayCluster"):
        groups = [rc["spec"]["headGroupSpec"], *rc["spec"].get("workerGroupSpecs", [])]
        for g in groups:
            name = f"{rc['metadata']['name']}-{g.get('groupName', 'head')}"
            wrapped = {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": name},
                "template": g["template"],
            }
            _validated(wrapped)
            checked += 1
    assert checked >= 2


def test_a_misspelt_field_fails_the_schema_check() -> None:
    doc = next(
        d for d in _k8s_docs() if d["metadata"]["name"] == "fleet-web" and d["kind"] == "Deployment"
    )
    bad = copy.deepcopy(doc)
    bad["spec"]["template"]["spec"]["containers"][0]["readynessProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError, match="readynessProbe"):
        _validated(bad)


# ------------------------------------------------------------------------------ agents' sandbox


def _agent_pods() -> Iterator[tuple[str, dict[str, Any]]]:
    """The pods whose processes run the agents' checks: the RayCluster's (head included: the
    actors ask for no CPU, so they may land there) and the ``fleet worker`` Deployments."""
    for d in _k8s_docs():
        if d["kind"] == "RayCluster":
            for spec in _pod_spec(d):
                yield d["metadata"]["name"], spec
        elif d["kind"] == "Deployment":
            spec = d["spec"]["template"]["spec"]
            if any(c.get("args", [])[:2] == ["fleet", "worker"] for c in spec["containers"]):
                yield d["metadata"]["name"], spec


def test_the_pods_that_run_checks_can_start_the_sandbox() -> None:
    """bwrap as uid 10001 needs a user namespace of its own, no seccomp or AppArmor filter that
    refuses namespaces and mounts, and an unmasked /proc (docs/operations.md)."""
    pods = list(_agent_pods())
    assert len(pods) >= 6, [n for n, _ in pods]
    for name, spec in pods:
        ctx = spec.get("securityContext", {})
        assert spec.get("hostUsers") is False, name
        assert ctx.get("runAsNonRoot") is True and ctx.get("runAsUser") == 10001, name
        assert ctx.get("seccompProfile", {}).get("type") == "Unconfined", name
        assert ctx.get("appArmorProfile", {}).get("type") == "Unconfined", name
        for c in spec["containers"]:
            cc = c.get("securityContext", {})
            assert cc.get("procMount") == "Unmasked", (name, c["name"])
            assert cc.get("allowPrivilegeEscalation") is False, (name, c["name"])
            assert cc.get("capabilities", {}).get("drop") == ["ALL"], (name, c["name"])


def test_the_nats_workers_are_probed_on_what_they_serve() -> None:
    workers = [
        (d, c)
        for d, c in _containers()
        if d["kind"] == "Deployment" and c.get("args", [])[:2] == ["fleet", "worker"]
    ]
    assert len(workers) == 5
    for d, c in workers:
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert c[probe]["httpGet"] == {"path": "/metrics", "port": "metrics"}, (
                d["metadata"]["name"],
                probe,
            )


def test_the_web_console_listens_on_the_pods_address() -> None:
    cm = next(d for d in _k8s_docs() if d["metadata"]["name"] == FLEET_CONFIG)["data"]
    assert cm["FLEET_WEB_HOST"] == "0.0.0.0"
    web = next(
        d for d in _k8s_docs() if d["kind"] == "Deployment" and d["metadata"]["name"] == "fleet-web"
    )
    [c] = web["spec"]["template"]["spec"]["containers"]
    assert c["args"] == ["fleet", "up", "--components", "web"]
    assert {"name": "web", "containerPort": int(cm["FLEET_WEB_PORT"])} in c["ports"]
    svc = next(
        d for d in _k8s_docs() if d["kind"] == "Service" and d["metadata"]["name"] == "fleet-web"
    )
    assert {"name": "web", "port": 8470, "targetPort": "web"} in svc["spec"]["ports"]
