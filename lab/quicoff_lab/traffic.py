# SPDX-License-Identifier: Apache-2.0
"""Traffic for the quicoff testbed: generator, checker and tampering wire.

Host A sends host frames (EtherType 0x88B6: connection index + full packet
number + plaintext QUIC short header + payload) to its offload; host B
receives host frames with metadata from its offload and checks every payload
byte against what was sent.  No storage is needed: a payload is a function of
(flow, packet number) plus a send timestamp::

    0 "QOTP" | 4 flow u32 | 8 pn u64 | 16 send time ns u64 (CLOCK_MONOTONIC)
    | 24 length u32 | 28.. PATTERN[(fill_offset(flow, pn) + i) % PATTERN_LEN]

Sending, checking and the tampering bridge are ``tools/qo_traffic.c`` (built
by meson as ``build/tools/qo_traffic``); this module writes its flow files,
runs it in a network namespace and reads its JSON results.

The framing of the host<->offload protocol lives in :class:`HostProtocol`,
which builds and parses every frame with :mod:`quicoff.wire`: the senders and
checkers only see per-flow frame templates and offsets, so they know no
protocol.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence

from quicoff import wire

from .checkout import build_dir as default_build_dir

__all__ = [
    "Flow",
    "FrameTemplate",
    "RxFormat",
    "HostProtocol",
    "CompatProtocol",
    "V1Protocol",
    "host_protocol",
    "write_flows_file",
    "traffic_tool",
    "Sender",
    "Receiver",
    "latency_summary",
]

ETH_DATA = wire.ETHERTYPE_DATA
ETH_SIGNALING = wire.ETHERTYPE_SIGNAL


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
    direction: str = "ab"  # "ab": host A -> host B, "ba": host B -> host A
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
    key_update_pn: Optional[int] = None  # from this pn on the key phase bit flips
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
    match_off: int = -1  # frame[match_off] == match_val, else not data
    match_val: int = 0

    def args(self) -> List[str]:
        return [
            "--rx-ethertype",
            hex(self.ethertype),
            "--rx-conn-off",
            str(self.conn_off),
            "--rx-conn-size",
            str(self.conn_size),
            "--rx-pn-off",
            str(self.pn_off),
            "--rx-quic-off",
            str(self.quic_off),
            "--rx-match-off",
            str(self.match_off),
            "--rx-match-val",
            hex(self.match_val),
        ]

    def is_data(self, frame: bytes) -> bool:
        if len(frame) < 14 or int.from_bytes(frame[12:14], "big") != self.ethertype:
            return False
        return self.match_off < 0 or (
            len(frame) > self.match_off and frame[self.match_off] == self.match_val
        )


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
            b[t.full_pn_off : t.full_pn_off + t.full_pn_size] = pn.to_bytes(t.full_pn_size, "big")
        b[t.trunc_pn_off : t.trunc_pn_off + t.trunc_pn_len] = (
            pn & ((1 << (8 * t.trunc_pn_len)) - 1)
        ).to_bytes(t.trunc_pn_len, "big")
        if flow.key_update_pn is not None and pn >= flow.key_update_pn:
            b[t.quic_off] ^= 0x04
        if t.len_off >= 0:
            b[t.len_off : t.len_off + t.len_size] = (len(payload) + t.len_base).to_bytes(
                t.len_size, "big"
            )
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
    from quicoff import derive_next_secret

    secret = flow.secret
    for _ in range(generation):
        secret = derive_next_secret(flow.suite, secret)
    return secret


def _keys(flow: Flow, generation: int = 0):
    from quicoff import derive_packet_keys

    return derive_packet_keys(flow.suite, _secret_gen(flow, generation))


class CompatProtocol(HostProtocol):
    """The compat format: the DPU prototype's frames exactly as it printed
    them (docs/protocol.md, docs/glossary.md): signaling on 0x88B5 (type 1 signaling_host: TX entry by index;
    type 0 signaling_peer: RX entry by an 8-byte DCID), data on 0x88B6
    (index u16 + full PN u64 + QUIC header + payload), the same metadata on
    frames to the host (quicoff.wire's CompatHost, CompatPeer, CompatData).

    The compat format has no key update: a compat flow cannot have one (use v1)."""

    name = "compat"
    key_updates = False
    rx_format = RxFormat(
        ETH_DATA,
        _ETH_LEN + _COMPAT_INDEX_OFF,
        2,
        _ETH_LEN + _COMPAT_PN_OFF,
        _ETH_LEN + wire.COMPAT_DATA_HDR_LEN,
    )

    @staticmethod
    def _no_key_update(flow):
        if flow.key_update_pn is not None:
            raise ValueError("flow %s: the compat format has no key update; use v1" % flow.name)

    def data_template(self, flow, dst_mac, src_mac):
        self._no_key_update(flow)
        hdr = short_header(flow.dcid, flow.pn_start, flow.pn_len)
        data = wire.frame(
            wire.CompatData(index=flow.tx_index, full_pn=flow.pn_start, packet=hdr),
            dst_mac,
            src_mac,
        )
        q = _ETH_LEN + wire.COMPAT_DATA_HDR_LEN
        return FrameTemplate(
            data, _ETH_LEN + _COMPAT_PN_OFF, 8, q + 1 + len(flow.dcid), flow.pn_len, q
        )

    def add_tx(self, flow, encap, dst_mac, src_mac):
        k = _keys(flow)
        return [
            wire.frame(
                wire.CompatHost(
                    index=flow.tx_index,
                    suite=flow.suite,
                    hp_key=k.hp,
                    quic_key=k.key,
                    iv=k.iv,
                    path_id=flow.path_id or 0,
                    dcid_len=len(flow.dcid),
                ),
                dst_mac,
                src_mac,
            )
        ]

    def add_rx(self, flow, encap, dst_mac, src_mac):
        k = _keys(flow)
        return [
            wire.frame(
                wire.CompatPeer(
                    index=flow.rx_index,
                    suite=flow.suite,
                    hp_key=k.hp,
                    quic_key=k.key,
                    iv=k.iv,
                    path_id=flow.path_id or 0,
                    dcid=flow.dcid[:8].ljust(8, b"\0"),
                    full_pn=max(flow.pn_start - 1, 0),
                ),
                dst_mac,
                src_mac,
            )
        ]

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
    rx_format = RxFormat(
        ETH_SIGNALING,
        _ETH_LEN + _V1_INDEX_OFF,
        4,
        _ETH_LEN + _V1_PN_OFF,
        _ETH_LEN + wire.DATA_HDR_LEN,
        match_off=_ETH_LEN + _V1_TYPE_OFF,
        match_val=wire.KINDS["data_to_host"],
    )
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
        data = wire.frame(
            wire.DataToOffload(index=flow.tx_index, pn=flow.pn_start, packet=hdr), dst_mac, src_mac
        )
        q = _ETH_LEN + wire.DATA_HDR_LEN
        return FrameTemplate(
            data,
            _ETH_LEN + _V1_PN_OFF,
            8,
            q + 1 + len(flow.dcid),
            flow.pn_len,
            q,
            len_off=_ETH_LEN + _V1_LEN_OFF,
            len_size=2,
            len_base=len(hdr),
        )

    @staticmethod
    def _add(flow, direction, index, **kw) -> "wire.Add":
        mp = flow.path_id is not None
        return wire.Add(
            index=index,
            direction=direction,
            suite=flow.suite,
            dcid=flow.dcid,
            path_id=flow.path_id or 0,
            nonce_layout="multipath" if mp else "rfc9001",
            key_generation=0,
            secret=_secret_gen(flow, 0),
            replace=True,
            **kw,
        )

    def add_tx(self, flow, encap, dst_mac, src_mac):
        e = wire.Encap(**encap)
        return [self.request(self._add(flow, "tx", flow.tx_index, encap=e), dst_mac, src_mac)]

    def add_rx(self, flow, encap, dst_mac, src_mac):
        largest = flow.pn_start - 1 if flow.pn_start else wire.PN_NONE
        return [
            self.request(self._add(flow, "rx", flow.rx_index, largest_pn=largest), dst_mac, src_mac)
        ]

    def install_generation(self, flow, side, generation, dst_mac, src_mac, drop_old=True):
        """UPDATE: keys of ``generation`` ahead of time (after the roll to
        generation-1), and forget generation-2."""
        index = flow.tx_index if side == "tx" else flow.rx_index
        return [
            self.request(
                wire.Update(
                    index=index,
                    direction=side,
                    key_generation=generation,
                    secret=_secret_gen(flow, generation),
                    drop_old=drop_old,
                ),
                dst_mac,
                src_mac,
            )
        ]

    def remove(self, flow, side, dst_mac, src_mac):
        index = flow.tx_index if side == "tx" else flow.rx_index
        return [self.request(wire.Remove(index=index, direction=side), dst_mac, src_mac)]

    def query(self, dst_mac, src_mac, index=wire.INDEX_NONE, direction=1, table=True):
        return self.request(
            wire.Query(
                index=index, direction=direction, conn=index != wire.INDEX_NONE, table=table
            ),
            dst_mac,
            src_mac,
        )

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
        raise TimeoutError(
            "no %s for request %#x (%s) after %d tries"
            % (want.upper(), req.request_id, req.kind.upper(), self.retries)
        )


def host_protocol(name: str = "v1") -> HostProtocol:
    """The protocol the testbed speaks to the offload: "v1" (docs/protocol.md
    §4, the default) or "compat" (the compat format, docs/protocol.md)."""
    if name == "v1":
        return V1Protocol()
    if name == "compat":
        return CompatProtocol()
    raise ValueError("unknown host protocol %r (v1 or compat)" % name)


def write_flows_file(path: str, flows: Sequence[Flow], proto: HostProtocol, dst_mac, src_mac):
    """The flow table of tools/qo_traffic.c (and of the Python twin)."""
    with open(path, "w") as f:
        f.write(
            "# id rx_conn template full_pn_off full_pn_size trunc_pn_off trunc_pn_len "
            "quic_off dcid_len len_off len_size len_base pn_start ku_pn weight\n"
        )
        for fl in flows:
            t = proto.data_template(fl, dst_mac, src_mac)
            f.write(
                "F %d %d %s %d %d %d %d %d %d %d %d %d %d %d %d\n"
                % (
                    fl.id,
                    fl.rx_index,
                    t.data.hex(),
                    t.full_pn_off,
                    t.full_pn_size,
                    t.trunc_pn_off,
                    t.trunc_pn_len,
                    t.quic_off,
                    len(fl.dcid),
                    t.len_off,
                    t.len_size,
                    t.len_base,
                    fl.pn_start,
                    -1 if fl.key_update_pn is None else fl.key_update_pn,
                    fl.weight,
                )
            )


# ---------------------------------------------------------------------------
# the traffic tool (tools/qo_traffic.c), run in a namespace


def traffic_tool(build_dir: Optional[str] = None) -> List[str]:
    """argv prefix of the traffic tool: $QUICOFF_TRAFFIC_TOOL, else
    <build>/tools/qo_traffic (meson builds it). Raises FileNotFoundError
    when it is not built."""
    env = os.environ.get("QUICOFF_TRAFFIC_TOOL")
    path = env or os.path.join(str(default_build_dir(build_dir)), "tools", "qo_traffic")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise FileNotFoundError(
            "the traffic tool %s is not built: meson setup build && ninja -C build" % path
        )
    return [path]


def latency_summary(samples_ns: List[int]) -> dict:
    if not samples_ns:
        return {"n": 0, "mean": 0, "p50": 0, "p99": 0, "max": 0}
    s = sorted(samples_ns)
    n = len(s)
    return {
        "n": n,
        "mean": sum(s) / n,
        "p50": s[(n - 1) // 2],
        "p99": s[int(0.99 * (n - 1))],
        "max": s[-1],
    }


class _Proc:
    """A tool run in a namespace, its JSON result read when it ends."""

    def __init__(self, argv: List[str], netns: Optional[str] = None, env=None):
        self.argv = argv
        full = (["ip", "netns", "exec", netns] if netns else []) + argv
        self.proc = subprocess.Popen(
            full,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
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
            raise RuntimeError(
                "%s gave no result (exit %s): %s"
                % (os.path.basename(self.argv[0]), self.proc.returncode, err.strip()[-800:])
            )
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
    def __init__(
        self,
        tool,
        netns,
        iface,
        flows_file,
        *,
        size,
        rate=0,
        duration=0,
        count=0,
        batch=32,
        env=None,
    ):
        argv = list(tool) + [
            "send",
            "--iface",
            iface,
            "--flows",
            flows_file,
            "--size",
            str(size),
            "--rate",
            str(rate),
            "--duration",
            str(duration),
            "--count",
            str(count),
            "--batch",
            str(batch),
        ]
        super().__init__(argv, netns, env)


class Receiver(_Proc):
    def __init__(
        self,
        tool,
        netns,
        iface,
        flows_file,
        rx_format: RxFormat,
        *,
        duration=0,
        idle=0,
        expect=0,
        batch=64,
        env=None,
    ):
        argv = (
            list(tool)
            + [
                "recv",
                "--iface",
                iface,
                "--flows",
                flows_file,
                "--duration",
                str(duration),
                "--idle",
                str(idle),
                "--expect",
                str(expect),
                "--batch",
                str(batch),
            ]
            + rx_format.args()
        )
        super().__init__(argv, netns, env)
