# SPDX-License-Identifier: Apache-2.0
"""quicoff.ref -- independent pure-Python reference model of QUIC packet
protection (RFC 9000 §17, RFC 9001 §5/§6, RFC 9369), the golden model that
libquicoff, the DPDK application and the FPGA pipeline are checked against.

Written for exactness and readability, not speed. Primitives come from the
``cryptography`` package only.

Suites: "aes-128-gcm", "aes-256-gcm", "aes-128-ccm", "chacha20-poly1305".
Versions: 1 (VERSION_1) and 0x6b3343cf (VERSION_2).
"""

from .errors import AuthFailed, Malformed, RefError
from .header import (
    MAX_CID_LEN,
    PACKET_TYPES,
    HeaderInfo,
    build_long_header,
    build_short_header,
    is_padding,
    parse_header,
    split_coalesced,
    walk_coalesced,
)
from .hp import hp_mask
from .keys import (
    PacketKeys,
    derive_packet_keys,
    hkdf_expand,
    hkdf_expand_label,
    hkdf_extract,
    initial_keys,
    initial_secrets,
    next_packet_keys,
    next_secret,
)
from .nonce import NONCE_LAYOUTS, nonce
from .pn import PN_MAX, decode_pn, encode_pn_len, truncate_pn
from .protect import MIN_PN_PLUS_PAYLOAD, Unprotected, protect, unprotect
from .retry import retry_integrity_tag
from .suites import SUITES, TAG_LEN, secret_len
from .varint import VARINT_MAX, decode_varint, encode_varint, varint_size
from .versions import INITIAL_SALT, SUPPORTED_VERSIONS, VERSION_1, VERSION_2, VERSION_NEGOTIATION

SUITE_NAMES = tuple(SUITES)

__all__ = [
    "AuthFailed",
    "Malformed",
    "RefError",
    "HeaderInfo",
    "MAX_CID_LEN",
    "PACKET_TYPES",
    "build_long_header",
    "build_short_header",
    "is_padding",
    "parse_header",
    "split_coalesced",
    "walk_coalesced",
    "hp_mask",
    "PacketKeys",
    "derive_packet_keys",
    "hkdf_expand",
    "hkdf_expand_label",
    "hkdf_extract",
    "initial_keys",
    "initial_secrets",
    "next_packet_keys",
    "next_secret",
    "NONCE_LAYOUTS",
    "nonce",
    "PN_MAX",
    "decode_pn",
    "encode_pn_len",
    "truncate_pn",
    "MIN_PN_PLUS_PAYLOAD",
    "Unprotected",
    "protect",
    "unprotect",
    "retry_integrity_tag",
    "SUITES",
    "SUITE_NAMES",
    "TAG_LEN",
    "secret_len",
    "VARINT_MAX",
    "decode_varint",
    "encode_varint",
    "varint_size",
    "INITIAL_SALT",
    "SUPPORTED_VERSIONS",
    "VERSION_1",
    "VERSION_2",
    "VERSION_NEGOTIATION",
]
