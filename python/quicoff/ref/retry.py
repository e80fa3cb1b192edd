# SPDX-License-Identifier: Apache-2.0
"""Retry Integrity Tag (RFC 9001 §5.8, RFC 9369 §3.3.3).

The tag is the AES-128-GCM tag, under a fixed per-version key and nonce, of
an empty plaintext whose associated data is the Retry pseudo-packet:
ODCID Length (1 byte) || Original Destination Connection ID || the Retry
packet without its tag.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .versions import RETRY_KEY, RETRY_NONCE, check_version


def retry_integrity_tag(odcid: bytes, retry_without_tag: bytes, version: int = 1) -> bytes:
    check_version(version)
    if len(odcid) > 255:
        raise ValueError("ODCID too long")
    pseudo = bytes([len(odcid)]) + odcid + bytes(retry_without_tag)
    return AESGCM(RETRY_KEY[version]).encrypt(RETRY_NONCE[version], b"", pseudo)
