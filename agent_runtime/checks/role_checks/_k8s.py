"""A minimal schema check of Kubernetes manifests: what the API server would refuse outright.

Every document with ``apiVersion`` or ``kind`` must have both, a ``metadata.name`` that is a
DNS-1123 name, and for the common kinds the fields without which the object is rejected or
does nothing (a Deployment's selector and containers with a name and an image; a Service's
ports; a CronJob's schedule …), with the right types (ports are integers in 1..65535, replicas
a non-negative integer). Workloads must select their own pods: ``spec.selector.matchLabels``
must be a subset of the pod template's labels (the API server's own validation), and a Service
must select the pods of at least one workload in the same answer, when the answer has any
(a selector that matches nothing gives a Service with no endpoints: it accepts, then refuses).

Limits: these are not the full OpenAPI schemas (unknown fields are allowed, CRDs and other
kinds get the common checks only); the point is to catch what a model gets wrong often, in
microseconds, without network access.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

_NAME = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
_PORT = {"type": "integer", "minimum": 1, "maximum": 65535}
_LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
_CONTAINER = {
    "type": "object",
    "required": ["name", "image"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "image": {"type": "string", "minLength": 1},
        "command": {"type": "array", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}},
        "ports": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["containerPort"],
                "properties": {"containerPort": _PORT},
            },
        },
        "env": {
            "type": "array",
            "items": {"type": "object", "required": ["name"]},
        },
    },
}
_POD_SPEC = {
    "type": "object",
    "required": ["containers"],
    "properties": {"containers": {"type": "array", "minItems": 1, "items": _CONTAINER}},
}
_TEMPLATE = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "metadata": {"type": "object", "properties": {"labels": _LABELS}},
        "spec": _POD_SPEC,
    },
}
_SELECTOR = {
    "type": "object",
    "required": ["matchLabels"],
    "properties": {"matchLabels": _LABELS},
}
_WORKLOAD = {
    "type": "object",
    "required": ["selector", "template"],
    "properties": {
        "replicas": {"type": "integer", "minimum": 0},
        "selector": _SELECTOR,
        "template": _TEMPLATE,
    },
}
_SPECS: Mapping[str, Mapping[str, object]] = {
    "Pod": _POD_SPEC,
    "Deployment": _WORKLOAD,
    "StatefulSet": _WORKLOAD,
    "DaemonSet": _WORKLOAD,
    "ReplicaSet": _WORKLOAD,
    "Job": {"type": "object", "required": ["template"], "properties": {"template": _TEMPLATE}},
    "CronJob": {
        "type": "object",
        "required": ["schedule", "jobTemplate"],
        "properties": {
            "schedule": {"type": "string", "pattern": r"^(@\w+|(\S+\s+){4}\S+)$"},
            "jobTemplate": {
                "type": "object",
                "required": ["spec"],
                "properties": {
                    "spec": {
                        "type": "object",
                        "required": ["template"],
                        "properties": {"template": _TEMPLATE},
                    }
                },
            },
        },
    },
    "Service": {
        "type": "object",
        "required": ["ports"],
        "properties": {
            "selector": _LABELS,
            "type": {"enum": ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"]},
            "ports": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["port"],
                    "properties": {
                        "port": _PORT,
                        "targetPort": {"anyOf": [_PORT, {"type": "string"}]},
                        "protocol": {"enum": ["TCP", "UDP", "SCTP"]},
                    },
                },
            },
        },
    },
}
_ENVELOPE_PROPERTIES: dict[str, object] = {
    "apiVersion": {"type": "string", "pattern": r"^([a-z0-9.-]+/)?v\d+((alpha|beta)\d+)?$"},
    "kind": {"type": "string", "pattern": r"^[A-Z][A-Za-z0-9]*$"},
    "metadata": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string", "pattern": _NAME}, "labels": _LABELS},
    },
    "data": {"type": "object", "additionalProperties": {"type": "string"}},
}
_ENVELOPE: dict[str, object] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata"],
    "properties": _ENVELOPE_PROPERTIES,
}
_API_GROUPS: Mapping[str, str] = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "Pod": "v1",
    "Service": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
}


def _with_spec(spec: Mapping[str, object]) -> dict[str, object]:
    properties = _ENVELOPE_PROPERTIES | {"spec": spec}
    return (
        _ENVELOPE
        | {"required": ["apiVersion", "kind", "metadata", "spec"]}
        | {"properties": properties}
    )


@cache
def _validator(kind: str) -> Draft202012Validator:
    """The schema of ``kind`` (the envelope's for kinds without one), built at first use:
    jsonschema and the validators cost ~0.1 s to load, and every ``fleet`` command imports
    the role checks for their names."""
    from jsonschema import Draft202012Validator

    spec = _SPECS.get(kind)
    return Draft202012Validator(_ENVELOPE if spec is None else _with_spec(spec))


def _where(path: Iterable[object]) -> str:
    return ".".join(str(p) for p in path) or "(document)"


def manifests(text: str) -> list[dict[str, object]]:
    """The documents of one YAML block that declare ``apiVersion`` or ``kind``.

    A block that is not YAML at all yields none: ``yamllint`` reports it.
    """
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return []
    return [d for d in docs if isinstance(d, dict) and {"apiVersion", "kind"} & d.keys()]


def validate_manifests(docs: Sequence[Mapping[str, object]]) -> list[str]:
    """The problems of ``docs`` (every manifest of one answer), each naming kind/name and field."""
    problems: list[str] = []
    for doc in docs:
        kind = doc.get("kind")
        meta = doc.get("metadata")
        label = f"{kind}/{meta.get('name', '?')}" if isinstance(meta, dict) else str(kind)
        validator = _validator(str(kind))
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            problems.append(f"{label}: {_where(err.absolute_path)}: {err.message}")
        expected = _API_GROUPS.get(str(kind))
        if expected and doc.get("apiVersion") != expected:
            problems.append(f"{label}: apiVersion {doc.get('apiVersion')!r} is not {expected!r}")
        problems += _selector_problems(label, doc)
    return problems + _service_problems(docs)


def _service_problems(docs: Sequence[Mapping[str, object]]) -> list[str]:
    pod_labels = [
        labels
        for doc in docs
        if doc.get("kind") in _WORKLOAD_KINDS
        and isinstance(labels := _at(doc, "spec", "template", "metadata", "labels"), dict)
    ]
    if not pod_labels:
        return []
    problems = []
    for doc in docs:
        selector = _at(doc, "spec", "selector") if doc.get("kind") == "Service" else None
        if not isinstance(selector, dict) or not selector:
            continue
        if not any(all(labels.get(k) == v for k, v in selector.items()) for labels in pod_labels):
            name = _at(doc, "metadata", "name") or "?"
            pairs = ", ".join(f"{k}={v}" for k, v in selector.items())
            problems.append(f"Service/{name}: selector ({pairs}) matches no pod of this answer")
    return problems


def _at(value: object, *keys: str) -> object:
    """``value[k1][k2]…`` through mappings only; None where any step is not one (a model may
    write a list or a number anywhere: the schema reports it, this must not crash on it)."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _selector_problems(label: str, doc: Mapping[str, object]) -> list[str]:
    """A workload whose selector does not match its template's labels is rejected."""
    if doc.get("kind") not in _WORKLOAD_KINDS:
        return []
    selector = _at(doc, "spec", "selector", "matchLabels")
    labels = _at(doc, "spec", "template", "metadata", "labels")
    if not isinstance(selector, dict) or not isinstance(labels, dict):
        return []
    missing = {k: v for k, v in selector.items() if labels.get(k) != v}
    if not missing:
        return []
    pairs = ", ".join(f"{k}={v}" for k, v in missing.items())
    return [f"{label}: spec.selector.matchLabels ({pairs}) do not match the template's labels"]


_WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"})
