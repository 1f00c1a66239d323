"""``mirror image keygen --out DIR``: the installer's update-signing key and certificate.

One pair per installer (or fleet), made once and kept: ``mirror image build
--signing-key DIR/update-key.pem --signing-cert DIR/update-cert.pem`` signs each build's
bundle with the key and puts only the certificate into the image, as RAUC's keyring.
A mirror flashed with one certificate installs only bundles signed by its key. The key
is written 0600 and never overwritten: losing it means no more updates for those cards,
and replacing it silently would make every flashed card refuse the next bundle.
The pair is an ECDSA P-256 key and a self-signed certificate (``cryptography``).
"""

from __future__ import annotations

import datetime
import logging
import os
from pathlib import Path

from provisioning.errors import ImageError

logger = logging.getLogger(__name__)

KEY_NAME = "update-key.pem"
CERT_NAME = "update-cert.pem"
VALID_DAYS = 20 * 365  # the cards trust it for as long as they run


def make_signing_pair(out: Path, name: str = "face-mirror updates") -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key_path, cert_path = out / KEY_NAME, out / CERT_NAME
    for path in (key_path, cert_path):
        if path.exists():
            raise ImageError(f"{path} exists: a signing pair is made once and kept")
    out.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    usage = x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    descriptor = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(pem)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    logger.info("signing pair made in %s", out)
    return key_path, cert_path
