"""Shared provider TLS contexts (`hermes/compat/tls.py`, issue 14) on the installed hermes-agent.

hermes-agent builds an SSL context, loading the whole CA bundle, for every provider client — one per provider call.
With `api_server.agents.share_tls_contexts` (the default) one context per CA bundle serves them all. What must hold:
Hermes still decides which bundle (and `ssl_verify: false` stays insecure), a replaced bundle gets a new context, the
shared context verifies certificates (a server signed by another CA is refused), Hermes' bundle check still refuses a
broken bundle, and a real gateway builds its contexts once instead of once a provider call.

The in-process tests install the sharing into this pytest process for good (as the runtime does, once per process):
every context Hermes hands out afterwards is one of the shared ones, which is the behaviour under test.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from hermes_api_plugin.hermes import compat
from tests.live import LiveGateway, start_gateway

from .conftest import HomeFactory
from .support import http

CA_VARIABLES = ("HERMES_CA_BUNDLE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_DIR")


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """hermes-agent's `agent.ssl_verify` with sharing installed, and no CA variable of this machine in the way."""
    for name in CA_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    compat.tls.share_tls_contexts()
    assert compat.tls.tls_stats().shared
    import agent.ssl_verify

    yield agent.ssl_verify


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _authority(folder: Path, name: str) -> tuple[Path, ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA: its PEM file, key and certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    path = folder / f"{name}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path, key, cert


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    """An HTTPS server on 127.0.0.1 whose certificate the CA in the first path signed; the second path is another
    CA's bundle. Yields (url, its CA bundle, a foreign CA bundle)."""
    ca_path, ca_key, ca_cert = _authority(tmp_path, "test-ca")
    foreign_path, _, _ = _authority(tmp_path, "foreign-ca")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "server.pem", tmp_path / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )

    class Hello(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Hello)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/", ca_path, foreign_path
    server.shutdown()
    server.server_close()


def test_one_context_per_ca_file_until_the_file_changes(shared: object, https_server: tuple[str, Path, Path]) -> None:
    _, bundle, foreign = https_server
    resolve = shared.resolve_httpx_verify  # type: ignore[attr-defined]
    first = resolve(ca_bundle=str(bundle))
    assert isinstance(first, ssl.SSLContext)
    assert resolve(ca_bundle=str(bundle)) is first
    assert resolve(ca_bundle=str(foreign)) is not first  # another bundle, another context
    bundle.write_bytes(bundle.read_bytes() + foreign.read_bytes())  # the file replaced: a new size and mtime
    again = resolve(ca_bundle=str(bundle))
    assert again is not first and len(again.get_ca_certs()) == 2


def test_hermes_still_decides_which_bundle_and_insecure_stays_insecure(
    shared: object, https_server: tuple[str, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, bundle, foreign = https_server
    resolve = shared.resolve_httpx_verify  # type: ignore[attr-defined]
    assert resolve(ssl_verify=False) is False
    monkeypatch.setenv("HERMES_CA_BUNDLE", str(bundle))
    from_env = resolve()
    assert from_env is resolve(ca_bundle=str(bundle))  # the variable names the same file: the same context
    assert resolve(ca_bundle=str(foreign)) is not from_env  # an explicit ssl_ca_cert wins over the variable, as before


def test_default_verification_is_one_shared_context_that_still_verifies(
    shared: object, https_server: tuple[str, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    url, bundle, foreign = https_server
    resolve = shared.resolve_httpx_verify  # type: ignore[attr-defined]
    default = resolve()
    assert isinstance(default, ssl.SSLContext) and resolve() is default
    assert default.verify_mode is ssl.CERT_REQUIRED and default.check_hostname
    with httpx.Client(verify=default) as client, pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        client.get(url)  # certifi's roots do not know the test CA
    with httpx.Client(verify=resolve(ca_bundle=str(foreign))) as client, pytest.raises(httpx.ConnectError):
        client.get(url)
    with httpx.Client(verify=resolve(ca_bundle=str(bundle))) as client:
        assert client.get(url).text == "ok"
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))  # httpx's own variable: a default context of its own
    with httpx.Client(verify=resolve(ca_bundle=None)) as client:
        assert client.get(url).text == "ok"


def test_hermes_bundle_check_still_refuses_a_broken_bundle(
    shared: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.ssl_guard import SSLConfigurationError, verify_ca_bundle

    broken = tmp_path / "broken.pem"
    broken.write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n" * 40)
    monkeypatch.setenv("SSL_CERT_FILE", str(broken))
    for _ in range(2):  # a failed build is not remembered
        with pytest.raises(SSLConfigurationError):
            verify_ca_bundle()


def _agents(gateway: LiveGateway) -> dict[str, Any]:
    return dict(http(gateway, "GET", "/health/detailed")["api_server"]["agents"])


@pytest.mark.parametrize("share", [True, False], ids=["shared", "as-shipped"])
def test_a_gateway_builds_its_provider_contexts_once(hermes_home: HomeFactory, share: bool) -> None:
    """As shipped: every per-call saving of `api_server.agents` off (the config copies and request bodies too)."""
    fast = {"share_tls_contexts": share, "fast_config_copies": share, "fast_request_bodies": share}
    gateway = start_gateway(hermes_home(api_server={"agents": fast}), timeout=60)
    try:
        counts = []
        for _ in range(3):  # three conversations, each a fresh agent and two provider calls (a tool, then text)
            session_id = f"tls-{uuid.uuid4().hex[:10]}"
            http(gateway, "POST", "/api/sessions", {"id": session_id})
            reply = http(gateway, "POST", f"/api/sessions/{session_id}/chat", {"message": "run a command"})
            assert reply["status"] == "completed", reply
            agents = _agents(gateway)
            assert agents["fast_config_copies"] is agents["fast_request_bodies"] is share, agents
            counts.append(agents["tls_contexts"])
    finally:
        gateway.stop()
    if not share:
        assert counts[-1] == {"shared": False, "built": 0, "reused": 0}
        return
    assert all(c["shared"] for c in counts)
    assert counts[1]["built"] == counts[2]["built"] == counts[0]["built"] > 0, counts  # none after the first turn
    assert counts[2]["reused"] > counts[1]["reused"] > counts[0]["reused"], counts
