# SPDX-License-Identifier: Apache-2.0
"""The four AEAD cipher suites QUIC uses (RFC 9001 §5.3, §5.4).

Each TLS 1.3 cipher suite fixes an AEAD, a header-protection algorithm and
the hash used by HKDF. ``secret_len`` is the hash output length, which is
also the length of every traffic secret of that suite.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes


@dataclass(frozen=True)
class Suite:
    name: str
    key_len: int  # AEAD key and header-protection key length (bytes)
    hash_name: str  # "sha256" or "sha384"
    hp: str  # "aes" (AES-ECB, §5.4.3) or "chacha20" (§5.4.4)

    def hash_algorithm(self) -> hashes.HashAlgorithm:
        return hashes.SHA384() if self.hash_name == "sha384" else hashes.SHA256()

    @property
    def secret_len(self) -> int:
        return 48 if self.hash_name == "sha384" else 32


IV_LEN = 12  # every QUIC AEAD uses a 96-bit nonce
TAG_LEN = 16  # every QUIC AEAD has a 128-bit tag
SAMPLE_LEN = 16

SUITES: dict[str, Suite] = {
    "aes-128-gcm": Suite("aes-128-gcm", 16, "sha256", "aes"),
    "aes-256-gcm": Suite("aes-256-gcm", 32, "sha384", "aes"),
    "aes-128-ccm": Suite("aes-128-ccm", 16, "sha256", "aes"),
    "chacha20-poly1305": Suite("chacha20-poly1305", 32, "sha256", "chacha20"),
}


def get_suite(name: str) -> Suite:
    try:
        return SUITES[name]
    except KeyError:
        raise ValueError(f"unknown suite {name!r}; expected one of {sorted(SUITES)}") from None


def secret_len(suite: str) -> int:
    """Length in bytes of a traffic secret for ``suite`` (the hash length)."""
    return get_suite(suite).secret_len
