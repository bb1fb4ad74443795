"""The Docker files, checked without a Docker engine: the compose files through
`docker compose config` (scripts/check-compose.sh), the Dockerfile through hadolint and a
reading of its stages, and both against the real `sift` binary where that can be done here."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "Dockerfile"


@pytest.fixture(scope="module")
def compose_configs(tmp_path_factory) -> dict:
    """The normalised configs of docker/compose.yml, compose.rgw.yml and compose.cluster.yml,
    as `docker compose config --format json` prints them; the check itself must pass."""
    out = tmp_path_factory.mktemp("compose")
    p = subprocess.run([str(REPO / "scripts" / "check-compose.sh")], capture_output=True,
                       text=True, timeout=600, env=dict(os.environ, COMPOSE_JSON_DIR=str(out)))
    assert p.returncode == 0, f"check-compose.sh failed:\n{p.stdout}\n{p.stderr}"
    return {name: json.loads((out / f"{name}.json").read_text())
            for name in ("compose", "compose.rgw", "compose.cluster")}

# The files with one gateway (`sift`) and a one-shot client (`tpcds`).
SINGLE = ("compose", "compose.rgw")


def flag(command: list[str], name: str) -> str:
    assert command.count(name) == 1, (name, command)
    return command[command.index(name) + 1]


@pytest.mark.parametrize("variant,store,upstream", [
    ("compose", "minio", "http://minio:9000"),
    ("compose.rgw", "rgw", "http://rgw:7480"),
])
def test_compose_config(compose_configs, variant, store, upstream):
    services = compose_configs[variant]["services"]
    assert set(services) == {store, "sift", "tpcds"}

    sift = services["sift"]
    assert sift["build"] == {"context": str(REPO), "dockerfile": "docker/Dockerfile"}
    cmd = sift["command"]
    assert cmd[0] == "gateway"
    assert flag(cmd, "--listen") == "0.0.0.0:9000"
    assert flag(cmd, "--data-dir") == "/data"
    assert flag(cmd, "--upstream") == upstream
    assert flag(cmd, "--access-key") == "sift"
    assert flag(cmd, "--secret-key") == "sift-secret-key"
    # The upstream credentials are the store's own.
    store_env = services[store]["environment"]
    if store == "minio":
        assert flag(cmd, "--upstream-access-key") == store_env["MINIO_ROOT_USER"]
        assert flag(cmd, "--upstream-secret-key") == store_env["MINIO_ROOT_PASSWORD"]
        assert services["minio"]["command"][:2] == ["server", "/data"]
    else:
        assert flag(cmd, "--upstream-access-key") == store_env["RGW_ACCESS_KEY"]
        assert flag(cmd, "--upstream-secret-key") == store_env["RGW_SECRET_KEY"]
    assert [p["target"] for p in sift["ports"]] == [9000]
    assert sift["depends_on"][store]["condition"] == "service_healthy"
    assert "/health" in " ".join(sift["healthcheck"]["test"])
    assert services[store]["healthcheck"]["test"]

    tpcds = services["tpcds"]
    assert tpcds["image"] == sift["image"] and tpcds["build"] == sift["build"]
    # The one-shot client: a shell line of two sift commands, each with flags sift accepts
    # (test_compose_tpcds_flags_are_the_binarys checks them against `sift tpcds ... --help`).
    assert tpcds["entrypoint"] == ["/bin/sh", "-c"]
    script = " ".join(tpcds["command"])
    # `$$` is Compose's escape for a `$` the container's shell expands (normalised configs keep it).
    assert "sift tpcds load --sf $${TPCDS_SF:-1} --endpoint http://sift:9000" in script
    assert "sift tpcds run --sf $${TPCDS_SF:-1} --endpoint http://sift:9000" in script
    assert tpcds["depends_on"]["sift"]["condition"] == "service_healthy"
    assert tpcds["environment"]["AWS_ACCESS_KEY_ID"] == flag(cmd, "--access-key")
    assert tpcds["environment"]["AWS_SECRET_ACCESS_KEY"] == flag(cmd, "--secret-key")


def test_compose_healthcheck_passes_against_the_gateway(compose_configs, gateway):
    """The sift service's healthcheck command, pointed at the test gateway's port, passes;
    pointed at a closed port, it fails."""
    test = compose_configs["compose"]["services"]["sift"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "bash", "-c"]
    script = test[3].replace("$$", "$")
    port = gateway.endpoint.rsplit(":", 1)[1]
    assert "/dev/tcp/127.0.0.1/9000" in script
    ok = subprocess.run(["bash", "-c", script.replace("127.0.0.1/9000", f"127.0.0.1/{port}")],
                        capture_output=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    wrong = script.replace("/health", "/not-health").replace("127.0.0.1/9000",
                                                              f"127.0.0.1/{port}")
    assert subprocess.run(["bash", "-c", wrong], capture_output=True, timeout=30).returncode != 0


def test_compose_gateway_flags_are_the_binarys(compose_configs):
    """Every flag the compose files give `sift gateway` is one `sift gateway --help` lists
    (the --upstream* flags arrive with the upstream backend)."""
    help_text = subprocess.run([os.environ["SIFT_BIN"], "gateway", "--help"],
                               capture_output=True, text=True, timeout=30).stdout
    known = set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))
    for variant in SINGLE:
        config = compose_configs[variant]
        used = {a for a in config["services"]["sift"]["command"] if a.startswith("--")}
        assert used <= known, f"{variant}: sift gateway does not know {sorted(used - known)}"


def test_compose_tpcds_flags_are_the_binarys(compose_configs):
    """Every flag the compose files give `sift tpcds load` and `sift tpcds run` is one their
    `--help` lists."""
    for variant, config in compose_configs.items():
        script = " ".join(config["services"]["tpcds"]["command"])
        for step in script.split("&&"):
            words = step.split()
            assert words[:2] == ["sift", "tpcds"], f"{variant}: {step!r}"
            help_text = subprocess.run([os.environ["SIFT_BIN"], *words[1:3], "--help"],
                                       capture_output=True, text=True, timeout=30).stdout
            known = set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))
            used = {w for w in words if w.startswith("--")}
            assert used <= known, f"{variant}: sift {words[2]} does not know {sorted(used - known)}"


def known_flags(*command: str) -> set[str]:
    help_text = subprocess.run([os.environ["SIFT_BIN"], *command, "--help"],
                               capture_output=True, text=True, timeout=30).stdout
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))


def test_compose_cluster_config(compose_configs):
    """The cluster file: a gateway per storage node in upstream mode in front of the store,
    Ballista's scheduler and two executors, and a client whose requests go to both gateways
    and whose queries run on the scheduler; every flag one the binary knows."""
    services = compose_configs["compose.cluster"]["services"]
    assert set(services) == {"store", "gateway-1", "gateway-2", "scheduler", "executor-1",
                             "executor-2", "tpcds"}
    assert flag(services["store"]["command"], "--data-dir") == "/data"
    for name in ("gateway-1", "gateway-2"):
        cmd = services[name]["command"]
        assert cmd[0] == "gateway" and flag(cmd, "--upstream") == "http://store:9000"
        assert services[name]["depends_on"]["store"]["condition"] == "service_healthy"
        assert {a for a in cmd if a.startswith("--")} <= known_flags("gateway")
    scheduler = services["scheduler"]["command"]
    assert scheduler[:2] == ["tpcds", "scheduler"] and flag(scheduler, "--bind").endswith(":50050")
    assert {a for a in scheduler if a.startswith("--")} <= known_flags("tpcds", "scheduler")
    for name in ("executor-1", "executor-2"):
        cmd = services[name]["command"]
        assert cmd[:2] == ["tpcds", "executor"]
        assert flag(cmd, "--scheduler") == "df://scheduler:50050"
        assert {a for a in cmd if a.startswith("--")} <= known_flags("tpcds", "executor")
        assert services[name]["environment"]["AWS_ACCESS_KEY_ID"] == "sift"
    script = " ".join(services["tpcds"]["command"])
    assert "--endpoint http://gateway-1:9000,http://gateway-2:9000" in script
    assert "--scheduler df://scheduler:50050" in script


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", "\n".join(
        line for line in DOCKERFILE.read_text().splitlines() if not line.lstrip().startswith("#")))
    out = []
    for line in text.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), " ".join(rest.split())))
    return out


def test_dockerfile_hadolint():
    exe = Path(sys.executable).parent / "hadolint"
    hadolint = str(exe) if exe.exists() else shutil.which("hadolint")
    assert hadolint, "hadolint is not installed: run scripts/py-clients.sh"
    p = subprocess.run([hadolint, "--failure-threshold", "info", str(DOCKERFILE)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_dockerfile_stages():
    ins = dockerfile_instructions()
    froms = [args for word, args in ins if word == "FROM"]
    assert froms == ["rust:1.95-bookworm AS builder", "debian:bookworm-slim"]
    runtime = ins[[i for i, (w, _) in enumerate(ins) if w == "FROM"][1]:]

    build_runs = [args for word, args in ins[:len(ins) - len(runtime)] if word == "RUN"]
    assert any("cargo build --release --locked --bin sift" in r for r in build_runs), build_runs
    # The binary the Dockerfile builds is the workspace's `sift` [[bin]].
    assert re.search(r'\[\[bin\]\]\s*name = "sift"', (REPO / "Cargo.toml").read_text())

    # The builder's toolchain is at least the workspace's rust-version.
    rust_version = re.search(r'rust-version = "([0-9.]+)"',
                             (REPO / "Cargo.toml").read_text()).group(1)
    image_version = re.match(r"rust:([0-9.]+)-", froms[0]).group(1)

    def parts(v):
        return tuple(int(x) for x in v.split("."))

    assert parts(image_version) >= parts(rust_version)[:len(parts(image_version))]

    runtime_runs = " ".join(args for word, args in runtime if word == "RUN")
    installs = re.findall(r"apt-get install (?:-\S+ )*([^&;]+)", runtime_runs)
    assert [i.split() for i in installs] == [["ca-certificates"]]
    assert "rm -rf /var/lib/apt/lists/*" in runtime_runs

    def only(word):
        found = [args for w, args in runtime if w == word]
        assert len(found) == 1, (word, found)
        return found[0]

    assert only("COPY") == "--from=builder /usr/local/bin/sift /usr/local/bin/sift"
    user = only("USER")
    assert user.split(":")[0] not in ("root", "0"), user
    assert only("ENTRYPOINT") == '["sift"]'
    assert json.loads(only("CMD")) == ["gateway", "--listen", "0.0.0.0:9000",
                                       "--data-dir", "/data"]
    assert only("EXPOSE") == "9000"
    assert only("VOLUME") == "/data"


def test_dockerignore_keeps_the_build_inputs():
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    for big in ("target", ".git", "bench-data"):
        assert big in patterns, big

    def ignored(path: str) -> bool:
        return any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(path, p + "/*")
                   or ("**/" in p and fnmatch.fnmatch("x/" + path, p)) for p in patterns)

    needed = ["Cargo.toml", "Cargo.lock", ".cargo/config.toml", "docker/Dockerfile"]
    needed += [str(p.relative_to(REPO)) for d in ("src", "engine", "gateway", "tpcds",
                                                  "benches")
               for p in (REPO / d).rglob("*")
               if p.is_file() and p.suffix in (".rs", ".toml") and "fuzz" not in p.parts]
    needed += [str(p.relative_to(REPO)) for p in (REPO / "tests").glob("*.rs")]
    assert [p for p in needed if ignored(p)] == []


def start_image_command(tmp_path) -> tuple[subprocess.Popen, str]:
    """The image's CMD, run by the `sift` under test with credentials from SIFT_ACCESS_KEY and
    SIFT_SECRET_KEY (as docker/README.md tells `docker run` users); returns the process and
    its first stdout line."""
    cmd = json.loads(next(args for word, args in dockerfile_instructions() if word == "CMD"))
    cmd[cmd.index("--listen") + 1] = "127.0.0.1:0"  # 0.0.0.0:9000 may be taken here
    cmd[cmd.index("--data-dir") + 1] = str(tmp_path / "data")
    env = dict(os.environ, SIFT_ACCESS_KEY="docker-access", SIFT_SECRET_KEY="docker-secret")
    proc = subprocess.Popen([os.environ["SIFT_BIN"], *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    return proc, proc.stdout.readline()


def test_image_command_starts_the_gateway(tmp_path):
    """The image's CMD starts the gateway, which exits 0 on SIGTERM (`docker stop`)."""
    proc, line = start_image_command(tmp_path)
    try:
        assert line.startswith("listening on http://127.0.0.1:"), line
        endpoint = line.split()[-1]
        with urllib.request.urlopen(endpoint + "/health", timeout=30) as r:
            assert r.read() == b"ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def test_sigterm_right_after_the_listening_line_exits_0(tmp_path):
    """A supervisor may stop the container as soon as it is up (`docker compose up` then
    `down`, a failed rollout): SIGTERM right after the readiness line must still be the
    graceful stop with exit status 0, not death by the signal."""
    codes = []
    for _ in range(20):
        proc, line = start_image_command(tmp_path)
        assert line.startswith("listening on http://"), line
        proc.send_signal(signal.SIGTERM)
        codes.append(proc.wait(timeout=60))
    assert codes == [0] * 20, f"exit statuses (-15: killed by SIGTERM): {codes}"
