# SPDX-License-Identifier: Apache-2.0
"""Per-version constants: QUIC v1 (RFC 9000/9001) and QUIC v2 (RFC 9369).

v2 differs from v1, as far as packet protection is concerned, only in the
values collected here: the Initial salt, the prefix of the HKDF labels, the
long-header packet-type codes and the Retry integrity key/nonce.
"""

from __future__ import annotations

VERSION_1 = 0x00000001
VERSION_2 = 0x6B3343CF
VERSION_NEGOTIATION = 0x00000000

SUPPORTED_VERSIONS = (VERSION_1, VERSION_2)

# RFC 9001 §5.2 / RFC 9369 §3.3.1
INITIAL_SALT = {
    VERSION_1: bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a"),
    VERSION_2: bytes.fromhex("0dede3def700a6db819381be6e269dcbf9bd2ed9"),
}

# RFC 9001 §5.1, §6.1 / RFC 9369 §3.3.2: "quic key" vs "quicv2 key", etc.
LABEL_PREFIX = {
    VERSION_1: "quic",
    VERSION_2: "quicv2",
}

# RFC 9001 §5.8 / RFC 9369 §3.3.3: fixed AES-128-GCM key and nonce for the
# Retry Integrity Tag.
RETRY_KEY = {
    VERSION_1: bytes.fromhex("be0c690b9f66575a1d766b54e368c84e"),
    VERSION_2: bytes.fromhex("8fb4b01b56ac48e260fbcbcead7ccc92"),
}
RETRY_NONCE = {
    VERSION_1: bytes.fromhex("461599d35d632bf2239825bb"),
    VERSION_2: bytes.fromhex("d86969bc2d7c6d9990efb04a"),
}

# Long-header Packet Type field (two bits of byte 0, mask 0x30).
# RFC 9000 §17.2 Table 5 / RFC 9369 §3.2.
LONG_TYPE_NAMES = {
    VERSION_1: {0b00: "initial", 0b01: "0rtt", 0b10: "handshake", 0b11: "retry"},
    VERSION_2: {0b01: "initial", 0b10: "0rtt", 0b11: "handshake", 0b00: "retry"},
}
LONG_TYPE_CODES = {
    v: {name: code for code, name in names.items()} for v, names in LONG_TYPE_NAMES.items()
}

# Long-header packet types that carry a Length, a Packet Number and an
# AEAD-protected payload.
PROTECTED_LONG_TYPES = ("initial", "0rtt", "handshake")


def check_version(version: int) -> int:
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"unsupported QUIC version 0x{version:08x}; "
            f"expected 0x{VERSION_1:08x} or 0x{VERSION_2:08x}"
        )
    return version
