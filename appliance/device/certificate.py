"""The device's own TLS certificate for the admin page: self-signed, made once, kept.

``ensure_certificate`` makes it at the first start (an ECDSA P-256 key, mode
0600, and a certificate naming the device's host name, ``<name>.local``,
localhost and the addresses given) in ``<data dir>/web`` and reuses it after
that, so its SHA-256 ``fingerprint`` stays the same: the HDMI first-boot screen
and ``mirror doctor`` show it, and staff compare it with what the browser
shows before they accept the certificate. A missing or unreadable pair is
made again (a new fingerprint, logged as a warning). Reading the fingerprint
needs only the standard library; making a certificate needs ``cryptography``.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import logging
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appliance.errors import ConfigError, OutputError
from appliance.fileio import atomic_write_bytes, keep_private

logger = logging.getLogger(__name__)

CERT_NAME = "tls-cert.pem"
KEY_NAME = "tls-key.pem"
KEY_MODE = 0o600
VALID_DAYS = 3650  # a self-signed certificate is checked by its fingerprint, not its dates


@dataclass(frozen=True)
class DeviceCertificate:
    """The certificate and key files and the certificate's SHA-256 fingerprint."""

    cert_path: Path
    key_path: Path
    fingerprint: str

    def server_context(self) -> ssl.SSLContext:
        """A TLS 1.2+ server context with this certificate."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.cert_path, self.key_path)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load the admin page's certificate: {exc}") from exc
        return context


def fingerprint_of(pem: str) -> str:
    """The SHA-256 fingerprint of a PEM certificate as browsers show it: ``AB:CD:...``."""
    digest = hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


def read_fingerprint(directory: Path) -> str | None:
    """The fingerprint of the certificate in ``directory``, or None when there is none yet."""
    try:
        return fingerprint_of((directory / CERT_NAME).read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None


def ensure_certificate(directory: Path, addresses: Iterable[str] = ()) -> DeviceCertificate:
    """The certificate in ``directory``; made (with a new key) when missing or unreadable."""
    cert_path, key_path = directory / CERT_NAME, directory / KEY_NAME
    fingerprint = read_fingerprint(directory)
    if fingerprint is not None and key_path.exists():
        keep_private(key_path, "TLS key")
        return DeviceCertificate(cert_path, key_path, fingerprint)
    if cert_path.exists() or key_path.exists():
        logger.warning(
            "the admin page's certificate in %s is incomplete; making a new one", directory
        )
    key_pem, cert_pem = _self_signed(socket.gethostname(), addresses)
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise OutputError(f"cannot write {directory}: {exc.strerror or exc}") from exc
    atomic_write_bytes(key_path, key_pem, KEY_MODE)
    atomic_write_bytes(cert_path, cert_pem, 0o644)
    fingerprint = fingerprint_of(cert_pem.decode("ascii"))
    logger.info("made the admin page's certificate %s (SHA-256 %s)", cert_path, fingerprint)
    return DeviceCertificate(cert_path, key_path, fingerprint)


def _self_signed(hostname: str, addresses: Iterable[str]) -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, hostname[:64] or "face-mirror"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Face-swap mirror (self-signed)"),
        ]
    )
    dns = {hostname, f"{hostname}.local", "localhost"} if hostname else {"localhost"}
    ips = {ipaddress.ip_address(a) for a in ("127.0.0.1", "::1", *addresses)}
    alt: list[x509.GeneralName] = [x509.DNSName(d) for d in sorted(dns)]
    alt += [x509.IPAddress(ip) for ip in sorted(ips, key=str) if not ip.is_unspecified]
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_key_usage(), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return key_pem, cert.public_bytes(serialization.Encoding.PEM)


def _key_usage() -> Any:
    from cryptography import x509

    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=False,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )
