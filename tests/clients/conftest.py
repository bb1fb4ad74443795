"""Fixtures for the Python client tests: one real `sift gateway` process per session, a boto3
client and an AWS CLI runner pointed at it.

Run through scripts/py-clients.sh, which installs the pinned clients and sets SIFT_BIN.
Nothing here reads ~/.aws: every client gets its credentials and config from the fixtures.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

ACCESS_KEY = "sift-client-test-access"
# Slashes and pluses, as real AWS secrets have, so that signing is exercised with them.
SECRET_KEY = "sift/client+test/secret+key0123456789abcd"
REGION = "us-east-1"

REPO = Path(__file__).resolve().parents[2]


def pytest_configure(config):
    # No test may pick up the user's AWS setup: boto3 and the CLI read these at start.
    isolation = Path(tempfile.mkdtemp(prefix="sift-aws-isolation-"))
    os.environ["AWS_CONFIG_FILE"] = str(isolation / "config")
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = str(isolation / "credentials")
    for var in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
    ):
        os.environ.pop(var, None)
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"


@dataclasses.dataclass
class Gateway:
    endpoint: str
    access_key: str
    secret_key: str
    data_dir: Path
    process: subprocess.Popen


def _sift_bin() -> str:
    path = os.environ.get("SIFT_BIN")
    if not path:
        pytest.exit("SIFT_BIN is not set: run the client tests with "
                    "SIFT_BIN=/path/to/sift ./scripts/py-clients.sh", returncode=2)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.exit(f"SIFT_BIN={path} is not an executable file", returncode=2)
    return path


def _read_first_line(stream, timeout: float) -> str:
    """The process's first stdout line, or "" if none arrives within `timeout`."""
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else ""


@pytest.fixture(scope="session")
def gateway(tmp_path_factory):
    """A `sift gateway` on a free loopback port with one user; SIGTERMed at the end, which
    must stop it with exit status 0."""
    yield from running_gateway(tmp_path_factory)


def running_gateway(tmp_path_factory, *flags: str):
    """Starts a `sift gateway` with `flags` added, yields it once /health answers, and stops
    it with SIGTERM, which must end it with exit status 0. For fixtures (`yield from`)."""
    data_dir = tmp_path_factory.mktemp("sift-data")
    log_path = tmp_path_factory.mktemp("sift-log") / "gateway.stderr"
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [_sift_bin(), "gateway", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir),
         "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY, *flags],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )

    def fail(why: str):
        proc.kill()
        proc.wait()
        log.close()
        pytest.fail(f"{why}; gateway stderr:\n{log_path.read_text(errors='replace')}",
                    pytrace=False)

    line = _read_first_line(proc.stdout, timeout=30)
    prefix = "listening on http://"
    if not line.startswith(prefix):
        fail(f"expected a first stdout line {prefix!r}..., got {line!r}")
    endpoint = "http://" + line[len(prefix):].strip()
    # Keep draining stdout so that the gateway can never block on a full pipe.
    threading.Thread(target=proc.stdout.read, daemon=True).start()

    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(endpoint + "/health", timeout=5) as r:
                body = r.read()
                if r.status == 200 and body == b"ok":
                    break
                fail(f"GET /health answered {r.status} {body!r}")
        except OSError as e:
            if proc.poll() is not None:
                fail(f"the gateway exited with {proc.returncode} before /health answered")
            if time.monotonic() > deadline:
                fail(f"GET /health did not answer within 30 s: {e}")
            time.sleep(0.05)

    yield Gateway(endpoint, ACCESS_KEY, SECRET_KEY, data_dir, proc)

    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        log.close()
        pytest.fail("the gateway did not exit within 60 s of SIGTERM", pytrace=False)
    log.close()
    assert code == 0, (f"the gateway exited with {code} after SIGTERM; stderr:\n"
                       f"{log_path.read_text(errors='replace')}")


def client_config(**overrides) -> Config:
    """Path-style SigV4 in us-east-1, and no retries: a test must see the gateway's first
    answer, not a retried one."""
    settings = dict(
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        retries={"mode": "standard", "total_max_attempts": 1},
        connect_timeout=10,
        read_timeout=120,
    )
    settings.update(overrides)
    return Config(**settings)


@pytest.fixture(scope="session")
def make_client(gateway):
    """make_client(access_key=..., secret_key=...): a boto3 S3 client for the gateway."""

    def make(access_key: str = gateway.access_key, secret_key: str = gateway.secret_key,
             **config):
        session = boto3.session.Session(
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            region_name=REGION,
        )
        return session.client("s3", endpoint_url=gateway.endpoint, config=client_config(**config))

    return make


@pytest.fixture(scope="session")
def s3(make_client):
    return make_client()


@pytest.fixture
def bucket(s3, request):
    """A new, empty bucket for one test (names are unique per test run)."""
    stem = "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:30].strip("-")
    name = f"{stem}-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


@dataclasses.dataclass
class CliResult:
    returncode: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode()

    def json(self):
        return json.loads(self.stdout)


class AwsCli:
    """Runs the AWS CLI (v1, from the venv) against the gateway with credentials in the
    environment and a config file of its own."""

    def __init__(self, gateway: Gateway, config_dir: Path):
        exe = Path(sys.executable).parent / "aws"
        self.exe = str(exe) if exe.exists() else shutil.which("aws")
        if not self.exe:
            pytest.fail("the AWS CLI (aws) is not installed: run scripts/py-clients.sh",
                        pytrace=False)
        self.gateway = gateway
        self.config_file = config_dir / "config"
        # The s3 transfer settings are what `aws s3 cp` uses for multipart uploads.
        self.config_file.write_text(
            "[default]\n"
            f"region = {REGION}\n"
            "output = json\n"
            "retry_mode = standard\n"
            "max_attempts = 1\n"
            "s3 =\n"
            "    addressing_style = path\n"
            "    signature_version = s3v4\n"
            "    multipart_threshold = 8MB\n"
            "    multipart_chunksize = 8MB\n"
        )
        self.home = config_dir / "home"
        self.home.mkdir(exist_ok=True)

    def env(self, access_key: str | None = None, secret_key: str | None = None) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(
            HOME=str(self.home),  # so that nothing under the real ~/.aws is read
            AWS_ACCESS_KEY_ID=access_key or self.gateway.access_key,
            AWS_SECRET_ACCESS_KEY=secret_key or self.gateway.secret_key,
            AWS_DEFAULT_REGION=REGION,
            AWS_CONFIG_FILE=str(self.config_file),
            AWS_SHARED_CREDENTIALS_FILE=str(self.home / "no-credentials"),
            AWS_EC2_METADATA_DISABLED="true",
            AWS_PAGER="",
        )
        return env

    def __call__(self, *args: str, check: bool = True, input: bytes | None = None,
                 access_key: str | None = None, secret_key: str | None = None,
                 cwd: Path | None = None, timeout: float = 300) -> CliResult:
        cmd = [self.exe, "--endpoint-url", self.gateway.endpoint, *args]
        p = subprocess.run(cmd, input=input, capture_output=True, cwd=cwd, timeout=timeout,
                           env=self.env(access_key, secret_key))
        result = CliResult(p.returncode, p.stdout, p.stderr.decode(errors="replace"))
        if check and p.returncode != 0:
            pytest.fail(f"{' '.join(args)} exited with {p.returncode}:\n{result.stderr}",
                        pytrace=False)
        return result


@pytest.fixture(scope="session")
def aws(gateway, tmp_path_factory):
    """aws("s3", "ls", ...) runs `aws --endpoint-url <gateway> s3 ls ...`."""
    return AwsCli(gateway, tmp_path_factory.mktemp("aws-cli"))


def last_lines(text: str, n: int = 5) -> str:
    """The end of a tool's output on one line, for a skip or failure reason."""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-n:])


def maven_classpath(pom: Path) -> str:
    """The classpath of `pom`'s dependencies, as Maven resolves it (downloading into its local
    repository, outside the clone, the first time). Skips the calling test when Java or Maven
    is missing or the dependencies cannot be resolved."""
    for tool in ("mvn", "java", "javac"):
        if shutil.which(tool) is None:
            pytest.skip(f"{pom.relative_to(REPO)} needs {tool}, which is not on PATH")
    with tempfile.TemporaryDirectory(prefix="sift-maven-") as tmp:
        out = Path(tmp) / "classpath"
        run = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(pom), "dependency:build-classpath",
             f"-Dmdep.outputFile={out}"],
            capture_output=True, text=True, timeout=900)
        if run.returncode != 0 or not out.exists():
            pytest.skip(f"Maven could not resolve {pom.relative_to(REPO)}: "
                        + last_lines(run.stdout + run.stderr))
        return out.read_text().strip()
