# SPDX-License-Identifier: Apache-2.0
"""Key derivation: HKDF (RFC 5869), HKDF-Expand-Label (RFC 8446 §7.1),
QUIC packet-protection keys (RFC 9001 §5.1), Initial secrets (§5.2) and key
update (§6.1), with the QUIC v2 labels and salt (RFC 9369 §3.3).

HKDF is written out from RFC 5869 on top of HMAC, so that each step can be
read against the RFC.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes, hmac

from .suites import IV_LEN, get_suite
from .versions import INITIAL_SALT, LABEL_PREFIX, check_version


@dataclass(frozen=True)
class PacketKeys:
    """Keys for one direction and one key phase of one packet number space."""

    key: bytes  # AEAD key
    iv: bytes  # 12-byte AEAD IV, XORed with the packet number for the nonce
    hp: bytes  # header-protection key

    def __repr__(self) -> str:  # hex is what people compare against RFCs
        return f"PacketKeys(key={self.key.hex()}, iv={self.iv.hex()}, hp={self.hp.hex()})"


def _hmac(hash_alg: hashes.HashAlgorithm, key: bytes, data: bytes) -> bytes:
    h = hmac.HMAC(key, hash_alg)
    h.update(data)
    return h.finalize()


def hkdf_extract(salt: bytes, ikm: bytes, hash_alg: hashes.HashAlgorithm | None = None) -> bytes:
    """RFC 5869 §2.2: PRK = HMAC-Hash(salt, IKM)."""
    hash_alg = hash_alg or hashes.SHA256()
    return _hmac(hash_alg, salt, ikm)


def hkdf_expand(
    prk: bytes, info: bytes, length: int, hash_alg: hashes.HashAlgorithm | None = None
) -> bytes:
    """RFC 5869 §2.3: T(i) = HMAC-Hash(PRK, T(i-1) | info | i); OKM = T(1)|T(2)|..."""
    hash_alg = hash_alg or hashes.SHA256()
    if length > 255 * hash_alg.digest_size:
        raise ValueError("HKDF-Expand: length too large")
    okm = b""
    block = b""
    counter = 1
    while len(okm) < length:
        block = _hmac(hash_alg, prk, block + info + bytes([counter]))
        okm += block
        counter += 1
    return okm[:length]


def hkdf_label(label: str | bytes, context: bytes, length: int) -> bytes:
    """The serialized HkdfLabel structure of RFC 8446 §7.1.

    struct { uint16 length; opaque label<7..255> = "tls13 " + Label;
             opaque context<0..255>; }
    """
    if isinstance(label, str):
        label = label.encode("ascii")
    full = b"tls13 " + label
    if not 7 <= len(full) <= 255 or len(context) > 255 or not 0 <= length < 65536:
        raise ValueError("HkdfLabel field out of range")
    return length.to_bytes(2, "big") + bytes([len(full)]) + full + bytes([len(context)]) + context


def hkdf_expand_label(
    secret: bytes,
    label: str | bytes,
    context: bytes,
    length: int,
    hash_alg: hashes.HashAlgorithm | None = None,
) -> bytes:
    """RFC 8446 §7.1 HKDF-Expand-Label(Secret, Label, Context, Length)."""
    return hkdf_expand(secret, hkdf_label(label, context, length), length, hash_alg)


def _check_secret(suite: str, secret: bytes) -> None:
    s = get_suite(suite)
    if len(secret) != s.secret_len:
        raise ValueError(f"{suite} secrets are {s.secret_len} bytes, got {len(secret)}")


def derive_packet_keys(suite: str, secret: bytes, version: int = 1) -> PacketKeys:
    """RFC 9001 §5.1 (RFC 9369 §3.3.2 for v2): key, iv and hp from a secret.

    key = HKDF-Expand-Label(secret, "quic key", "", key_len)
    iv  = HKDF-Expand-Label(secret, "quic iv",  "", 12)
    hp  = HKDF-Expand-Label(secret, "quic hp",  "", key_len)
    with "quicv2 ..." labels for QUIC v2.
    """
    s = get_suite(suite)
    _check_secret(suite, secret)
    prefix = LABEL_PREFIX[check_version(version)]
    h = s.hash_algorithm()
    return PacketKeys(
        key=hkdf_expand_label(secret, f"{prefix} key", b"", s.key_len, h),
        iv=hkdf_expand_label(secret, f"{prefix} iv", b"", IV_LEN, h),
        hp=hkdf_expand_label(secret, f"{prefix} hp", b"", s.key_len, h),
    )


def next_secret(suite: str, secret: bytes, version: int = 1) -> bytes:
    """RFC 9001 §6.1 key update: HKDF-Expand-Label(secret, "quic ku", "", Hash.length).

    The header-protection key is *not* updated (RFC 9001 §6.1): callers must
    keep the hp of the first key phase.
    """
    s = get_suite(suite)
    _check_secret(suite, secret)
    prefix = LABEL_PREFIX[check_version(version)]
    return hkdf_expand_label(secret, f"{prefix} ku", b"", s.secret_len, s.hash_algorithm())


def initial_secrets(dcid: bytes, version: int = 1) -> tuple[bytes, bytes]:
    """RFC 9001 §5.2: (client_initial_secret, server_initial_secret).

    initial_secret = HKDF-Extract(initial_salt, client_dst_connection_id)
    client = HKDF-Expand-Label(initial_secret, "client in", "", 32)
    server = HKDF-Expand-Label(initial_secret, "server in", "", 32)
    The "client in"/"server in" labels are the same for v2; only the salt
    changes.
    """
    salt = INITIAL_SALT[check_version(version)]
    h = hashes.SHA256()
    initial = hkdf_extract(salt, dcid, h)
    return (
        hkdf_expand_label(initial, "client in", b"", 32, h),
        hkdf_expand_label(initial, "server in", b"", 32, h),
    )


def initial_keys(dcid: bytes, version: int = 1) -> tuple[PacketKeys, PacketKeys]:
    """(client, server) Initial packet keys; Initial packets use AES-128-GCM."""
    client, server = initial_secrets(dcid, version)
    return (
        derive_packet_keys("aes-128-gcm", client, version),
        derive_packet_keys("aes-128-gcm", server, version),
    )


def next_packet_keys(
    suite: str, secret: bytes, keys: PacketKeys, version: int = 1
) -> tuple[bytes, PacketKeys]:
    """One key update (RFC 9001 §6.1): returns ``(next_secret, next_keys)``
    where ``next_keys`` has the new key and iv and keeps ``keys.hp``."""
    new_secret = next_secret(suite, secret, version)
    new = derive_packet_keys(suite, new_secret, version)
    return new_secret, PacketKeys(key=new.key, iv=new.iv, hp=keys.hp)
