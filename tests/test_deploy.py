"""deploy/: the Helm chart and the compose file, checked offline (no cluster, no Docker engine).

The chart is rendered and linted by Helm itself (Helm's Go SDK through ``helm_python``, the
``helm-python-sdk`` wheel, which bundles it as a shared library). Every rendered manifest is
validated strictly (unknown fields refused) against the Kubernetes ``KUBE_VERSION`` schemas of
``kubernetes-validate``; the KEDA ScaledObject against the CRD schema vendored in
``deploy/schemas/`` (made strict the same way). ``deploy/compose.yaml`` is validated against the
vendored compose-spec JSON schema. ``deploy/schemas/README.md`` names each schema's source.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
CHART = REPO / "deploy" / "helm" / "kiln"
SCHEMAS = REPO / "deploy" / "schemas"
COMPOSE = REPO / "deploy" / "compose.yaml"
#: The Kubernetes version manifests are validated against (the chart's kubeVersion allows >= 1.27).
KUBE_VERSION = "1.33.0"

VALUES = yaml.safe_load((CHART / "values.yaml").read_text())

#: Value sets the chart must render valid manifests for.
VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    # One process per pod compiling itself: no workers, no KEDA, no HPA, no internal Redis.
    "embedded": {
        "workers": {"enabled": False},
        "api": {"autoscaling": {"enabled": False}, "replicas": 1,
                "podDisruptionBudget": {"enabled": False}},
        "redis": {"internal": {"enabled": False}, "host": "redis.example.internal"},
    },
    # Production-like: external Redis with a password and TLS, S3 with keys given as values,
    # tokens, a CPU and a GPU pool (the GPU pool with its own KEDA bounds), a PVC cache.
    "cluster": {
        "auth": {"tokens": ["tok-a", "tok-b"]},
        "redis": {"internal": {"enabled": False}, "host": "redis.kiln.svc", "port": 6380,
                  "db": 2, "tls": True, "password": "s3cret-pw"},
        "s3": {"url": "s3://kiln-artifacts/prod", "endpointUrl": "https://minio.kiln.svc:9000",
               "region": "eu-west-1", "accessKeyId": "AKIA", "secretAccessKey": "shh"},
        "cache": {"existingClaim": "kiln-cache"},
        "api": {"env": {"KILN_MAX_QUEUE": 32}},
        "workers": {
            "concurrency": 4,
            "pools": [
                {"name": "cpu", "queues": ["cpu"]},
                {"name": "gpu", "queues": ["gpu"], "concurrency": 1,
                 "nodeSelector": {"kiln.dev/accelerator": "gpu"},
                 "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                  "effect": "NoSchedule"}],
                 "resources": {"requests": {"cpu": "4", "memory": "16Gi"},
                               "limits": {"memory": "32Gi", "nvidia.com/gpu": 1}},
                 "keda": {"minReplicaCount": 0, "maxReplicaCount": 4}},
            ],
        },
    },
    # Everything secret comes from Secrets the operator manages; KEDA off.
    "existing-secrets": {
        "auth": {"existingSecret": "kiln-tokens"},
        "signing": {"existingSecret": "kiln-signing-key"},
        "redis": {"internal": {"enabled": False}, "host": "redis", "existingSecret": "redis-auth",
                  "existingSecretKey": "password"},
        "s3": {"url": "s3://bucket", "existingSecret": "kiln-s3"},
        "workers": {"keda": {"enabled": False}, "replicas": 3},
    },
}


def render(values: dict[str, Any]) -> dict[str, str]:
    with helm.Chart.load(str(CHART)) as chart:
        return chart.render(values, name="kiln", namespace="kiln", is_install=True)


def manifests(rendered: dict[str, str]) -> list[dict[str, Any]]:
    return [
        doc
        for path, text in sorted(rendered.items())
        if path.endswith(".yaml")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {name: manifests(render(values)) for name, values in VALUE_SETS.items()}


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def containers(docs: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for name, dep in by_kind(docs, "Deployment").items():
        for c in dep["spec"]["template"]["spec"]["containers"]:
            yield name, dep["spec"]["template"]["spec"], c


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


# --- KEDA: the vendored CRD schema, made strict ---------------------------------------------


def _strict(schema: Any) -> Any:
    """kubernetes-validate's strict mode for a CRD schema: objects with declared properties refuse
    undeclared ones (unless the CRD preserves unknown fields); ``x-kubernetes-int-or-string``
    becomes an explicit type."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            out.get("type") == "object"
            and "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        if out.pop("x-kubernetes-int-or-string", False):
            out["type"] = ["integer", "string"]
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def _object_meta_schema() -> dict[str, Any]:
    """ObjectMeta from kubernetes-validate's strict definitions of KUBE_VERSION."""
    major_minor = ".".join(KUBE_VERSION.split(".")[:2])
    defs = kubernetes_validate.utils.schema_contents(
        f"kubernetes-json-schema/v{major_minor}.0-local-strict/_definitions.json", KUBE_VERSION
    )
    text = json.dumps(defs["$defs"]).replace("_definitions.json#/", "#/")
    all_defs = json.loads(text)
    # Only the definitions ObjectMeta reaches (the whole set makes the validator slow to build).
    wanted, todo = {}, ["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted[name] = all_defs[name]
            todo += re.findall(r'"#/\$defs/([^"]+)"', json.dumps(all_defs[name]))
    meta = copy.deepcopy(wanted["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"])
    meta["$defs"] = wanted
    return meta


@pytest.fixture(scope="module")
def scaledobject_validator() -> jsonschema.Validator:
    source = json.loads((SCHEMAS / "keda.sh_scaledobject_v1alpha1.json").read_text())
    schema = _strict(source)
    schema["properties"]["metadata"] = _object_meta_schema()
    schema["properties"]["apiVersion"] = {"const": "keda.sh/v1alpha1"}
    schema["properties"]["kind"] = {"const": "ScaledObject"}
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def validate_scaledobject(validator: jsonschema.Validator, doc: dict[str, Any]) -> None:
    validator.validate(doc)
    # The CRD's one CEL rule (x-kubernetes-validations), which JSON schema cannot express.
    spec = doc["spec"]
    if "minReplicaCount" in spec:
        assert spec["minReplicaCount"] <= spec.get("maxReplicaCount", 100), (
            "minReplicaCount must be less than or equal to maxReplicaCount"
        )


def validate_manifest(doc: dict[str, Any], validator: jsonschema.Validator) -> None:
    if doc["apiVersion"] == "keda.sh/v1alpha1":
        assert doc["kind"] == "ScaledObject"
        validate_scaledobject(validator, doc)
    else:
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)


# --- the chart ----------------------------------------------------------------------------------


def test_chart_lints_clean_for_every_value_set() -> None:
    for name, values in VALUE_SETS.items():
        report = helm.lint(str(CHART), values, strict=True, namespace="kiln",
                           kube_version=KUBE_VERSION)
        assert report["errors"] == [], (name, report)
        # Severity 1 is informational ("icon is recommended"); warnings and errors fail.
        assert [m for m in report["messages"] if m["severity"] > 1] == [], (name, report)


@pytest.mark.parametrize("value_set", sorted(VALUE_SETS))
def test_every_rendered_manifest_validates_strictly(
    rendered: dict[str, list[dict[str, Any]]], value_set: str,
    scaledobject_validator: jsonschema.Validator,
) -> None:
    docs = rendered[value_set]
    assert docs
    for doc in docs:
        validate_manifest(doc, scaledobject_validator)
        assert doc["metadata"]["labels"]["app.kubernetes.io/instance"] == "kiln"


def test_strict_validation_refuses_a_misspelt_field(
    rendered: dict[str, list[dict[str, Any]]], scaledobject_validator: jsonschema.Validator
) -> None:
    """The validators are not vacuous: one unknown field in a Deployment or a ScaledObject, or a
    number where KEDA wants a string, is refused."""
    dep = copy.deepcopy(by_kind(rendered["defaults"], "Deployment")["kiln-api"])
    dep["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, KUBE_VERSION, strict=True)
    so = by_kind(rendered["defaults"], "ScaledObject")["kiln-worker-cpu"]
    typo = copy.deepcopy(so)
    typo["spec"]["minReplicas"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validate_scaledobject(scaledobject_validator, typo)
    meta = copy.deepcopy(so)
    meta["metadata"]["lables"] = {}
    with pytest.raises(jsonschema.ValidationError):
        validate_scaledobject(scaledobject_validator, meta)
    number = copy.deepcopy(so)
    number["spec"]["triggers"][0]["metadata"]["listLength"] = 5
    with pytest.raises(jsonschema.ValidationError):
        validate_scaledobject(scaledobject_validator, number)
    bounds = copy.deepcopy(so)
    bounds["spec"]["minReplicaCount"], bounds["spec"]["maxReplicaCount"] = 5, 2
    with pytest.raises(AssertionError, match="minReplicaCount"):
        validate_scaledobject(scaledobject_validator, bounds)


def test_values_schema_refuses_unknown_keys_and_bad_types() -> None:
    with pytest.raises(helm.HelmError, match="replicaz"):
        render({"api": {"replicaz": 3}})
    with pytest.raises(helm.HelmError):
        render({"workers": {"concurrency": "four"}})
    with pytest.raises(helm.HelmError, match="redis.host is required"):
        render({"redis": {"internal": {"enabled": False}}})


def test_api_pods_probe_healthz_readyz_and_run_remote_compiles_with_workers(
    rendered: dict[str, list[dict[str, Any]]]
) -> None:
    for value_set, docs in rendered.items():
        api = by_kind(docs, "Deployment")["kiln-api"]["spec"]["template"]["spec"]
        (c,) = api["containers"]
        assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
        workers = VALUE_SETS[value_set].get("workers", {}).get("enabled", True)
        assert c["args"] == (["kiln", "serve", "--compile", "remote"] if workers
                             else ["kiln", "serve"]), value_set
        env = env_of(c)
        assert env["KILN_HOST"]["value"] == "0.0.0.0"
        assert ("KILN_WORKERS" in env) is not workers
        svc = by_kind(docs, "Service")["kiln"]
        assert svc["spec"]["ports"][0]["targetPort"] == "http"
        assert svc["spec"]["selector"] == by_kind(docs, "Deployment")["kiln-api"]["spec"][
            "selector"]["matchLabels"]


def test_hpa_scales_the_api_on_cpu_and_owns_its_replica_count(
    rendered: dict[str, list[dict[str, Any]]]
) -> None:
    docs = rendered["defaults"]
    (hpa,) = by_kind(docs, "HorizontalPodAutoscaler").values()
    assert hpa["spec"]["scaleTargetRef"]["name"] == "kiln-api"
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert metric["resource"]["target"] == {"type": "Utilization", "averageUtilization": 70}
    assert "replicas" not in by_kind(docs, "Deployment")["kiln-api"]["spec"]
    embedded = rendered["embedded"]
    assert not by_kind(embedded, "HorizontalPodAutoscaler")
    assert by_kind(embedded, "Deployment")["kiln-api"]["spec"]["replicas"] == 1
    assert not by_kind(embedded, "ScaledObject")
    assert set(by_kind(embedded, "Deployment")) == {"kiln-api"}


def test_every_pod_is_non_root_read_only_with_requests_and_limits(
    rendered: dict[str, list[dict[str, Any]]]
) -> None:
    for value_set, docs in rendered.items():
        for name, pod, c in containers(docs):
            where = (value_set, name)
            assert pod["securityContext"]["runAsNonRoot"] is True, where
            assert pod["securityContext"]["runAsUser"] != 0, where
            assert pod["automountServiceAccountToken"] is False, where
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["capabilities"]["drop"] == ["ALL"], where
            assert c["resources"]["requests"]["memory"] and c["resources"]["limits"]["memory"]
            assert c["resources"]["requests"].get("cpu"), where
            # Every writable path is a volume: the cache and /tmp on an emptyDir or a PVC.
            volumes = {v["name"]: v for v in pod["volumes"]}
            mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
            if name == "kiln-redis":
                assert "emptyDir" in volumes[mounts["/data"]["name"]]
                continue
            env = env_of(c)
            assert env["KILN_CACHE_DIR"]["value"] == "/var/cache/kiln"
            assert env["TMPDIR"]["value"] == "/tmp"
            for path in ("/var/cache/kiln", "/tmp"):
                vol = volumes[mounts[path]["name"]]
                assert "emptyDir" in vol or "persistentVolumeClaim" in vol, (where, path)
            cache = volumes[mounts["/var/cache/kiln"]["name"]]
            if value_set == "cluster":
                assert cache["persistentVolumeClaim"]["claimName"] == "kiln-cache"
            else:
                assert cache["emptyDir"]["sizeLimit"] == "10Gi"
                # Kiln's LRU bound stays below the emptyDir limit, so the kubelet never evicts.
                assert int(env["KILN_CACHE_MAX_BYTES"]["value"]) < 10 << 30


def test_signing_key_is_a_secret_mounted_read_only_in_every_kiln_pod(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from kiln.provenance import Authority

    for value_set, docs in rendered.items():
        secrets = by_kind(docs, "Secret")
        for name, pod, c in containers(docs):
            if name == "kiln-redis":
                continue
            path = Path(env_of(c)["KILN_SIGNING_KEY_FILE"]["value"])
            (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == str(path.parent)]
            assert mount["readOnly"] is True
            (vol,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
            secret_name = vol["secret"]["secretName"]
            if value_set == "existing-secrets":
                assert secret_name == "kiln-signing-key" and secret_name not in secrets
                continue
            # The generated key is what Kiln loads: Ed25519, PKCS#8 PEM (kiln/provenance.py).
            pem = base64.b64decode(secrets[secret_name]["data"][vol["secret"]["items"][0]["key"]])
            key = serialization.load_pem_private_key(pem, password=None)
            assert isinstance(key, Ed25519PrivateKey)
            keyfile = tmp_path / f"{value_set}.pem"
            keyfile.write_bytes(pem)
            assert Authority.from_files(keyfile, create=False).signer is not None
            assert secrets[secret_name]["metadata"]["annotations"][
                "helm.sh/resource-policy"] == "keep"


def test_tokens_redis_password_and_s3_keys_come_from_secrets(
    rendered: dict[str, list[dict[str, Any]]]
) -> None:
    docs = rendered["cluster"]
    secret = by_kind(docs, "Secret")["kiln"]
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data == {"tokens": "tok-a,tok-b", "redis-password": "s3cret-pw",
                    "AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "shh"}
    for name, _, c in containers(docs):
        env = env_of(c)
        names = [e["name"] for e in c["env"]]
        # $(KILN_REDIS_PASSWORD) is expanded by the kubelet only if defined earlier in the list.
        assert env["KILN_REDIS_URL"]["value"] == "rediss://:$(KILN_REDIS_PASSWORD)@redis.kiln.svc:6380/2"
        assert names.index("KILN_REDIS_PASSWORD") < names.index("KILN_REDIS_URL")
        assert env["KILN_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
            "name": "kiln", "key": "redis-password"}
        assert env["KILN_S3_URL"]["value"] == "s3://kiln-artifacts/prod"
        assert env["KILN_S3_ENDPOINT_URL"]["value"] == "https://minio.kiln.svc:9000"
        assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "kiln"
        for e in c["env"]:  # no secret value appears in a pod spec
            assert e.get("value") not in ("s3cret-pw", "shh", "AKIA", "tok-a,tok-b")
        if name == "kiln-api":
            assert env["KILN_TOKENS"]["valueFrom"]["secretKeyRef"] == {"name": "kiln",
                                                                       "key": "tokens"}
            assert env["KILN_MAX_QUEUE"]["value"] == "32"
        else:
            assert "KILN_TOKENS" not in env
    existing = rendered["existing-secrets"]
    assert not by_kind(existing, "Secret")
    api_env = env_of(by_kind(existing, "Deployment")["kiln-api"]["spec"]["template"]["spec"][
        "containers"][0])
    assert api_env["KILN_TOKENS"]["valueFrom"]["secretKeyRef"]["name"] == "kiln-tokens"
    assert api_env["KILN_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": "redis-auth", "key": "password"}
    assert api_env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"]["name"] == "kiln-s3"
    # No tokens configured: no KILN_TOKENS at all, and NOTES.txt warns.
    assert "KILN_TOKENS" not in env_of(by_kind(rendered["defaults"], "Deployment")["kiln-api"][
        "spec"]["template"]["spec"]["containers"][0])
    assert "WARNING: no bearer tokens" in render({})["kiln/templates/NOTES.txt"]


def test_keda_watches_the_list_where_celery_keeps_a_waiting_compile(
    rendered: dict[str, list[dict[str, Any]]], redis_server: Any
) -> None:
    """A compile job sent the way an API replica sends it (kiln.cluster.queue's Celery app) waits
    in exactly the Redis list the ScaledObject's trigger for that kind counts."""
    queue = pytest.importorskip("kiln.cluster.queue", reason="cluster mode")
    import redis

    from kiln.cluster.types import queues_for

    app = queue.celery_app(redis_server.url, visibility_timeout=60)
    client = redis.Redis.from_url(redis_server.url)
    try:
        for name, so in by_kind(rendered["cluster"], "ScaledObject").items():
            dep = by_kind(rendered["cluster"], "Deployment")[name]
            queues, _ = _worker_command(dep["spec"]["template"]["spec"]["containers"][0])
            triggers = so["spec"]["triggers"]
            # One trigger per queue the worker consumes, none missing, none extra.
            assert len(triggers) == len(queues_for(",".join(queues)))
            for celery_queue, trigger in zip(queues_for(",".join(queues)), triggers, strict=True):
                list_name = trigger["metadata"]["listName"]
                before = client.llen(list_name)
                app.send_task("kiln.deploy-probe", args=[], queue=celery_queue)
                assert client.llen(list_name) == before + 1, (celery_queue, list_name)
    finally:
        client.close()
        app.close()


#: KILN_* variables the chart sets that a command does not read yet, and why they stay.
NOT_READ_YET = {
    # The worker's disk tier has no bound yet (kiln/cluster/worker.py opens the cache without
    # max_size); set for when it does, the emptyDir sizeLimit meanwhile bounds it.
    "worker": {"KILN_CACHE_MAX_BYTES"},
}


def test_every_kiln_variable_the_chart_sets_is_one_kiln_reads(
    rendered: dict[str, list[dict[str, Any]]]
) -> None:
    """A misspelt KILN_* variable is silently ignored by Kiln (extra="ignore"): check names."""
    from kiln.service.settings import Settings

    worker_src = [REPO / "kiln" / "cli" / "worker.py", REPO / "kiln" / "cluster" / "worker.py"]
    if not all(f.exists() for f in worker_src):
        pytest.skip("cluster mode is not in this checkout")
    serve = {"KILN_" + name.upper() for name in Settings.model_fields}
    worker = {v for f in worker_src for v in re.findall(r'"(KILN_[A-Z0-9_]+)"', f.read_text())}
    for docs in rendered.values():
        for name, _, c in containers(docs):
            if name == "kiln-redis":
                continue
            command = c["args"][1]
            reads = (serve if command == "serve" else worker) | NOT_READ_YET.get(command, set())
            # The password only feeds $(KILN_REDIS_PASSWORD) in KILN_REDIS_URL.
            names = {e["name"] for e in c["env"]} - {"KILN_REDIS_PASSWORD"}
            unknown = {n for n in names if n.startswith("KILN_")} - reads
            assert not unknown, (name, sorted(unknown))
    # API pods and workers agree on the timeouts that cross the queue.
    docs = rendered["cluster"]
    envs = [env_of(c) for _, _, c in containers(docs)]
    for var in ("KILN_COMPILE_TIMEOUT", "KILN_VISIBILITY_TIMEOUT", "KILN_REDIS_URL"):
        assert len({e[var]["value"] for e in envs if var in e}) == 1, var


def _worker_command(c: dict[str, Any]) -> tuple[list[str], int]:
    args = c["args"]
    assert args[:2] == ["kiln", "worker"]
    queues = args[args.index("--queues") + 1].split(",")
    return queues, int(args[args.index("--concurrency") + 1])


def test_workers_are_scaled_by_keda_on_their_celery_queue_lists(
    rendered: dict[str, list[dict[str, Any]]]
) -> None:
    docs = rendered["cluster"]
    deployments = by_kind(docs, "Deployment")
    scaled = by_kind(docs, "ScaledObject")
    assert set(scaled) == {"kiln-worker-cpu", "kiln-worker-gpu"}
    expect = {"cpu": (["cpu"], 4), "gpu": (["gpu"], 1)}
    kinds = {"cpu": ["cpu"], "gpu": ["cuda", "rocm", "vulkan", "metal"]}
    for pool, (queues, concurrency) in expect.items():
        dep = deployments[f"kiln-worker-{pool}"]
        assert "replicas" not in dep["spec"]  # KEDA owns the count
        pod = dep["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        assert _worker_command(c) == (queues, concurrency)
        env = env_of(c)
        so = scaled[f"kiln-worker-{pool}"]["spec"]
        assert so["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": f"kiln-worker-{pool}",
                                        "envSourceContainerName": "worker"}
        assert [t["metadata"]["listName"] for t in so["triggers"]] == [
            f"kiln:v1:celery:kiln.{k}" for k in kinds[pool]]
        for t in so["triggers"]:
            assert t["type"] == "redis"
            md = t["metadata"]
            # The scaler watches the Redis the workers consume from.
            assert md["address"] == "redis.kiln.svc:6380" and md["databaseIndex"] == "2"
            assert md["enableTLS"] == "true"
            assert md["passwordFromEnv"] in env
    gpu = deployments["kiln-worker-gpu"]["spec"]["template"]["spec"]
    assert gpu["nodeSelector"] == {"kiln.dev/accelerator": "gpu"}
    assert gpu["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    # A pool's resources replace the defaults whole; the CPU pool keeps the defaults.
    assert gpu["containers"][0]["resources"]["requests"] == {"cpu": "4", "memory": "16Gi"}
    assert deployments["kiln-worker-cpu"]["spec"]["template"]["spec"]["containers"][0][
        "resources"] == VALUES["workers"]["resources"]
    assert (scaled["kiln-worker-gpu"]["spec"]["minReplicaCount"],
            scaled["kiln-worker-gpu"]["spec"]["maxReplicaCount"]) == (0, 4)
    assert scaled["kiln-worker-cpu"]["spec"]["maxReplicaCount"] == 10
    # Internal Redis: the trigger points at the chart's Redis service, no password.
    (so,) = by_kind(rendered["defaults"], "ScaledObject").values()
    (t,) = so["spec"]["triggers"]
    assert t["metadata"]["address"] == "kiln-redis:6379" and "passwordFromEnv" not in t["metadata"]
    assert "kiln-redis" in by_kind(rendered["defaults"], "Service")
    # KEDA off: plain replicas.
    dep = by_kind(rendered["existing-secrets"], "Deployment")["kiln-worker-cpu"]
    assert dep["spec"]["replicas"] == 3 and not by_kind(rendered["existing-secrets"],
                                                         "ScaledObject")


# --- compose ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_file_validates_against_the_compose_spec(compose: dict[str, Any]) -> None:
    schema = json.loads((SCHEMAS / "compose-spec.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(compose)
    services = compose["services"]
    # What `docker compose config` would refuse besides the schema: dangling references.
    for name, svc in services.items():
        for dep, cond in (svc.get("depends_on") or {}).items():
            assert dep in services, (name, dep)
            if set(services[dep].get("profiles", [])) - set(svc.get("profiles", [])):
                # only started with its profile: the others must not need it
                assert cond.get("required") is False, (name, dep)
        for vol in svc.get("volumes", []):
            source = vol.split(":")[0]
            assert source in compose["volumes"], (name, vol)
    bad = copy.deepcopy(compose)
    bad["services"]["api"]["restart_policy"] = "always"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate(bad)


def test_compose_runs_redis_one_api_two_workers_from_the_repository_image(
    compose: dict[str, Any]
) -> None:
    s = compose["services"]
    assert {"redis", "api", "worker"} <= set(s)
    api, worker = s["api"], s["worker"]
    assert api["command"] == ["kiln", "serve", "--compile", "remote"]
    assert worker["command"][:2] == ["kiln", "worker"]
    assert worker["deploy"]["replicas"] == 2 and "replicas" not in api.get("deploy", {})
    for name in ("api", "worker", "signing-key"):
        svc = s[name]
        assert svc["image"] == api["image"]
        assert (COMPOSE.parent / svc["build"]["context"] / svc["build"]["dockerfile"]).resolve() \
            == REPO / "Dockerfile"
        assert svc["environment"].get("KILN_SIGNING_KEY_FILE") == \
            "/etc/kiln/signing/signing-key.pem"
    for svc in (api, worker):
        env = svc["environment"]
        assert env["KILN_REDIS_URL"] == "redis://redis:6379/0"
        assert {"KILN_S3_URL", "KILN_S3_ENDPOINT_URL", "AWS_ACCESS_KEY_ID"} <= set(env)
        assert svc["read_only"] is True and svc["cap_drop"] == ["ALL"]
        assert "keys:/etc/kiln/signing:ro" in svc["volumes"]
        assert svc["depends_on"]["redis"]["condition"] == "service_healthy"
        assert svc["depends_on"]["signing-key"]["condition"] == "service_completed_successfully"
    assert "/readyz" in " ".join(api["healthcheck"]["test"])
    # A worker has no HTTP port: the image's /healthz check is switched off for it.
    assert worker["healthcheck"] == {"disable": True}
    assert s["s3"]["profiles"] == ["s3"] and s["s3-bucket"]["profiles"] == ["s3"]


def test_compose_signing_key_service_creates_a_key_once_that_kiln_signs_with(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    from kiln.provenance import Authority

    svc = compose["services"]["signing-key"]
    assert svc["restart"] == "no" and svc["command"][0] == "python"
    keyfile = tmp_path / "signing" / "signing-key.pem"
    keyfile.parent.mkdir()
    env = {**os.environ, "KILN_SIGNING_KEY_FILE": str(keyfile)}
    cmd = [sys.executable, *svc["command"][1:]]
    subprocess.run(cmd, env=env, check=True, timeout=60)
    first = keyfile.read_bytes()
    assert keyfile.stat().st_mode & 0o077 == 0
    subprocess.run(cmd, env=env, check=True, timeout=60)  # a second `up` keeps the key
    assert keyfile.read_bytes() == first
    assert Authority.from_files(keyfile, create=False).signer is not None


def test_the_image_installs_what_kiln_worker_needs() -> None:
    """API and workers run one image: the extras the Dockerfile installs must bring Celery, which
    ``kiln worker`` and ``kiln serve --compile remote`` import (kiln/cluster/queue.py)."""
    import tomllib

    if not (REPO / "kiln" / "cluster" / "queue.py").exists():
        pytest.skip("cluster mode is not in this checkout")
    docker = (REPO / "Dockerfile").read_text()
    (extras,) = re.findall(r"KILN_EXTRAS=(\S+)", docker)
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras.split(","):
        requirements += project["optional-dependencies"][extra]
    names = {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower() for r in requirements}
    assert "celery" in names, (
        f"the image installs kiln[{extras}], which does not bring celery: `kiln worker` would not "
        "start in it (declare celery in one of those extras, or add its extra to KILN_EXTRAS)")


def test_the_image_owns_every_directory_compose_mounts_a_named_volume_on(
    compose: dict[str, Any]
) -> None:
    """A fresh named volume takes the owner of the image's directory; the kiln user must be able
    to write the cache and create the signing key."""
    docker = (REPO / "Dockerfile").read_text()
    (user_block,) = re.findall(r"^RUN useradd .*?(?=^\S)", docker, flags=re.MULTILINE | re.DOTALL)
    for svc in ("api", "worker", "signing-key"):
        for vol in compose["services"][svc]["volumes"]:
            target = vol.split(":")[1]
            assert re.search(rf"mkdir -p [^&]*{re.escape(target)}\b", user_block), target
            assert re.search(rf"chown kiln:kiln [^&\n]*{re.escape(target)}\b", user_block), target


# --- the commands the deployment runs are Kiln's own --------------------------------------------


def _commands(rendered: dict[str, list[dict[str, Any]]], compose: dict[str, Any]) -> list[list[str]]:
    cmds = [c["args"] for docs in rendered.values() for name, _, c in containers(docs)
            if name != "kiln-redis"]
    cmds += [compose["services"][s]["command"] for s in ("api", "worker")]
    return [[re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", a) for a in cmd] for cmd in cmds]


def test_every_kiln_command_in_the_chart_and_compose_parses(
    rendered: dict[str, list[dict[str, Any]]], compose: dict[str, Any]
) -> None:
    from kiln.cli import COMMANDS, build_parser

    if "worker" not in COMMANDS:
        pytest.skip("kiln worker (cluster mode) is not in this checkout")
    parser = build_parser()
    for cmd in _commands(rendered, compose):
        assert cmd[0] == "kiln"
        try:
            parser.parse_args(cmd[1:])
        except SystemExit as exc:
            pytest.fail(f"kiln refuses {' '.join(cmd)!r} (exit {exc.code})")
