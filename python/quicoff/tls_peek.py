# SPDX-License-Identifier: Apache-2.0
"""Just enough TLS 1.3 to follow a QUIC handshake from the outside.

QUIC carries the TLS handshake in CRYPTO frames (RFC 9001 §4).  To decrypt a
capture we need two facts from it:

* the ClientHello's ``random`` (the key log's lookup key), from the client's
  Initial CRYPTO stream;
* the ServerHello's ``cipher_suite`` (which AEAD protects Handshake and 1-RTT
  packets), from the server's Initial CRYPTO stream.

:func:`peek_client_hello` and :func:`peek_server_hello` take the reassembled
CRYPTO stream prefix (from offset 0) and return None while it is too short.
The random comes after 38 bytes, the cipher suite after at most 76; the
extensions (SNI, ALPN, supported_versions, early_data) are read when the whole
message is there, best effort.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

__all__ = [
    "ClientHelloInfo",
    "ServerHelloInfo",
    "TlsPeekError",
    "peek_client_hello",
    "peek_server_hello",
    "CIPHER_SUITES",
    "suite_name",
    "HRR_RANDOM",
]

HANDSHAKE_CLIENT_HELLO = 1
HANDSHAKE_SERVER_HELLO = 2

#: TLS 1.3 cipher suites (RFC 8446 B.4) -> quicoff suite names.
CIPHER_SUITES = {
    0x1301: "aes-128-gcm",  # TLS_AES_128_GCM_SHA256
    0x1302: "aes-256-gcm",  # TLS_AES_256_GCM_SHA384
    0x1303: "chacha20-poly1305",  # TLS_CHACHA20_POLY1305_SHA256
    0x1304: "aes-128-ccm",  # TLS_AES_128_CCM_SHA256
}

#: ServerHello.random of a HelloRetryRequest (RFC 8446 §4.1.3).
HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")

EXT_SERVER_NAME = 0
EXT_ALPN = 16
EXT_EARLY_DATA = 42
EXT_SUPPORTED_VERSIONS = 43
EXT_QUIC_TRANSPORT_PARAMETERS = 57


class TlsPeekError(ValueError):
    """The CRYPTO stream does not start with the expected handshake message."""


def suite_name(code: int) -> Optional[str]:
    return CIPHER_SUITES.get(code)


@dataclass
class ClientHelloInfo:
    random: bytes
    cipher_suites: List[int] = field(default_factory=list)
    server_name: Optional[str] = None
    alpn: List[bytes] = field(default_factory=list)
    early_data: bool = False  # the client offers 0-RTT
    complete: bool = False  # extensions were read (whole message present)


@dataclass
class ServerHelloInfo:
    random: bytes
    cipher_suite: int
    hello_retry_request: bool = False
    selected_version: Optional[int] = None
    complete: bool = False

    @property
    def suite(self) -> Optional[str]:
        return CIPHER_SUITES.get(self.cipher_suite)


def _handshake_header(data: bytes, expected: int):
    if len(data) < 4:
        return None
    if data[0] != expected:
        raise TlsPeekError(f"handshake message type {data[0]}, expected {expected}")
    length = int.from_bytes(data[1:4], "big")
    return length


class _R:
    def __init__(self, data: bytes, pos: int = 0, end: Optional[int] = None):
        self.d = data
        self.p = pos
        self.end = len(data) if end is None else end

    def need(self, n: int) -> None:
        if self.p + n > self.end:
            raise IndexError

    def u8(self) -> int:
        self.need(1)
        self.p += 1
        return self.d[self.p - 1]

    def u16(self) -> int:
        self.need(2)
        self.p += 2
        return int.from_bytes(self.d[self.p - 2 : self.p], "big")

    def take(self, n: int) -> bytes:
        self.need(n)
        self.p += n
        return bytes(self.d[self.p - n : self.p])

    def vec(self, width: int) -> bytes:
        n = (
            self.u8()
            if width == 1
            else self.u16()
            if width == 2
            else int.from_bytes(self.take(width), "big")
        )
        return self.take(n)


def _extensions(r: _R):
    if r.p >= r.end:
        return []
    block = r.vec(2)
    rr = _R(block)
    out = []
    while rr.p < rr.end:
        ext_type = rr.u16()
        out.append((ext_type, rr.vec(2)))
    return out


def peek_client_hello(data: bytes) -> Optional[ClientHelloInfo]:
    """ClientHello facts from the start of the client's Initial CRYPTO stream."""
    length = _handshake_header(data, HANDSHAKE_CLIENT_HELLO)
    if length is None or len(data) < 4 + 2 + 32:
        return None
    info = ClientHelloInfo(random=bytes(data[6:38]))
    if len(data) < 4 + length:
        return info
    try:
        r = _R(data, 38, 4 + length)
        r.vec(1)  # legacy_session_id
        suites = r.vec(2)
        info.cipher_suites = [
            int.from_bytes(suites[i : i + 2], "big") for i in range(0, len(suites) - 1, 2)
        ]
        r.vec(1)  # legacy_compression_methods
        for ext_type, body in _extensions(r):
            if ext_type == EXT_SERVER_NAME:
                er = _R(body)
                lst = _R(er.vec(2))
                while lst.p < lst.end:
                    name_type = lst.u8()
                    name = lst.vec(2)
                    if name_type == 0:
                        info.server_name = name.decode("ascii", errors="replace")
            elif ext_type == EXT_ALPN:
                er = _R(body)
                lst = _R(er.vec(2))
                while lst.p < lst.end:
                    info.alpn.append(lst.vec(1))
            elif ext_type == EXT_EARLY_DATA:
                info.early_data = True
        info.complete = True
    except IndexError:
        pass
    return info


def peek_server_hello(data: bytes) -> Optional[ServerHelloInfo]:
    """ServerHello facts from the start of the server's Initial CRYPTO stream.

    A HelloRetryRequest (``hello_retry_request`` True) is a ServerHello too;
    its cipher suite is the one the connection will use (RFC 8446 §4.1.4)."""
    length = _handshake_header(data, HANDSHAKE_SERVER_HELLO)
    if length is None:
        return None
    try:
        r = _R(data, 4, min(len(data), 4 + length))
        r.u16()  # legacy_version
        random = r.take(32)
        r.vec(1)  # legacy_session_id_echo
        suite = r.u16()
    except IndexError:
        return None
    info = ServerHelloInfo(
        random=random, cipher_suite=suite, hello_retry_request=random == HRR_RANDOM
    )
    if len(data) >= 4 + length:
        try:
            r.u8()  # legacy_compression_method
            for ext_type, body in _extensions(r):
                if ext_type == EXT_SUPPORTED_VERSIONS and len(body) == 2:
                    info.selected_version = int.from_bytes(body, "big")
            info.complete = True
        except IndexError:
            pass
    return info


def handshake_messages(data: bytes):
    """Yields (type, body) of the complete handshake messages at the start of data."""
    pos = 0
    while pos + 4 <= len(data):
        length = int.from_bytes(data[pos + 1 : pos + 4], "big")
        if pos + 4 + length > len(data):
            return
        yield data[pos], data[pos + 4 : pos + 4 + length]
        pos += 4 + length
