# SPDX-License-Identifier: Apache-2.0
"""Traffic for the quicoff testbed: generator, checker and tampering wire.

Host A sends host frames (EtherType 0x88B6: connection index + full packet
number + plaintext QUIC short header + payload) to its offload; host B
receives host frames with metadata from its offload and checks every payload
byte against what was sent.  No storage is needed: a payload is a function of
(flow, packet number) plus a send timestamp::

    0 "QOTP" | 4 flow u32 | 8 pn u64 | 16 send time ns u64 (CLOCK_MONOTONIC)
    | 24 length u32 | 28.. PATTERN[(fill_offset(flow, pn) + i) % PATTERN_LEN]

The fast path is ``tools/qo_traffic.c`` (built by meson as
``build/tools/qo_traffic``); this module has a Python twin of each of its
modes (``python -m quicoff.traffic send|recv|bridge``, same options, same
JSON) used when the C tool is not built, and the code that drives either in
a network namespace.

The framing of the host<->offload protocol lives in :class:`HostProtocol`,
which builds and parses every frame with :mod:`quicoff.wire`: the senders and
checkers only see per-flow frame templates and offsets, so they know no
protocol.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence

from . import wire

__all__ = [
    "PATTERN", "PATTERN_LEN", "PAYLOAD_HDR", "MAGIC", "fill_offset", "make_payload",
    "check_payload", "Flow", "FrameTemplate", "RxFormat", "HostProtocol",
    "CompatProtocol", "V1Protocol", "host_protocol", "write_flows_file", "traffic_tool",
    "Sender", "Receiver", "latency_summary",
]

MAGIC = b"QOTP"
PAYLOAD_HDR = 28
PATTERN_LEN = 8192
ETH_P_ALL = 0x0003
ETH_DATA = wire.ETHERTYPE_DATA
ETH_SIGNALING = wire.ETHERTYPE_SIGNAL
_M64 = (1 << 64) - 1


# ---------------------------------------------------------------------------
# payloads (identical to tools/qo_traffic.c)

def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _make_pattern() -> bytes:
    s = 0x717569636F666621  # "quicoff!"
    out = bytearray(PATTERN_LEN)
    for i in range(PATTERN_LEN):
        s = _splitmix64(s)
        out[i] = s >> 56
    return bytes(out)


PATTERN = _make_pattern()
_PATTERN2 = PATTERN * 2


def fill_offset(flow: int, pn: int) -> int:
    return _splitmix64(((flow << 48) ^ pn) & _M64) % PATTERN_LEN


def make_payload(flow: int, pn: int, size: int, ts_ns: Optional[int] = None) -> bytes:
    """The payload of (flow, pn): ``size`` bytes (at least PAYLOAD_HDR)."""
    size = max(size, PAYLOAD_HDR)
    if ts_ns is None:
        ts_ns = time.monotonic_ns()
    off = fill_offset(flow, pn)
    n = size - PAYLOAD_HDR
    fill = _PATTERN2[off:off + n] if n <= PATTERN_LEN else \
        (PATTERN[off:] + PATTERN * (n // PATTERN_LEN + 1))[:n]
    return MAGIC + struct.pack(">IQQI", flow, pn, ts_ns, size) + fill


def check_payload(payload: bytes, flow: int, pn: int) -> Optional[str]:
    """None if ``payload`` is exactly what (flow, pn) sends (any timestamp),
    else what is wrong."""
    if len(payload) < PAYLOAD_HDR:
        return "short"
    if payload[:4] != MAGIC:
        return "bad magic"
    f, p, _ts, size = struct.unpack_from(">IQQI", payload, 4)
    if f != flow or p != pn:
        return "flow/pn %d/%d, expected %d/%d" % (f, p, flow, pn)
    if size < PAYLOAD_HDR or size > len(payload):
        return "bad length %d" % size
    expect = make_payload(flow, pn, size, _ts)
    if payload[:size] != expect:
        first = next(i for i in range(size) if payload[i] != expect[i])
        return "byte %d differs" % first
    return None


# ---------------------------------------------------------------------------
# flows and the host<->offload protocol

@dataclass
class Flow:
    """One direction of one path of a connection, as the testbed sees it.

    ``tx_index``: the sending host's index of the connection in its offload's
    TX table (in the data frames it sends); ``rx_index``: the receiving host's
    index of the connection in its offload's RX table (in the frames it gets).
    """
    id: int
    name: str
    suite: str
    dcid: bytes
    secret: bytes
    tx_index: int
    rx_index: int
    direction: str = "ab"          # "ab": host A -> host B, "ba": host B -> host A
    path_id: Optional[int] = None
    pn_start: int = 0
    # truncated packet number bytes in the header.  4: these senders get no
    # ACKs, so nothing bounds how many packets in a row can be lost before the
    # receiving offload sees the next one, and it decodes an n-byte PN only
    # within 2^(8n-1) of the largest it has seen (RFC 9000 §17.1, A.2-A.3;
    # quicoff_pn_encode_len() gives 4 without a largest acknowledged).  With 2
    # bytes, 32768 lost in a row (~40 ms at a max-rate step's ~800 kpps, one
    # descheduled lcore on a shared CPU) desynchronise the connection for good:
    # every later packet decodes to the wrong PN and fails authentication.
    pn_len: int = 4
    key_update_pn: Optional[int] = None   # from this pn on the key phase bit flips
    weight: int = 1
    # filled by the sender's/receiver's JSON
    sent: int = 0


@dataclass
class FrameTemplate:
    """A host frame up to the payload, with where the sender writes the
    packet number (see tools/qo_traffic.c)."""
    data: bytes
    full_pn_off: int
    full_pn_size: int
    trunc_pn_off: int
    trunc_pn_len: int
    quic_off: int
    len_off: int = -1
    len_size: int = 0
    len_base: int = 0


@dataclass
class RxFormat:
    """Where a frame to the host keeps its metadata."""
    ethertype: int = ETH_DATA
    conn_off: int = 14
    conn_size: int = 2
    pn_off: int = 16
    quic_off: int = 24
    match_off: int = -1            # frame[match_off] == match_val, else not data
    match_val: int = 0

    def args(self) -> List[str]:
        return ["--rx-ethertype", hex(self.ethertype), "--rx-conn-off", str(self.conn_off),
                "--rx-conn-size", str(self.conn_size), "--rx-pn-off", str(self.pn_off),
                "--rx-quic-off", str(self.quic_off), "--rx-match-off", str(self.match_off),
                "--rx-match-val", hex(self.match_val)]

    def is_data(self, frame: bytes) -> bool:
        if len(frame) < 14 or int.from_bytes(frame[12:14], "big") != self.ethertype:
            return False
        return self.match_off < 0 or (len(frame) > self.match_off
                                      and frame[self.match_off] == self.match_val)


#: Ethernet header before a host<->offload frame (the templates carry no VLAN tag)
_ETH_LEN = 14
#: where a data frame keeps its per-packet fields, after the EtherType
#: (docs/protocol.md §3.5 compat data_pkt: Index u16, Full_pn u64; §4.2 v1
#: data header: Type at 2, Index u32 at 4, PN u64 at 8, Length u16 at 16)
_COMPAT_INDEX_OFF, _COMPAT_PN_OFF = 0, 2
_V1_TYPE_OFF, _V1_INDEX_OFF, _V1_PN_OFF, _V1_LEN_OFF = 2, 4, 8, 16


def short_header(dcid: bytes, pn: int, pn_len: int = 2, key_phase: int = 0) -> bytes:
    first = 0x40 | (key_phase << 2) | (pn_len - 1)
    return bytes([first]) + dcid + (pn & ((1 << (8 * pn_len)) - 1)).to_bytes(pn_len, "big")


class HostProtocol:
    """The framing of host<->offload frames as the testbed needs it.

    Subclasses build signaling frames and data-frame templates (with
    :mod:`quicoff.wire`, the protocol's one encoder) and say where frames to
    the host keep their metadata."""

    name = "abstract"
    rx_format = RxFormat()
    #: the protocol can tell the offload about a key update (compat cannot)
    key_updates = True

    def data_template(self, flow: Flow, dst_mac, src_mac) -> FrameTemplate:
        raise NotImplementedError

    def data_frame(self, flow: Flow, pn: int, payload: bytes, dst_mac, src_mac) -> bytes:
        t = self.data_template(flow, dst_mac, src_mac)
        b = bytearray(t.data)
        if t.full_pn_off >= 0:
            b[t.full_pn_off:t.full_pn_off + t.full_pn_size] = pn.to_bytes(t.full_pn_size, "big")
        b[t.trunc_pn_off:t.trunc_pn_off + t.trunc_pn_len] = \
            (pn & ((1 << (8 * t.trunc_pn_len)) - 1)).to_bytes(t.trunc_pn_len, "big")
        if flow.key_update_pn is not None and pn >= flow.key_update_pn:
            b[t.quic_off] ^= 0x04
        if t.len_off >= 0:
            b[t.len_off:t.len_off + t.len_size] = \
                (len(payload) + t.len_base).to_bytes(t.len_size, "big")
        return bytes(b) + payload

    def parse_to_host(self, frame: bytes):
        """(connection index, full pn, offset of the QUIC header) or None."""
        f = self.rx_format
        if len(frame) < f.quic_off + 1 or not f.is_data(frame):
            return None
        try:
            m = wire.decode(frame[_ETH_LEN:], f.ethertype)
        except wire.WireError:
            return None
        if m.kind == "compat_data":
            return m.index, m.full_pn, f.quic_off
        if m.kind == "data_to_host":
            return m.index, m.pn, f.quic_off
        return None

    def add_tx(self, flow: Flow, encap: dict, dst_mac, src_mac) -> List[bytes]:
        raise NotImplementedError

    def add_rx(self, flow: Flow, encap: dict, dst_mac, src_mac) -> List[bytes]:
        raise NotImplementedError

    def key_update(self, flow: Flow, side: str, dst_mac, src_mac) -> List[bytes]:
        """Frames that prepare the offload for the flow's key update (may be
        none when the offload derives the next keys itself)."""
        return []

    def remove(self, flow: Flow, side: str, dst_mac, src_mac) -> List[bytes]:
        return []


def _secret_gen(flow: Flow, generation: int) -> bytes:
    from . import derive_next_secret
    secret = flow.secret
    for _ in range(generation):
        secret = derive_next_secret(flow.suite, secret)
    return secret


def _keys(flow: Flow, generation: int = 0):
    from . import derive_packet_keys
    return derive_packet_keys(flow.suite, _secret_gen(flow, generation))


class CompatProtocol(HostProtocol):
    """Seed 000's frames (§3.2.1, listings 4.9-4.11) exactly as printed
    there: signaling on 0x88B5 (type 1 signaling_host: TX entry by index;
    type 0 signaling_peer: RX entry by an 8-byte DCID), data on 0x88B6
    (index u16 + full PN u64 + QUIC header + payload), the same metadata on
    frames to the host (quicoff.wire's CompatHost, CompatPeer, CompatData).

    The thesis has no key update: a compat flow cannot have one (use v1)."""

    name = "compat"
    key_updates = False
    rx_format = RxFormat(ETH_DATA, _ETH_LEN + _COMPAT_INDEX_OFF, 2, _ETH_LEN + _COMPAT_PN_OFF,
                         _ETH_LEN + wire.COMPAT_DATA_HDR_LEN)

    @staticmethod
    def _no_key_update(flow):
        if flow.key_update_pn is not None:
            raise ValueError("flow %s: compat (seed 000) has no key update; use v1" % flow.name)

    def data_template(self, flow, dst_mac, src_mac):
        self._no_key_update(flow)
        hdr = short_header(flow.dcid, flow.pn_start, flow.pn_len)
        data = wire.frame(wire.CompatData(index=flow.tx_index, full_pn=flow.pn_start, packet=hdr),
                          dst_mac, src_mac)
        q = _ETH_LEN + wire.COMPAT_DATA_HDR_LEN
        return FrameTemplate(data, _ETH_LEN + _COMPAT_PN_OFF, 8, q + 1 + len(flow.dcid),
                             flow.pn_len, q)

    def add_tx(self, flow, encap, dst_mac, src_mac):
        k = _keys(flow)
        return [wire.frame(wire.CompatHost(
            index=flow.tx_index, suite=flow.suite, hp_key=k.hp, quic_key=k.key, iv=k.iv,
            path_id=flow.path_id or 0, dcid_len=len(flow.dcid)), dst_mac, src_mac)]

    def add_rx(self, flow, encap, dst_mac, src_mac):
        k = _keys(flow)
        return [wire.frame(wire.CompatPeer(
            index=flow.rx_index, suite=flow.suite, hp_key=k.hp, quic_key=k.key, iv=k.iv,
            path_id=flow.path_id or 0, dcid=flow.dcid[:8].ljust(8, b"\0"),
            full_pn=max(flow.pn_start - 1, 0)), dst_mac, src_mac)]

    def key_update(self, flow, side, dst_mac, src_mac):
        self._no_key_update(flow)
        return []


class V1Protocol(HostProtocol):
    """The versioned protocol (docs/protocol.md §4-§6), framed by
    quicoff.wire: ADD / UPDATE / REMOVE / QUERY with request IDs and
    acknowledgements, per-entry ENCAP, DATA_TO_OFFLOAD / DATA_TO_HOST on
    0x88B5.  Entries get the TLS secret, so the offload derives the next key
    generation itself (a key update needs no signaling)."""

    name = "v1"
    wants_ack = True
    #: frames to the host: 0x88B5, type byte DATA_TO_HOST, index u32, PN u64,
    #: QUIC packet after the 20-byte data header
    rx_format = RxFormat(ETH_SIGNALING, _ETH_LEN + _V1_INDEX_OFF, 4, _ETH_LEN + _V1_PN_OFF,
                         _ETH_LEN + wire.DATA_HDR_LEN, match_off=_ETH_LEN + _V1_TYPE_OFF,
                         match_val=wire.KINDS["data_to_host"])
    retries = 6
    first_timeout = 0.02

    def __init__(self):
        self._req = int.from_bytes(os.urandom(4), "big") & 0x7FFFFFFF

    def next_request_id(self) -> int:
        self._req = (self._req + 1) & 0xFFFFFFFF
        return self._req

    def request(self, msg, dst_mac, src_mac) -> bytes:
        """The frame of request ``msg`` (a quicoff.wire message) with the next
        request ID."""
        msg.request_id = self.next_request_id()
        return wire.frame(msg, dst_mac, src_mac)

    def data_template(self, flow, dst_mac, src_mac):
        hdr = short_header(flow.dcid, flow.pn_start, flow.pn_len)
        data = wire.frame(wire.DataToOffload(index=flow.tx_index, pn=flow.pn_start, packet=hdr),
                          dst_mac, src_mac)
        q = _ETH_LEN + wire.DATA_HDR_LEN
        return FrameTemplate(data, _ETH_LEN + _V1_PN_OFF, 8, q + 1 + len(flow.dcid), flow.pn_len,
                             q, len_off=_ETH_LEN + _V1_LEN_OFF, len_size=2, len_base=len(hdr))

    @staticmethod
    def _add(flow, direction, index, **kw) -> "wire.Add":
        mp = flow.path_id is not None
        return wire.Add(index=index, direction=direction, suite=flow.suite, dcid=flow.dcid,
                        path_id=flow.path_id or 0, nonce_layout="multipath" if mp else "rfc9001",
                        key_generation=0, secret=_secret_gen(flow, 0), replace=True, **kw)

    def add_tx(self, flow, encap, dst_mac, src_mac):
        e = wire.Encap(**encap)
        return [self.request(self._add(flow, "tx", flow.tx_index, encap=e), dst_mac, src_mac)]

    def add_rx(self, flow, encap, dst_mac, src_mac):
        largest = flow.pn_start - 1 if flow.pn_start else wire.PN_NONE
        return [self.request(self._add(flow, "rx", flow.rx_index, largest_pn=largest),
                             dst_mac, src_mac)]

    def install_generation(self, flow, side, generation, dst_mac, src_mac, drop_old=True):
        """UPDATE: keys of ``generation`` ahead of time (after the roll to
        generation-1), and forget generation-2."""
        index = flow.tx_index if side == "tx" else flow.rx_index
        return [self.request(wire.Update(index=index, direction=side, key_generation=generation,
                                         secret=_secret_gen(flow, generation), drop_old=drop_old),
                             dst_mac, src_mac)]

    def remove(self, flow, side, dst_mac, src_mac):
        index = flow.tx_index if side == "tx" else flow.rx_index
        return [self.request(wire.Remove(index=index, direction=side), dst_mac, src_mac)]

    def query(self, dst_mac, src_mac, index=wire.INDEX_NONE, direction=1, table=True):
        return self.request(wire.Query(index=index, direction=direction,
                                       conn=index != wire.INDEX_NONE, table=table),
                            dst_mac, src_mac)

    # -- replies ------------------------------------------------------------

    @staticmethod
    def parse(frame: bytes) -> Optional[dict]:
        """A v1 frame (ACK, STATS, EVENT, DATA_TO_HOST, ...) as a dict: the
        quicoff.wire message's fields that are set, plus ``kind``,
        ``status_name`` and ``message`` (the object); None if it is not one."""
        try:
            _eth, m = wire.decode_frame(frame)
        except wire.WireError:
            return None
        if m.kind.startswith("compat"):
            return None
        out = {k: v for k, v in wire.message_fields(m).items() if v is not None}
        out.update(kind=m.kind, type=wire.KINDS[m.kind], message=m)
        st = getattr(m, "status", None)
        if st is not None:
            out["status_name"] = st if isinstance(st, str) else "status_%d" % st
        return out

    def wait_ack(self, sock, frame: bytes, timeout: float = 2.0) -> dict:
        """Waits for the ACK (or STATS) of request ``frame``, re-sending the
        identical frame on a doubling timeout (docs/protocol.md §6)."""
        _eth, req = wire.decode_frame(frame)
        want = "stats" if req.kind == "query" else "ack"
        wait = self.first_timeout
        deadline = time.monotonic() + timeout
        for attempt in range(self.retries):
            if attempt:
                sock.send(frame)
            end = min(time.monotonic() + wait, deadline)
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    break
                r, _, _ = select.select([sock], [], [], left)
                if not r:
                    break
                m = self.parse(sock.recv(65536))
                if m and m["kind"] == want and m["request_id"] == req.request_id:
                    m["attempts"] = attempt + 1
                    return m
            wait *= 2
            if time.monotonic() >= deadline:
                break
        raise TimeoutError("no %s for request %#x (%s) after %d tries"
                           % (want.upper(), req.request_id, req.kind.upper(), self.retries))


def host_protocol(name: str = "v1") -> HostProtocol:
    """The protocol the testbed speaks to the offload: "v1" (docs/protocol.md
    §4, the default) or "compat" (seed 000's frames)."""
    if name == "v1":
        return V1Protocol()
    if name == "compat":
        return CompatProtocol()
    raise ValueError("unknown host protocol %r (v1 or compat)" % name)


def write_flows_file(path: str, flows: Sequence[Flow], proto: HostProtocol, dst_mac, src_mac):
    """The flow table of tools/qo_traffic.c (and of the Python twin)."""
    with open(path, "w") as f:
        f.write("# id rx_conn template full_pn_off full_pn_size trunc_pn_off trunc_pn_len "
                "quic_off dcid_len len_off len_size len_base pn_start ku_pn weight\n")
        for fl in flows:
            t = proto.data_template(fl, dst_mac, src_mac)
            f.write("F %d %d %s %d %d %d %d %d %d %d %d %d %d %d %d\n" % (
                fl.id, fl.rx_index, t.data.hex(), t.full_pn_off, t.full_pn_size,
                t.trunc_pn_off, t.trunc_pn_len, t.quic_off, len(fl.dcid), t.len_off,
                t.len_size, t.len_base, fl.pn_start,
                -1 if fl.key_update_pn is None else fl.key_update_pn, fl.weight))


def _read_flows_file(path: str) -> List[dict]:
    out = []
    with open(path) as f:
        for line in f:
            if not line.startswith("F "):
                continue
            p = line.split()
            v = [int(x) for x in p[4:]]
            out.append(dict(id=int(p[1]), rx_conn=int(p[2]), tmpl=bytes.fromhex(p[3]),
                            full_pn_off=v[0], full_pn_size=v[1], trunc_pn_off=v[2],
                            trunc_pn_len=v[3], quic_off=v[4], dcid_len=v[5], len_off=v[6],
                            len_size=v[7], len_base=v[8], pn_start=v[9], ku_pn=v[10],
                            weight=max(1, v[11])))
    if not out:
        raise SystemExit("no flows in %s" % path)
    return out


# ---------------------------------------------------------------------------
# the tools: C binary or the Python twin

def _repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def traffic_tool(build_dir: Optional[str] = None, prefer: str = "c") -> List[str]:
    """argv prefix of the traffic tool: build/tools/qo_traffic if built (and
    prefer="c"), else the Python twin."""
    if prefer == "c":
        candidates = []
        if build_dir:
            candidates.append(os.path.join(build_dir, "tools", "qo_traffic"))
        candidates.append(os.path.join(_repo_root(), "build", "tools", "qo_traffic"))
        env = os.environ.get("QUICOFF_TRAFFIC_TOOL")
        if env:
            candidates.insert(0, env)
        for c in candidates:
            if os.path.isfile(c) and os.access(c, os.X_OK):
                return [c]
    return [sys.executable, "-m", "quicoff.traffic"]


def latency_summary(samples_ns: List[int]) -> dict:
    if not samples_ns:
        return {"n": 0, "mean": 0, "p50": 0, "p99": 0, "max": 0}
    s = sorted(samples_ns)
    n = len(s)
    return {"n": n, "mean": sum(s) / n, "p50": s[(n - 1) // 2], "p99": s[int(0.99 * (n - 1))],
            "max": s[-1]}


class _Proc:
    """A tool run in a namespace, its JSON result read when it ends."""

    def __init__(self, argv: List[str], netns: Optional[str] = None, env=None):
        self.argv = argv
        full = (["ip", "netns", "exec", netns] if netns else []) + argv
        self.proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, start_new_session=True)
        self.result: Optional[dict] = None
        self.stderr = ""

    def wait(self, timeout: Optional[float] = None) -> dict:
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            out, err = self.proc.communicate(timeout=10)
        self.stderr = err
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if not lines:
            raise RuntimeError("%s gave no result (exit %s): %s"
                               % (os.path.basename(self.argv[0]), self.proc.returncode,
                                  err.strip()[-800:]))
        self.result = json.loads(lines[-1])
        return self.result

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def alive(self) -> bool:
        return self.proc.poll() is None


class Sender(_Proc):
    def __init__(self, tool, netns, iface, flows_file, *, size, rate=0, duration=0, count=0,
                 batch=32, env=None):
        argv = list(tool) + ["send", "--iface", iface, "--flows", flows_file, "--size", str(size),
                             "--rate", str(rate), "--duration", str(duration),
                             "--count", str(count), "--batch", str(batch)]
        super().__init__(argv, netns, env)


class Receiver(_Proc):
    def __init__(self, tool, netns, iface, flows_file, rx_format: RxFormat, *, duration=0,
                 idle=0, expect=0, batch=64, env=None):
        argv = list(tool) + ["recv", "--iface", iface, "--flows", flows_file,
                             "--duration", str(duration), "--idle", str(idle),
                             "--expect", str(expect), "--batch", str(batch)] + rx_format.args()
        super().__init__(argv, netns, env)


# ---------------------------------------------------------------------------
# the Python twin of tools/qo_traffic.c

_stop = False


def _on_signal(*_):
    global _stop
    _stop = True


def _raw_socket(iface: str, proto: int) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(proto))
    s.bind((iface, proto))
    for opt in (getattr(socket, "SO_RCVBUFFORCE", 33), socket.SO_RCVBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, 16 << 20)
            break
        except OSError:
            continue
    try:
        s.setsockopt(263, 23, 1)  # SOL_PACKET, PACKET_IGNORE_OUTGOING
    except OSError:
        pass
    return s


def _py_send(a) -> dict:
    flows = _read_flows_file(a.flows)
    size = max(a.size, PAYLOAD_HDR)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((a.iface, 0))
    sched = [i for i, f in enumerate(flows) for _ in range(f["weight"])]
    pn_next = [f["pn_start"] for f in flows]
    sent = [0] * len(flows)
    t0 = time.monotonic_ns()
    deadline = t0 + int(a.duration * 1e9) if a.duration > 0 else None
    total, si = 0, 0
    ns_per = 1e9 / a.rate if a.rate > 0 else 0
    last = t0
    while not _stop:
        now = time.monotonic_ns()
        if (deadline and now >= deadline) or (a.count and total >= a.count):
            break
        if ns_per:
            due = t0 + int(total * ns_per)
            if due > now:
                time.sleep(min((due - now) / 1e9, 0.05))
                continue
        i = sched[si % len(sched)]
        si += 1
        f = flows[i]
        pn = pn_next[i]
        pn_next[i] += 1
        b = bytearray(f["tmpl"])
        if f["full_pn_off"] >= 0:
            b[f["full_pn_off"]:f["full_pn_off"] + f["full_pn_size"]] = \
                pn.to_bytes(f["full_pn_size"], "big")
        n = f["trunc_pn_len"]
        b[f["trunc_pn_off"]:f["trunc_pn_off"] + n] = (pn & ((1 << (8 * n)) - 1)).to_bytes(n, "big")
        if f["ku_pn"] >= 0 and pn >= f["ku_pn"]:
            b[f["quic_off"]] ^= 0x04
        if f["len_off"] >= 0:
            b[f["len_off"]:f["len_off"] + f["len_size"]] = \
                (size + f["len_base"]).to_bytes(f["len_size"], "big")
        b += make_payload(f["id"], pn, size)
        while True:
            try:
                s.send(b)
                break
            except OSError:
                time.sleep(0.0001)
        sent[i] += 1
        total += 1
        last = time.monotonic_ns()
    return {"mode": "send", "sent": total, "size": size, "rate": a.rate, "start_ns": t0,
            "end_ns": last, "retries": 0, "twin": "python",
            "flows": {str(f["id"]): {"sent": sent[i], "pn_first": f["pn_start"],
                                     "pn_next": pn_next[i]} for i, f in enumerate(flows)}}


def _py_recv(a) -> dict:
    flows = _read_flows_file(a.flows)
    by_conn = {f["rx_conn"]: f for f in flows}
    et = int(a.rx_ethertype, 0)
    fmt = RxFormat(et, a.rx_conn_off, a.rx_conn_size, a.rx_pn_off, a.rx_quic_off,
                   a.rx_match_off, int(a.rx_match_val, 0))
    s = _raw_socket(a.iface, et)
    s.setblocking(False)
    stats = {k: 0 for k in ("frames", "checked", "unique", "dups", "mismatches", "bad_magic",
                            "bad_meta", "bad_fill", "bad_len", "unknown_conn", "other", "bytes")}
    per = {f["id"]: {"received": 0, "dups": 0, "mismatches": 0, "bytes": 0} for f in flows}
    seen = {f["id"]: set() for f in flows}
    lat: List[int] = []
    jitter, prev = 0.0, None
    first_mism = ""
    t0 = time.monotonic_ns()
    deadline = t0 + int(a.duration * 1e9) if a.duration > 0 else None
    idle = int(a.idle * 1e9) if a.idle > 0 else None
    first = last = 0
    last_rx = t0
    while not _stop:
        now = time.monotonic_ns()
        if (deadline and now >= deadline) or (idle and now - last_rx > idle):
            break
        if a.expect and stats["unique"] + stats["dups"] >= a.expect:
            break
        r, _, _ = select.select([s], [], [], 0.02)
        if not r:
            continue
        while True:
            try:
                frame = s.recv(65536)
            except BlockingIOError:
                break
            t = time.monotonic_ns()
            last_rx = last = t
            first = first or t
            stats["frames"] += 1
            if not fmt.is_data(frame):
                stats["other"] += 1
                continue
            if len(frame) < a.rx_quic_off + 1:
                stats["bad_len"] += 1
                stats["mismatches"] += 1
                continue
            conn = int.from_bytes(frame[a.rx_conn_off:a.rx_conn_off + a.rx_conn_size], "big")
            pn = int.from_bytes(frame[a.rx_pn_off:a.rx_pn_off + 8], "big")
            f = by_conn.get(conn)
            if f is None:
                stats["unknown_conn"] += 1
                continue
            q = a.rx_quic_off
            poff = q + 1 + f["dcid_len"] + (frame[q] & 3) + 1
            stats["checked"] += 1
            payload = frame[poff:]
            err = check_payload(payload, f["id"], pn)
            if err is None:
                ts = struct.unpack_from(">Q", payload, 16)[0]
                if ts > t:
                    err = "timestamp in the future"
            if err:
                key = ("bad_magic" if "magic" in err else "bad_meta" if "/" in err or "time" in err
                       else "bad_fill" if "byte" in err else "bad_len")
                stats[key] += 1
                stats["mismatches"] += 1
                per[f["id"]]["mismatches"] += 1
                first_mism = first_mism or "flow %d conn %d pn %d: %s" % (f["id"], conn, pn, err)
                continue
            l_ns = t - ts
            lat.append(l_ns)
            if prev is not None:
                jitter += (abs(l_ns - prev) - jitter) / 16.0
            prev = l_ns
            size = struct.unpack_from(">I", payload, 24)[0]
            stats["bytes"] += size
            per[f["id"]]["bytes"] += size
            if pn in seen[f["id"]]:
                stats["dups"] += 1
                per[f["id"]]["dups"] += 1
            else:
                seen[f["id"]].add(pn)
                stats["unique"] += 1
                per[f["id"]]["received"] += 1
    for f in flows:   # as the C tool: lowest/highest PN received, longest run missing
        pns = sorted(seen[f["id"]])
        per[f["id"]].update(pn_lowest=pns[0] if pns else -1, pn_highest=pns[-1] if pns else -1,
                            max_gap=max([b - a - 1 for a, b in zip(pns, pns[1:])] or [0]))
    out = dict(mode="recv", twin="python", **stats)
    out.update(first_ns=first, last_ns=last, first_mismatch=first_mism,
               latency_ns=latency_summary(lat), jitter_ns=jitter,
               flows={str(k): v for k, v in per.items()})
    return out


def _tamper(frame: bytearray) -> bool:
    """Flips the last UDP payload byte and repairs the UDP checksum (as the C tool)."""
    off = 12
    et = int.from_bytes(frame[off:off + 2], "big")
    while et in (0x8100, 0x88A8):
        off += 4
        et = int.from_bytes(frame[off:off + 2], "big")
    off += 2
    if et == 0x0800 and len(frame) >= off + 20 and frame[off + 9] == 17:
        u = off + (frame[off] & 15) * 4
    elif et == 0x86DD and len(frame) >= off + 48 and frame[off + 6] == 17:
        u = off + 40
    else:
        return False
    ulen = int.from_bytes(frame[u + 4:u + 6], "big")
    if ulen < 28 or u + ulen > len(frame):
        return False
    pos = u + ulen - 1
    w = u + ((pos - u) & ~1)

    def word():
        return (frame[w] << 8) | (frame[w + 1] if w + 1 < u + ulen else 0)
    old = word()
    frame[pos] ^= 0x5A
    new = word()
    ck = int.from_bytes(frame[u + 6:u + 8], "big")
    if ck or et == 0x86DD:
        s = (~ck & 0xFFFF) + (~old & 0xFFFF) + new
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        nck = ~s & 0xFFFF or 0xFFFF
        frame[u + 6:u + 8] = nck.to_bytes(2, "big")
    return True


def _udp_frame(frame) -> bool:
    off = 12
    et = int.from_bytes(frame[off:off + 2], "big")
    while et in (0x8100, 0x88A8):
        off += 4
        et = int.from_bytes(frame[off:off + 2], "big")
    off += 2
    return ((et == 0x0800 and len(frame) >= off + 28 and frame[off + 9] == 17)
            or (et == 0x86DD and len(frame) >= off + 48 and frame[off + 6] == 17))


def _py_bridge(a) -> dict:
    socks = [_raw_socket(a.a, ETH_P_ALL), _raw_socket(a.b, ETH_P_ALL)]
    for s in socks:
        s.setblocking(False)
    st = {"fwd": [0, 0], "eligible": [0, 0], "tampered": [0, 0], "errors": 0}
    tdir = [a.tamper_dir != "ba", a.tamper_dir != "ab"]
    tmax = a.tamper_max if a.tamper_max is not None else float("inf")

    def result(final):
        return {"mode": "bridge", "final": final, "twin": "python",
                "forwarded_ab": st["fwd"][0], "forwarded_ba": st["fwd"][1],
                "eligible_ab": st["eligible"][0], "eligible_ba": st["eligible"][1],
                "tampered_ab": st["tampered"][0], "tampered_ba": st["tampered"][1],
                "tampered": sum(st["tampered"]), "errors": st["errors"]}

    def write(final=False):
        if a.stats:
            tmp = a.stats + ".tmp"
            with open(tmp, "w") as f:
                json.dump(result(final), f)
            os.replace(tmp, a.stats)
    t0 = time.monotonic()
    last_write = 0.0
    write()
    while not _stop and not (a.duration > 0 and time.monotonic() - t0 > a.duration):
        if time.monotonic() - last_write > 0.1:
            write()
            last_write = time.monotonic()
        r, _, _ = select.select(socks, [], [], 0.05)
        for s in r:
            d = socks.index(s)
            for _ in range(64):
                try:
                    frame = bytearray(s.recv(65536))
                except BlockingIOError:
                    break
                if _udp_frame(frame):
                    st["eligible"][d] += 1
                    if (a.tamper_every and tdir[d] and sum(st["tampered"]) < tmax
                            and st["eligible"][d] % a.tamper_every == 0 and _tamper(frame)):
                        st["tampered"][d] += 1
                try:
                    socks[1 - d].send(frame)
                    st["fwd"][d] += 1
                except OSError:
                    st["errors"] += 1
    write(True)
    return result(True)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m quicoff.traffic",
                                description="Python twin of tools/qo_traffic.c")
    p.add_argument("mode", choices=("send", "recv", "bridge"))
    p.add_argument("--iface")
    p.add_argument("--flows")
    p.add_argument("--rate", type=float, default=0)
    p.add_argument("--duration", type=float, default=0)
    p.add_argument("--idle", type=float, default=0)
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--expect", type=int, default=0)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--rx-ethertype", default="0x88b6")
    p.add_argument("--rx-conn-off", type=int, default=14)
    p.add_argument("--rx-conn-size", type=int, default=2)
    p.add_argument("--rx-pn-off", type=int, default=16)
    p.add_argument("--rx-quic-off", type=int, default=24)
    p.add_argument("--rx-match-off", type=int, default=-1)
    p.add_argument("--rx-match-val", default="0")
    p.add_argument("--a")
    p.add_argument("--b")
    p.add_argument("--tamper-every", type=int, default=0)
    p.add_argument("--tamper-max", type=int, default=None)
    p.add_argument("--tamper-dir", default="both")
    p.add_argument("--stats")
    a = p.parse_args(argv)
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    fn = {"send": _py_send, "recv": _py_recv, "bridge": _py_bridge}[a.mode]
    print(json.dumps(fn(a)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
