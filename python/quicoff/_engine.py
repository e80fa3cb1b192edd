# SPDX-License-Identifier: Apache-2.0
"""Pythonic wrapper around libquicoff (the cffi module ``quicoff._quicoff``).

Everything here is a thin layer over include/quicoff/quicoff.h: names and
status strings are the C library's own (quicoff_status_name), counters keep
the C struct field names.
"""

from __future__ import annotations

import functools
import ipaddress
import threading
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    cast,
)

from ._quicoff import ffi, lib

__all__ = [
    "SUITES",
    "LEVELS",
    "DIRECTIONS",
    "NONCE_LAYOUTS",
    "FAIL_ACTIONS",
    "PN_NONE",
    "QuicoffError",
    "EngineClosedError",
    "PacketKeys",
    "Result",
    "Engine",
    "status_name",
    "suite_key_len",
    "suite_secret_len",
    "derive_packet_keys",
    "derive_next_secret",
    "initial_secrets",
    "initial_keys",
    "pn_decode",
    "pn_encode_len",
]

UINT64_MAX = (1 << 64) - 1
#: "no packet number yet" (largest_pn) as the C library spells it: UINT64_MAX.
PN_NONE = UINT64_MAX
#: the largest QUIC packet number (RFC 9000 §12.3); largest_pn above it (other
#: than PN_NONE) is refused with invalid_argument.
PN_MAX = (1 << 62) - 1
CONN_INVALID = int(lib.QUICOFF_CONN_INVALID)
TAG_LEN = lib.QUICOFF_TAG_LEN
IV_LEN = lib.QUICOFF_IV_LEN
MAX_CID_LEN = lib.QUICOFF_MAX_CID_LEN
VERSION_1 = int(lib.QUICOFF_VERSION_1)
VERSION_2 = int(lib.QUICOFF_VERSION_2)

SUITES = ("aes-128-gcm", "aes-256-gcm", "aes-128-ccm", "chacha20-poly1305")
_SUITE_IDS = {
    "aes-128-gcm": lib.QUICOFF_AES_128_GCM,
    "aes-256-gcm": lib.QUICOFF_AES_256_GCM,
    "aes-128-ccm": lib.QUICOFF_AES_128_CCM,
    "chacha20-poly1305": lib.QUICOFF_CHACHA20_POLY1305,
}
_SUITE_NAMES = {v: k for k, v in _SUITE_IDS.items()}

LEVELS = ("1rtt", "initial", "0rtt", "handshake")
_LEVEL_IDS = {
    "1rtt": lib.QUICOFF_LEVEL_ONE_RTT,
    "initial": lib.QUICOFF_LEVEL_INITIAL,
    "0rtt": lib.QUICOFF_LEVEL_ZERO_RTT,
    "handshake": lib.QUICOFF_LEVEL_HANDSHAKE,
}
_LEVEL_ALIASES = {
    "one_rtt": "1rtt",
    "1-rtt": "1rtt",
    "application": "1rtt",
    "zero_rtt": "0rtt",
    "0-rtt": "0rtt",
}
_LEVEL_NAMES = {v: k for k, v in _LEVEL_IDS.items()}

DIRECTIONS = ("tx", "rx")
_DIR_IDS = {"tx": lib.QUICOFF_DIR_TX, "rx": lib.QUICOFF_DIR_RX}

NONCE_LAYOUTS = ("rfc9001", "multipath", "multipath-path-id-le")
_NONCE_IDS = {
    "rfc9001": lib.QUICOFF_NONCE_RFC9001,
    "multipath": lib.QUICOFF_NONCE_MULTIPATH,
    "multipath-path-id-le": lib.QUICOFF_NONCE_MULTIPATH_PATH_ID_LE,
}

FAIL_ACTIONS = ("drop", "pass")
_FAIL_IDS = {"drop": lib.QUICOFF_FAIL_DROP, "pass": lib.QUICOFF_FAIL_PASS}

FLAG_KEY_UPDATED = lib.QUICOFF_FLAG_KEY_UPDATED
FLAG_PASS_FAILED = lib.QUICOFF_FLAG_PASS_FAILED
FLAG_LONG_HEADER = lib.QUICOFF_FLAG_LONG_HEADER
FLAG_OLD_KEYS = lib.QUICOFF_FLAG_OLD_KEYS

_STATUS_OK = lib.QUICOFF_OK
_STATUS_USAGE = lib.QUICOFF_USAGE_LIMIT_REACHED


#: a cffi object (struct, pointer or array of the C library); untyped
CData = Any
#: bytes-like arguments (copied before the C library sees them)
Buffer = Union[bytes, bytearray, memoryview]
#: a suite by name ("aes-128-gcm", ...) or by its quicoff_suite_t value
Suite = Union[str, int]
#: a local address: (ip, port), the ip as text or an ipaddress object
Address = Tuple[Union[str, ipaddress.IPv4Address, ipaddress.IPv6Address], int]


class KeyMaterial(Protocol):
    """Anything with .key .iv .hp bytes: PacketKeys, quicoff.ref's keys."""

    @property
    def key(self) -> bytes: ...
    @property
    def iv(self) -> bytes: ...
    @property
    def hp(self) -> bytes: ...


#: packet keys: a PacketKeys (or any KeyMaterial) or a (key, iv, hp) sequence
Keys = Union[KeyMaterial, Sequence[Buffer]]


def _c_status_name(code: int) -> str:
    p = lib.quicoff_status_name(code)
    return ffi.string(p).decode("ascii") if p != ffi.NULL else "status_%d" % code


#: status code -> stable lower-case name, straight from the C library.
STATUS_NAMES = tuple(_c_status_name(i) for i in range(lib.QUICOFF_STATUS_COUNT))
_STATUS_IDS = {n: i for i, n in enumerate(STATUS_NAMES)}


def status_name(code: int) -> str:
    """Name of a quicoff_status_t value ("ok", "auth_failed", ...)."""
    if 0 <= code < len(STATUS_NAMES):
        return STATUS_NAMES[code]
    return _c_status_name(code)


class QuicoffError(Exception):
    """A libquicoff call returned a status other than ok.

    ``.status`` is the status name (e.g. "unknown_connection"), ``.code`` the
    numeric quicoff_status_t, ``.result`` the Result of a data-path call."""

    code: Optional[int]
    status: str

    def __init__(
        self,
        status: Union[int, str],
        message: Optional[str] = None,
        result: Optional[Result] = None,
    ) -> None:
        if isinstance(status, int):
            self.code = status
            self.status = status_name(status)
        else:
            self.status = str(status)
            self.code = _STATUS_IDS.get(self.status)
        self.result = result
        super().__init__(message or self.status)


class EngineClosedError(ValueError):
    """A call on an Engine after close() ("Engine is closed").

    A ValueError, as it always was (and as I/O on a closed file is)."""

    def __init__(self, message: str = "Engine is closed") -> None:
        super().__init__(message)


class PacketKeys(NamedTuple):
    """Packet protection keys of one key phase (RFC 9001 §5.1)."""

    key: bytes
    iv: bytes
    hp: bytes


# ---------------------------------------------------------------------------
# argument conversion


def _suite_id(suite: Suite) -> int:
    if isinstance(suite, str):
        sid = _SUITE_IDS.get(suite.lower().replace("_", "-"))
        if sid is None:
            raise ValueError("unknown suite %r (one of %s)" % (suite, ", ".join(SUITES)))
        return int(sid)
    if isinstance(suite, int) and not isinstance(suite, bool) and suite in _SUITE_NAMES:
        return suite
    raise ValueError("unknown suite %r (one of %s)" % (suite, ", ".join(SUITES)))


def _choice(
    value: object, table: Mapping[str, int], what: str, aliases: Optional[Mapping[str, str]] = None
) -> int:
    if isinstance(value, str):
        v = value.lower()
        if aliases:
            v = aliases.get(v, v)
        if v in table:
            return table[v]
    raise ValueError("unknown %s %r (one of %s)" % (what, value, ", ".join(table)))


def _version(version: Optional[int]) -> int:
    """1 -> QUIC v1, 2 -> QUIC v2 (RFC 9369); anything else is a wire version."""
    if version is None or version == 1:
        return VERSION_1
    if version == 2:
        return VERSION_2
    if isinstance(version, int) and 0 <= version <= 0xFFFFFFFF:
        return version
    raise ValueError("bad QUIC version %r" % (version,))


def _bytes(value: object, what: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("%s must be bytes, not %s" % (what, type(value).__name__))


def _u64(value: Optional[int], what: str) -> int:
    if value is None:
        return UINT64_MAX
    value = int(value)
    if not 0 <= value <= UINT64_MAX:
        raise ValueError("%s out of range: %d" % (what, value))
    return value


def _split_keys(keys: Keys) -> Tuple[bytes, bytes, bytes]:
    key: object
    iv: object
    hp: object
    if isinstance(keys, (tuple, list)) and not hasattr(keys, "key"):
        if len(keys) != 3:
            raise ValueError("keys must be (key, iv, hp)")
        key, iv, hp = keys
    else:
        try:
            named = cast(KeyMaterial, keys)
            key, iv, hp = named.key, named.iv, named.hp
        except AttributeError:
            raise TypeError("keys must have .key .iv .hp or be a (key, iv, hp) tuple") from None
    return _bytes(key, "key"), _bytes(iv, "iv"), _bytes(hp, "hp")


def _fill_keys(dst: CData, keys: Keys, key_len: int) -> None:
    """Copies keys into a struct quicoff_packet_keys (cdata, by field access)."""
    key, iv, hp = _split_keys(keys)
    lens = (key_len,) if key_len else (16, 32)
    if len(key) not in lens or len(hp) != len(key):
        raise ValueError(
            "key and hp must be %s bytes for this suite (got %d and %d)"
            % (" or ".join(map(str, lens)), len(key), len(hp))
        )
    if len(iv) != IV_LEN:
        raise ValueError("iv must be %d bytes (got %d)" % (IV_LEN, len(iv)))
    ffi.memmove(dst.key, key, len(key))
    ffi.memmove(dst.iv, iv, len(iv))
    ffi.memmove(dst.hp, hp, len(hp))


def _fill_addr(dst: CData, local_addr: Optional[Address]) -> None:
    """Fills a struct quicoff_addr from None or an (ip, port) tuple."""
    if local_addr is None:
        dst.family = 0
        return
    try:
        host, port = local_addr
    except (TypeError, ValueError):
        raise ValueError("local_addr must be an (ip, port) tuple") from None
    ip = ipaddress.ip_address(host)
    port = int(port)
    if not 0 <= port <= 0xFFFF:
        raise ValueError("bad port %r" % (port,))
    packed = ip.packed
    dst.family = 4 if ip.version == 4 else 6
    ffi.memmove(dst.ip, packed, len(packed))
    dst.port = port


def _new_addr(local_addr: Optional[Address]) -> CData:
    """struct quicoff_addr * (or NULL for None)."""
    if local_addr is None:
        return ffi.NULL
    a = ffi.new("struct quicoff_addr *")
    _fill_addr(a, local_addr)
    return a


def _check(status: int, what: Optional[str] = None) -> None:
    if status != _STATUS_OK:
        name = status_name(status)
        raise QuicoffError(status, "%s: %s" % (what, name) if what else name)


def _wipe(*cdatas: Optional[CData]) -> None:
    """Zeroes cffi buffers that held keys or secrets, once the C library has
    copied them (it keeps its own, and zeroes those on remove): so no copy
    outlives the call in memory this module allocated. (The caller's own
    Python bytes objects are immutable and out of reach.)"""
    for c in cdatas:
        if c is not None:
            buf = ffi.buffer(c)
            buf[:] = bytes(len(buf))


# ---------------------------------------------------------------------------
# key schedule and packet numbers


def suite_key_len(suite: Suite) -> int:
    """AEAD (and HP) key length of a suite: 16 or 32."""
    return int(lib.quicoff_suite_key_len(_suite_id(suite)))


def suite_secret_len(suite: Suite) -> int:
    """TLS hash length of a suite: 32 (SHA-256) or 48 (SHA-384)."""
    return int(lib.quicoff_suite_secret_len(_suite_id(suite)))


def derive_packet_keys(suite: Suite, secret: Buffer, version: int = 1) -> PacketKeys:
    """key/iv/hp from a TLS traffic secret (RFC 9001 §5.1; RFC 9369 labels for v2)."""
    sid = _suite_id(suite)
    secret = _bytes(secret, "secret")
    out = ffi.new("struct quicoff_packet_keys *")
    try:
        _check(
            lib.quicoff_derive_packet_keys(
                sid, ffi.from_buffer("uint8_t[]", secret), len(secret), _version(version), out
            ),
            "derive_packet_keys",
        )
        n = int(lib.quicoff_suite_key_len(sid))
        return PacketKeys(
            bytes(ffi.buffer(out.key, n)),
            bytes(ffi.buffer(out.iv, IV_LEN)),
            bytes(ffi.buffer(out.hp, n)),
        )
    finally:
        _wipe(out)


def derive_next_secret(suite: Suite, secret: Buffer, version: int = 1) -> bytes:
    """The next key generation's secret ("quic ku" / "quicv2 ku", RFC 9001 §6.1)."""
    sid = _suite_id(suite)
    secret = _bytes(secret, "secret")
    out = ffi.new("uint8_t[]", lib.QUICOFF_MAX_SECRET_LEN)
    try:
        _check(
            lib.quicoff_derive_next_secret(
                sid, ffi.from_buffer("uint8_t[]", secret), len(secret), _version(version), out
            ),
            "derive_next_secret",
        )
        return bytes(ffi.buffer(out, len(secret)))
    finally:
        _wipe(out)


def initial_secrets(dcid: Buffer, version: int = 1) -> Tuple[bytes, bytes]:
    """(client_secret, server_secret) of the Initial keys (RFC 9001 §5.2)."""
    dcid = _bytes(dcid, "dcid")
    c = ffi.new("uint8_t[32]")
    s = ffi.new("uint8_t[32]")
    try:
        _check(
            lib.quicoff_derive_initial_secrets(
                ffi.from_buffer("uint8_t[]", dcid), len(dcid), _version(version), c, s
            ),
            "initial_secrets",
        )
        return bytes(ffi.buffer(c)), bytes(ffi.buffer(s))
    finally:
        _wipe(c, s)


def initial_keys(dcid: Buffer, version: int = 1) -> Tuple[PacketKeys, PacketKeys]:
    """(client PacketKeys, server PacketKeys) of the Initial keys (AES-128-GCM)."""
    c, s = initial_secrets(dcid, version)
    return (
        derive_packet_keys("aes-128-gcm", c, version),
        derive_packet_keys("aes-128-gcm", s, version),
    )


def pn_decode(largest: Optional[int], truncated: int, nbits: int) -> int:
    """Full packet number from a truncated one (RFC 9000 A.3); largest None = none yet.

    ValueError unless nbits is 8, 16, 24 or 32, truncated fits in nbits and
    largest is a packet number (at most 2^62 - 1) or None / PN_NONE."""
    nbits = int(nbits)
    if nbits not in (8, 16, 24, 32):
        raise ValueError("nbits must be 8, 16, 24 or 32 (got %d)" % nbits)
    truncated = _u64(truncated, "truncated")
    if truncated >> nbits:
        raise ValueError("truncated %#x does not fit in %d bits" % (truncated, nbits))
    largest = _u64(largest, "largest")
    if largest > PN_MAX and largest != PN_NONE:
        raise ValueError("largest %#x is past the largest packet number 2^62 - 1" % largest)
    return int(lib.quicoff_pn_decode(largest, truncated, nbits))


def pn_encode_len(pn: int, largest_acked: Optional[int] = None) -> int:
    """Bytes (1..4) to encode pn given the largest acknowledged (RFC 9000 A.2)."""
    return int(lib.quicoff_pn_encode_len(_u64(pn, "pn"), _u64(largest_acked, "largest_acked")))


# ---------------------------------------------------------------------------
# results


class Result:
    """Outcome of one packet of a burst (struct quicoff_result, in Python terms).

    Unprotect: ``header`` is the plaintext header with its PN bytes, ``payload``
    the plaintext payload (tag excluded), ``packet`` both; on a failed packet
    they are None, unless the connection's fail action is "pass" (then the
    bytes are as received: protected header, ciphertext and tag).
    Protect: ``packet`` is the protected packet (header, ciphertext, tag),
    ``header`` its protected header and ``payload`` ciphertext + tag; None
    when not ok."""

    __slots__ = (
        "code",
        "status",
        "ok",
        "flags",
        "level",
        "key_phase",
        "pn",
        "pn_len",
        "connection",
        "offset",
        "pn_offset",
        "payload_offset",
        "payload_len",
        "end",
        "header",
        "payload",
        "packet",
    )
    code: int
    status: str
    ok: bool
    flags: int
    level: Union[str, int]  # a name of LEVELS, or the number when it has none
    key_phase: int
    pn: int
    pn_len: int
    connection: Optional[int]
    offset: int
    pn_offset: int
    payload_offset: int
    payload_len: int
    end: int
    header: Optional[bytes]
    payload: Optional[bytes]
    packet: Optional[bytes]

    def __init__(self, r: CData, data: Optional[bytes] = None, protect: bool = False) -> None:
        code = int(r.status)
        self.code = code
        self.status = status_name(code)
        self.ok = code == _STATUS_OK or code == _STATUS_USAGE
        self.flags = int(r.flags)
        self.level = _LEVEL_NAMES.get(int(r.level), int(r.level))
        self.key_phase = int(r.key_phase)
        self.pn = int(r.pn)
        self.pn_len = int(r.pn_len)
        conn = int(r.conn)
        self.connection = None if conn == CONN_INVALID else conn
        self.offset = int(r.hdr_off)
        self.pn_offset = int(r.pn_off)
        self.payload_offset = int(r.payload_off)
        self.payload_len = int(r.payload_len)
        self.end = int(r.packet_end)
        self.header = self.payload = self.packet = None
        if data is None:
            return
        off, poff = self.offset, self.payload_offset
        if protect:
            if self.ok:
                self.packet = data
                if off <= poff <= len(data):
                    self.header = data[off:poff]
                    self.payload = data[poff:]
        elif self.ok:
            pend = poff + self.payload_len
            self.header = data[off:poff]
            self.payload = data[poff:pend]
            self.packet = data[off:pend]
        elif self.flags & FLAG_PASS_FAILED:
            end = self.end if off < self.end <= len(data) else len(data)
            self.packet = data[off:end]
            if off <= poff <= end:
                self.header = data[off:poff]
                self.payload = data[poff:end]

    @property
    def key_updated(self) -> bool:
        return bool(self.flags & FLAG_KEY_UPDATED)

    @property
    def pass_failed(self) -> bool:
        return bool(self.flags & FLAG_PASS_FAILED)

    @property
    def long_header(self) -> bool:
        return bool(self.flags & FLAG_LONG_HEADER)

    @property
    def old_keys(self) -> bool:
        return bool(self.flags & FLAG_OLD_KEYS)

    def __repr__(self) -> str:
        return (
            "<Result %s level=%s pn=%d pn_len=%d key_phase=%d flags=%#x conn=%s "
            "off=%d end=%d>"
            % (
                self.status,
                self.level,
                self.pn,
                self.pn_len,
                self.key_phase,
                self.flags,
                self.connection,
                self.offset,
                self.end,
            )
        )


def _stats_dict(cdata: CData, ctype: str) -> Dict[str, int]:
    return {name: int(getattr(cdata, name)) for name, _ in ffi.typeof(ctype).fields}


# ---------------------------------------------------------------------------
# the engine

_BURST = 64


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _control(method: _Method) -> _Method:
    """Runs a control-path method under the engine's control lock.

    cffi releases the GIL during a C call, so without it close() could destroy
    the table while another thread is inside quicoff_conn_add (a segfault).
    close() takes this lock too; the check here makes every call after close()
    raise EngineClosedError. The data path has its own lock (the worker's)."""

    @functools.wraps(method)
    def locked(self: Engine, *args: Any, **kwargs: Any) -> Any:
        with self._ctl_lock:
            if self._table is None:
                raise EngineClosedError()
            return method(self, *args, **kwargs)

    return cast(_Method, locked)


class Engine:
    """A connection table plus one worker: protect/unprotect from Python.

    Control calls (add/update/remove/find/stats) hold the control lock, so
    close() cannot free the table under them; data-path calls hold the data
    lock, since the one worker belongs to one thread at a time (cffi releases
    the GIL). The two run concurrently, as the C library allows; close()
    takes both. Any call after close() raises EngineClosedError."""

    def __init__(
        self,
        local_cid_len: int = 8,
        backend: Optional[str] = "auto",
        capacity: int = 65536,
        max_workers: int = 0,
    ) -> None:
        self._table: CData = None
        self._worker: CData = None
        self._lock = threading.Lock()  # data path: the worker
        self._ctl_lock = threading.Lock()  # control path: the table (taken before _lock)
        self._conns: Dict[int, int] = {}  # handle -> suite id (for key lengths on update)
        if not 0 <= int(local_cid_len) <= MAX_CID_LEN:
            raise ValueError("local_cid_len must be 0..%d" % MAX_CID_LEN)
        if not 0 < int(capacity) <= 0xFFFFFFFF:
            raise ValueError("capacity must be positive")
        cfg = ffi.new("struct quicoff_table_config *")
        cfg.capacity = int(capacity)
        cfg.local_cid_len = int(local_cid_len)
        cfg.max_workers = int(max_workers)
        name = ffi.new("char[]", backend.encode()) if backend else ffi.NULL
        cfg.backend = name
        err = ffi.new("quicoff_status_t *", _STATUS_OK)
        t = lib.quicoff_table_create(cfg, err)
        if t == ffi.NULL:
            code = err[0] if err[0] != _STATUS_OK else lib.QUICOFF_NO_MEMORY
            raise QuicoffError(code, "table_create(backend=%r): %s" % (backend, status_name(code)))
        self._table = t
        w = lib.quicoff_worker_create(t)
        if w == ffi.NULL:
            lib.quicoff_table_destroy(t)
            self._table = None
            raise QuicoffError(lib.QUICOFF_NO_MEMORY, "worker_create failed")
        self._worker = w
        self.local_cid_len = int(local_cid_len)
        self.capacity = int(capacity)
        self.backend = ffi.string(lib.quicoff_table_backend(t)).decode("ascii")
        self.last_result: Optional[Result] = None
        self._pkts = ffi.new("struct quicoff_pkt[]", _BURST)
        self._res = ffi.new("struct quicoff_result[]", _BURST)
        self._rxbuf = ffi.new("uint8_t[]", 2048)
        self._rxcap = 2048

    # -- lifetime ---------------------------------------------------------

    def close(self) -> None:
        """Destroys worker and table (zeroing every key). Idempotent.

        Waits for the control and data calls under way in other threads."""
        ctl, lock = getattr(self, "_ctl_lock", None), getattr(self, "_lock", None)
        if ctl is None or lock is None:
            return
        with ctl, lock:
            w, t = self._worker, self._table
            self._worker = self._table = None
            if w is not None:
                lib.quicoff_worker_destroy(w)
            if t is not None:
                lib.quicoff_table_destroy(t)
            self._conns = {}

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: modules may be gone
            pass

    @property
    def closed(self) -> bool:
        return self._table is None

    def _t(self) -> CData:
        t = self._table
        if t is None:
            raise EngineClosedError()
        return t

    def __repr__(self) -> str:
        if self._table is None:
            return "<quicoff.Engine closed>"
        return "<quicoff.Engine backend=%s local_cid_len=%d connections=%d>" % (
            self.backend,
            self.local_cid_len,
            len(self._conns),
        )

    # -- control path -----------------------------------------------------

    @_control
    def add_connection(
        self,
        direction: str,
        suite: Suite,
        dcid: Buffer,
        secret: Optional[Buffer] = None,
        keys: Optional[Keys] = None,
        path_id: Optional[int] = None,
        *,
        level: str = "1rtt",
        version: int = 1,
        local_addr: Optional[Address] = None,
        nonce_layout: Optional[str] = None,
        fail_action: str = "drop",
        largest_pn: Optional[int] = None,
        usage_threshold: Optional[int] = 0,
        key_generation: int = 0,
        next_keys: Optional[Keys] = None,
        next_secret: Optional[Buffer] = None,
        derive_next: bool = True,
        grease_quic_bit: bool = True,
        _replace: Optional[int] = None,
    ) -> int:
        """Installs a connection entry; returns its handle (int).

        Give either ``secret`` (a TLS traffic secret: keys derived by the C
        library, and for 1-RTT with ``derive_next`` the next generation's keys
        too, "quic ku") or ``keys`` (a PacketKeys or (key, iv, hp)).
        ``next_keys``/``next_secret`` install generation+1 explicitly.
        ``grease_quic_bit`` (RFC 9287): packets with the fixed bit 0 are
        accepted (RX) and protected as written (TX); False: "malformed"."""
        t = self._t()
        sid = _suite_id(suite)
        lvl = _choice(level, _LEVEL_IDS, "level", _LEVEL_ALIASES)
        if secret is None and keys is None:
            raise ValueError("give secret or keys")
        if secret is not None and keys is not None:
            raise ValueError("give secret or keys, not both")
        if next_keys is not None and next_secret is not None:
            raise ValueError("give next_keys or next_secret, not both")
        if nonce_layout is None:
            nonce_layout = "multipath" if path_id is not None else "rfc9001"
        dcid = _bytes(dcid, "dcid")
        if len(dcid) > MAX_CID_LEN:
            raise ValueError("dcid longer than %d bytes" % MAX_CID_LEN)
        ver = _version(version)
        key_len = int(lib.quicoff_suite_key_len(sid))

        cfg = ffi.new("struct quicoff_conn_config *")
        lib.quicoff_conn_config_init(cfg)
        keep = None
        try:
            cfg.direction = _choice(direction, _DIR_IDS, "direction")
            cfg.level = lvl
            cfg.suite = sid
            cfg.version = ver
            ffi.memmove(cfg.dcid, dcid, len(dcid))
            cfg.dcid_len = len(dcid)
            _fill_addr(cfg.local_addr, local_addr)
            cfg.path_id = int(path_id or 0)
            cfg.nonce_layout = _choice(nonce_layout, _NONCE_IDS, "nonce_layout")
            cfg.fail_action = _choice(fail_action, _FAIL_IDS, "fail_action")
            cfg.largest_pn = _u64(largest_pn, "largest_pn")
            cfg.usage_threshold = _u64(usage_threshold or 0, "usage_threshold")
            cfg.key_generation = int(key_generation)
            cfg.grease_quic_bit = bool(grease_quic_bit)

            if keys is not None:
                _fill_keys(cfg.keys, keys, key_len)
            elif (
                derive_next
                or lvl != lib.QUICOFF_LEVEL_ONE_RTT
                or next_keys is not None
                or next_secret is not None
            ):
                secret = _bytes(secret, "secret")
                keep = ffi.new("uint8_t[]", len(secret))  # a copy of ours, wiped below
                ffi.memmove(keep, secret, len(secret))
                cfg.secret = keep
                cfg.secret_len = len(secret)
            else:
                # 1-RTT secret without next keys: the C library would derive them
                # from the secret, so hand it the current keys only.
                _fill_keys(
                    cfg.keys, derive_packet_keys(sid, _bytes(secret, "secret"), ver), key_len
                )

            if next_secret is not None:
                next_keys = derive_packet_keys(sid, next_secret, ver)
            if next_keys is not None:
                _fill_keys(cfg.next_keys, next_keys, key_len)
                cfg.has_next_keys = True

            if _replace is None:
                out = ffi.new("quicoff_conn_t *", CONN_INVALID)
                _check(lib.quicoff_conn_add(t, cfg, out), "add_connection")
                handle = int(out[0])
            else:
                _check(lib.quicoff_conn_replace(t, _replace, cfg), "replace_connection")
                handle = _replace
        finally:
            _wipe(cfg, keep)  # keys and secret: the C library has its own copy
        self._conns[handle] = sid
        return handle

    def replace_connection(
        self,
        handle: int,
        direction: str,
        suite: Suite,
        dcid: Buffer,
        secret: Optional[Buffer] = None,
        keys: Optional[Keys] = None,
        path_id: Optional[int] = None,
        **kw: Any,
    ) -> int:
        """Replaces the entry ``handle`` by one built from the arguments of
        add_connection (quicoff_conn_replace): atomically for the data plane,
        the handle stays valid and names the new entry (counters and PN state
        restart). On any error the old entry is left exactly as it was."""
        return self.add_connection(
            direction, suite, dcid, secret, keys, path_id, _replace=_u64(handle, "handle"), **kw
        )

    @_control
    def update_connection(
        self,
        handle: int,
        *,
        keys: Optional[Keys] = None,
        secret: Optional[Buffer] = None,
        key_generation: Optional[int] = None,
        roll: bool = False,
        drop_old: bool = False,
        largest_pn: Optional[int] = None,
        fail_action: Optional[str] = None,
        usage_threshold: Optional[int] = None,
    ) -> None:
        """quicoff_conn_update: only what is given changes.

        keys/secret install generation ``key_generation`` (required with
        them) in its phase slot; roll makes generation current+1 current;
        drop_old forgets generation current-1; largest_pn resets PN decoding
        (PN_NONE = none); fail_action / usage_threshold replace those."""
        t = self._t()
        u = ffi.new("struct quicoff_conn_update *")
        what = 0
        keep = None
        try:
            if keys is not None or secret is not None:
                if keys is not None and secret is not None:
                    raise ValueError("give keys or secret, not both")
                if key_generation is None:
                    raise ValueError("key_generation is required with keys or secret")
                what |= lib.QUICOFF_UPDATE_KEYS
                u.key_generation = int(key_generation)
                if keys is not None:
                    sid = self._conns.get(int(handle))
                    _fill_keys(
                        u.keys, keys, int(lib.quicoff_suite_key_len(sid)) if sid is not None else 0
                    )
                else:
                    secret = _bytes(secret, "secret")
                    keep = ffi.new("uint8_t[]", len(secret))  # a copy of ours, wiped below
                    ffi.memmove(keep, secret, len(secret))
                    u.secret = keep
                    u.secret_len = len(secret)
            elif key_generation is not None:
                raise ValueError("key_generation only goes with keys or secret")
            if roll:
                what |= lib.QUICOFF_UPDATE_ROLL
            if drop_old:
                what |= lib.QUICOFF_UPDATE_DROP_OLD
            if largest_pn is not None:
                what |= lib.QUICOFF_UPDATE_LARGEST_PN
                u.largest_pn = _u64(largest_pn, "largest_pn")
            if fail_action is not None:
                what |= lib.QUICOFF_UPDATE_FAIL_ACTION
                u.fail_action = _choice(fail_action, _FAIL_IDS, "fail_action")
            if usage_threshold is not None:
                what |= lib.QUICOFF_UPDATE_THRESHOLD
                u.usage_threshold = _u64(usage_threshold, "usage_threshold")
            u.what = what
            _check(lib.quicoff_conn_update(t, _u64(handle, "handle"), u), "update_connection")
        finally:
            _wipe(u, keep)  # keys and secret: the C library has its own copy

    @_control
    def remove_connection(self, handle: int) -> None:
        _check(lib.quicoff_conn_remove(self._t(), _u64(handle, "handle")), "remove_connection")
        self._conns.pop(int(handle), None)

    @_control
    def find_connection(
        self, level: str, dcid: Buffer, local_addr: Optional[Address] = None
    ) -> Optional[int]:
        """The RX entry the data plane would pick, or None."""
        lvl = _choice(level, _LEVEL_IDS, "level", _LEVEL_ALIASES)
        dcid = _bytes(dcid, "dcid")
        h = int(
            lib.quicoff_conn_find(
                self._t(), lvl, ffi.from_buffer("uint8_t[]", dcid), len(dcid), _new_addr(local_addr)
            )
        )
        return None if h == CONN_INVALID else h

    @_control
    def reclaim(self) -> int:
        """Frees retired entries; returns how many are still waiting."""
        return int(lib.quicoff_table_reclaim(self._t()))

    @_control
    def stats(self) -> Dict[str, int]:
        """quicoff_table_stats as a dict (C field names)."""
        out = ffi.new("struct quicoff_table_stats *")
        lib.quicoff_table_stats(self._t(), out)
        return _stats_dict(out, "struct quicoff_table_stats")

    @_control
    def connection_stats(self, handle: int) -> Dict[str, int]:
        """quicoff_conn_stats as a dict (C field names; largest_pn PN_NONE = none)."""
        out = ffi.new("struct quicoff_conn_stats *")
        _check(lib.quicoff_conn_stats(self._t(), _u64(handle, "handle"), out), "connection_stats")
        return _stats_dict(out, "struct quicoff_conn_stats")

    @property
    def connections(self) -> List[int]:
        """Handles added through this Engine and not removed."""
        with self._ctl_lock:
            return list(self._conns)

    # -- data path --------------------------------------------------------

    def _arrays(self, n: int) -> Tuple[CData, CData]:
        if n <= _BURST:
            return self._pkts, self._res
        return ffi.new("struct quicoff_pkt[]", n), ffi.new("struct quicoff_result[]", n)

    def protect(self, handle: int, header: Buffer, payload: Buffer, pn: int) -> bytes:
        """Protects one packet; returns header+ciphertext+tag (bytes).

        header carries the plaintext PN bytes (and for long headers a Length
        that counts PN + payload + 16). Raises QuicoffError when not ok;
        "usage_limit_reached" is ok (see .last_result.status)."""
        r = self.protect_burst([(handle, header, payload, pn)])[0]
        if not r.ok or r.packet is None:  # ok always has the packet
            raise QuicoffError(r.code, "protect: " + r.status, result=r)
        return r.packet

    def protect_burst(self, packets: Iterable[Tuple[int, Buffer, Buffer, int]]) -> List[Result]:
        """Protects [(handle, header, payload, pn), ...] in one burst; list of Result."""
        items = list(packets)
        n = len(items)
        if n == 0:
            return []
        bufs = []
        views = []
        for handle, header, payload, pn in items:
            header = _bytes(header, "header")
            payload = _bytes(payload, "payload")
            b = bytearray(len(header) + len(payload) + TAG_LEN)
            b[: len(header)] = header
            b[len(header) : len(header) + len(payload)] = payload
            bufs.append((b, len(header) + len(payload), _u64(handle, "handle"), _u64(pn, "pn")))
            views.append(ffi.from_buffer("uint8_t[]", b))
        with self._lock:
            w = self._worker
            if w is None:
                raise EngineClosedError()
            pkts, res = self._arrays(n)
            for i, (b, ln, h, pn) in enumerate(bufs):
                p = pkts[i]
                p.data = views[i]
                p.end = ln
                p.cap = len(b)
                p.offset = 0
                p.conn = h
                p.pn = pn
                p.local_addr = ffi.NULL
            lib.quicoff_protect_burst(w, pkts, res, n)
            results = [Result(res[i], bytes(bufs[i][0]), protect=True) for i in range(n)]
        self.last_result = results[-1]
        return results

    def unprotect(self, datagram: Buffer, local_addr: Optional[Address] = None) -> List[Result]:
        """Unprotects every coalesced packet of one UDP payload; list of Result.

        The caller's object is never modified (a copy is processed)."""
        n = len(datagram)
        if n > 0xFFFFFFFF:
            raise ValueError("datagram too large")
        addr = _new_addr(local_addr)
        max_results = max(_BURST, n // 17 + 2)
        with self._lock:
            w = self._worker
            if w is None:
                raise EngineClosedError()
            if n > self._rxcap:
                self._rxcap = max(n, 2 * self._rxcap)
                self._rxbuf = ffi.new("uint8_t[]", self._rxcap)
            buf = self._rxbuf
            ffi.memmove(buf, datagram, n)
            res = (
                self._res
                if max_results <= _BURST
                else ffi.new("struct quicoff_result[]", max_results)
            )
            k = lib.quicoff_unprotect_datagram(w, buf, n, addr, res, max_results)
            data = ffi.buffer(buf, n)[:]
            results = [Result(res[i], data) for i in range(k)]
        if results:
            self.last_result = results[-1]
        return results

    def unprotect_burst(
        self,
        datagrams: Iterable[Buffer],
        local_addrs: Union[None, Address, Sequence[Optional[Address]]] = None,
    ) -> List[Result]:
        """quicoff_unprotect_burst over buffers, one packet each at offset 0.

        local_addrs: None, one (ip, port) for all, or a list parallel to datagrams."""
        items = [bytearray(_bytes(d, "datagram")) for d in datagrams]
        n = len(items)
        if n == 0:
            return []
        if local_addrs is None or (
            isinstance(local_addrs, tuple)
            and len(local_addrs) == 2
            and isinstance(local_addrs[1], int)
        ):
            addrs = [_new_addr(local_addrs)] * n
        else:
            addrs = [_new_addr(a) for a in local_addrs]
            if len(addrs) != n:
                raise ValueError("local_addrs must be parallel to datagrams")
        views = [ffi.from_buffer("uint8_t[]", b) for b in items]
        with self._lock:
            w = self._worker
            if w is None:
                raise EngineClosedError()
            pkts, res = self._arrays(n)
            for i in range(n):
                p = pkts[i]
                p.data = views[i]
                p.end = len(items[i])
                p.cap = len(items[i])
                p.offset = 0
                p.conn = CONN_INVALID
                p.pn = 0
                p.local_addr = addrs[i]
            lib.quicoff_unprotect_burst(w, pkts, res, n)
            results = [Result(res[i], bytes(items[i])) for i in range(n)]
        self.last_result = results[-1]
        return results
