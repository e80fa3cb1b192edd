# SPDX-License-Identifier: Apache-2.0
"""Payload protection AEADs (RFC 9001 §5.3): the TLS 1.3 AEADs with a
16-byte tag; the associated data is the plaintext header."""

from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305

from .errors import AuthFailed
from .suites import IV_LEN, TAG_LEN, get_suite


def _aead(suite: str, key: bytes) -> AESGCM | AESCCM | ChaCha20Poly1305:
    s = get_suite(suite)
    if len(key) != s.key_len:
        raise ValueError(f"{suite} key is {s.key_len} bytes, got {len(key)}")
    if suite in ("aes-128-gcm", "aes-256-gcm"):
        return AESGCM(key)
    if suite == "aes-128-ccm":
        return AESCCM(key, tag_length=TAG_LEN)
    return ChaCha20Poly1305(key)


def seal(suite: str, key: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
    """Returns ciphertext || 16-byte tag."""
    assert len(nonce) == IV_LEN
    return _aead(suite, key).encrypt(nonce, plaintext, aad)


def open_(suite: str, key: bytes, nonce: bytes, aad: bytes, ciphertext: bytes) -> bytes:
    """Inverse of :func:`seal`; raises :class:`AuthFailed`."""
    assert len(nonce) == IV_LEN
    if len(ciphertext) < TAG_LEN:
        raise AuthFailed("ciphertext shorter than the tag")
    try:
        return _aead(suite, key).decrypt(nonce, ciphertext, aad)
    except InvalidTag:
        raise AuthFailed("AEAD tag mismatch") from None
