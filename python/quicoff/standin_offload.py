# SPDX-License-Identifier: Apache-2.0
"""STAND-IN for quicoff-dpdk: a fake offload in Python, for the testbed.

Not the product.  It does what build/apps/dpdk/quicoff-dpdk does, slowly
(tens of kpps), with the same library (quicoff.Engine), on two AF_PACKET
sockets instead of two DPDK ports:

* host port: signaling (0x88B5: v1 ADD/UPDATE/REMOVE/QUERY, answered; or
  seed 000's compat frames) installs entries; data frames (v1
  DATA_TO_OFFLOAD, or compat 0x88B6: index + full PN + plaintext QUIC
  packet) are protected and sent on the network port inside the entry's
  encapsulation (compat: the static one of the command line);
* network port: Ethernet[/VLAN]/IPv4|IPv6/UDP datagrams are unprotected and
  handed to the host as data frames with metadata; packets that fail
  authentication are dropped and counted; non-QUIC or unknown-connection
  traffic goes to the host unchanged (or is dropped: --unknown drop);
  signaling arriving on the network port is ignored and counted.

The testbed uses it until the real application exists and as a functional
twin of it in tests.  Counters go to --stats FILE (JSON, rewritten every
200 ms and at exit), with the counter names of the C library.

    python -m quicoff.standin_offload --host-if host0 --net-if net0 \\
        --stats /tmp/a.json --src-ip 198.18.0.1 --dst-ip 198.18.0.2
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import select
import signal
import socket
import struct
import sys
import time

from . import wire

ETH_P_ALL = 0x0003
ETH_DATA = wire.ETHERTYPE_DATA
ETH_SIGNALING = wire.ETHERTYPE_SIGNAL
_M64 = (1 << 64) - 1
_REQUESTS = ("add", "update", "remove", "query")

_stop = False


def _on_signal(*_):
    global _stop
    _stop = True


def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _ethertype(fr: bytes):
    """(EtherType, offset of what follows it), up to two tags skipped as
    quicoff-dpdk does. A deeper stack returns (None, 0): the caller drops it,
    since it may hide signaling (keys) or plaintext data (default-deny)."""
    off = 12
    et = int.from_bytes(fr[off:off + 2], "big")
    for _ in range(2):
        if et not in wire.TAG_TPIDS:
            break
        off += 4
        et = int.from_bytes(fr[off:off + 2], "big")
    if et in wire.TAG_TPIDS or len(fr) < off + 2:
        return None, 0
    return et, off + 2


def _mac_of(iface: str) -> bytes:
    with open("/sys/class/net/%s/address" % iface) as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))


class StandIn:
    def __init__(self, a):
        import quicoff
        self.a = a
        self.engine = quicoff.Engine(local_cid_len=a.local_cid_len)
        self.host = self._sock(a.host_if)
        self.net = self._sock(a.net_if)
        self.host_mac = _mac_of(a.host_if)
        self.net_mac = _mac_of(a.net_if)
        self.peer_mac = bytes.fromhex(a.dst_mac.replace(":", "")) if a.dst_mac else b"\xff" * 6
        self.src_ip = ipaddress.ip_address(a.src_ip)
        self.dst_ip = ipaddress.ip_address(a.dst_ip)
        self.tx = {}        # index -> (handle, dcid_len, encap or None, "v1"|"compat")
        self.rx = {}        # handle -> (index, "v1"|"compat")
        self.rx_by_dcid = {}
        self.rx_by_index = {}  # v1 RX index -> handle
        self.host_dst = b"\xff" * 6   # learnt from the host's frames
        self.c = {k: 0 for k in (
            "host_rx", "host_tx", "net_rx", "net_tx", "signaling", "signaling_ignored_net",
            "signaling_errors", "tx_packets", "tx_dropped", "rx_packets", "auth_failed",
            "unknown_connection", "malformed", "key_phase_unavailable", "passed_to_host",
            "dropped", "other_status", "tag_stack_dropped")}
        self.last_write = 0.0
        self.done = {}      # v1: (request ID, type, direction, index) -> ACK frame

    @staticmethod
    def _sock(iface):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((iface, ETH_P_ALL))
        try:
            s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE
        except OSError:
            pass
        try:
            s.setsockopt(263, 23, 1)  # PACKET_IGNORE_OUTGOING
        except OSError:
            pass
        s.setblocking(False)
        return s

    # -- control ------------------------------------------------------------

    def compat_signaling(self, m):
        """seed 000's signaling_host (TX entry by index) / signaling_peer (RX
        entry by DCID), docs/protocol.md §3; no answer (compat has none)."""
        keys = (m.quic_key, m.iv, m.hp_key)
        layout = "seed000" if m.path_id else "rfc9001"
        eng = self.engine
        try:
            # An entry already there is replaced in place (atomically; a
            # refused frame leaves it as it was), as quicoff-dpdk does.
            if m.kind == "compat_host":
                old = self.tx.get(m.index)
                args = ("tx", m.suite, b"\0" * m.dcid_len)
                kw = dict(keys=keys, path_id=m.path_id or None, nonce_layout=layout)
                h = eng.replace_connection(old[0], *args, **kw) if old else \
                    eng.add_connection(*args, **kw)
                self.tx[m.index] = (h, m.dcid_len, None, "compat")
            else:                   # compat_peer: keyed by DCID (a second path's is kept)
                dcid = m.dcid[:self.a.local_cid_len]
                old = self.rx_by_dcid.get(dcid)
                if (old is not None and self.rx.get(old, (0, ""))[1] != "compat") or \
                        m.index in self.rx_by_index:
                    raise ValueError("a v1 entry's DCID or index")
                args = ("rx", m.suite, dcid)
                kw = dict(keys=keys, path_id=m.path_id or None, nonce_layout=layout,
                          largest_pn=None if m.full_pn == wire.PN_NONE else m.full_pn)
                h = eng.replace_connection(old, *args, **kw) if old is not None else \
                    eng.add_connection(*args, **kw)
                self.rx[h] = (m.index, "compat")
                self.rx_by_dcid[dcid] = h
        except Exception:
            self.c["signaling_errors"] += 1

    def v1_request(self, m, reply_to: bytes, vlan=None):
        """ADD / UPDATE / REMOVE / QUERY (docs/protocol.md §4.5-§4.7), answered."""
        key = (m.request_id, m.kind, m.direction, m.index)
        if key in self.done:
            self._send(self.host, self.done[key])
            return
        reply = wire.ack_for(m)
        eng, d, idx = self.engine, m.direction, m.index
        try:
            if m.kind == "add":
                reply.status = self._v1_add(m)
            elif m.kind == "update":
                h = self._v1_handle(d, idx)
                if h is None:
                    reply.status = "unknown_connection"
                else:
                    kw = {}
                    if m.key_generation is not None:
                        kw["key_generation"] = m.key_generation
                        if m.secret is not None:
                            kw["secret"] = m.secret
                        else:
                            # the HP key stays across key updates: the library
                            # installs key and IV only
                            kw["keys"] = (m.key, m.iv, bytes(len(m.key)))
                    if m.roll_generation is not None:
                        kw["roll"] = True
                    if m.drop_old:
                        kw["drop_old"] = True
                    if m.largest_pn is not None:
                        kw["largest_pn"] = m.largest_pn
                    if m.fail_action is not None:
                        kw["fail_action"] = m.fail_action
                    if m.usage_threshold is not None:
                        kw["usage_threshold"] = m.usage_threshold
                    if kw:
                        eng.update_connection(h, **kw)
                    if m.encap is not None and d == "tx":
                        ent = self.tx[idx]
                        self.tx[idx] = (ent[0], ent[1], self._encap(m.encap), "v1")
            elif m.kind == "remove":
                h = self._v1_handle(d, idx)
                if h is None:
                    reply.status = "unknown_connection"
                else:
                    eng.remove_connection(h)
                    if d == "tx":
                        self.tx.pop(idx, None)
                    else:
                        self.rx_by_index.pop(idx, None)
                        self.rx.pop(h, None)
                        self.rx_by_dcid = {k: v for k, v in self.rx_by_dcid.items() if v != h}
            else:                   # query -> STATS
                if m.conn:
                    h = self._v1_handle(d, idx)
                    if h is None:
                        reply.status = "unknown_connection"
                    else:
                        cs = eng.connection_stats(h)
                        reply.conn = {n: cs.get(n, 0) & _M64 for n in wire.CONN_STATS_FIELDS}
                if m.table:
                    ts = eng.stats()
                    reply.table = {n: ts.get(n, 0) for n in wire.TABLE_STATS_FIELDS}
        except Exception as e:  # the library said no
            st = getattr(e, "status", None)
            reply.status = st if st in wire.STATUSES else "invalid_argument"
        out = wire.frame(reply, reply_to, self.host_mac, vlan)
        if m.kind != "query":
            self.done[key] = out
            if len(self.done) > 1024:
                self.done.pop(next(iter(self.done)))
        self._send(self.host, out)

    def signaling(self, fr: bytes):
        """A host frame on 0x88B5 other than v1 data: compat or v1 signaling."""
        self.c["signaling"] += 1
        try:
            eth, m = wire.decode_frame(fr)
        except wire.WireError as e:
            self.c["signaling_errors"] += 1
            h = e.header
            if h is not None and h["kind"] not in ("ack", "stats", "event", "data_to_host"):
                # a readable v1 header: answered with the decoder's status (§6)
                try:
                    self._send(self.host, wire.frame(wire.ack_for(h, e.status), fr[6:12],
                                                     self.host_mac))
                except wire.WireError:
                    pass
            return
        if m.kind in ("compat_host", "compat_peer"):
            self.compat_signaling(m)
        elif m.kind in _REQUESTS:
            self.v1_request(m, fr[6:12], eth.vlan)
        else:                       # an offload's message sent by the host
            self.c["signaling_errors"] += 1

    def _v1_handle(self, d, idx):
        if d == "tx":
            ent = self.tx.get(idx)
            return ent[0] if ent else None
        return self.rx_by_index.get(idx)

    @staticmethod
    def _encap(e: "wire.Encap") -> dict:
        src = ipaddress.ip_address(e.src_ip)
        return dict(dst_mac=bytes.fromhex(e.dst_mac.replace(":", "")),
                    src_mac=bytes.fromhex(e.src_mac.replace(":", "")), family=src.version,
                    ttl=e.ttl or 64, src_port=e.src_port, dst_port=e.dst_port, src_ip=src,
                    dst_ip=ipaddress.ip_address(e.dst_ip))

    def _v1_add(self, m) -> str:
        eng = self.engine
        kw = dict(level=m.level, version=m.quic_version or 1, local_addr=m.local_addr,
                  path_id=m.path_id, nonce_layout=m.nonce_layout, fail_action=m.fail_action,
                  largest_pn=None if m.largest_pn == wire.PN_NONE else m.largest_pn,
                  usage_threshold=m.usage_threshold, key_generation=m.key_generation,
                  grease_quic_bit=m.grease_quic_bit)
        if m.secret is not None:
            kw["secret"] = m.secret
        else:
            kw["keys"] = (m.key, m.iv, m.hp)
        if m.next_key is not None:
            kw["next_keys"] = (m.next_key, m.next_iv, m.hp)
        d, idx = m.direction, m.index
        old = self._v1_handle(d, idx)
        if old is not None and not m.replace:
            return "exists"
        # REPLACE: in place, atomically; a failure (raised) leaves the old entry
        h = eng.replace_connection(old, d, m.suite, m.dcid, **kw) if old is not None else \
            eng.add_connection(d, m.suite, m.dcid, **kw)
        if d == "tx":
            self.tx[idx] = (h, len(m.dcid), self._encap(m.encap) if m.encap else None, "v1")
        else:
            self.rx_by_dcid = {k: v for k, v in self.rx_by_dcid.items() if v != h}
            self.rx[h] = (idx, "v1")
            self.rx_by_index[idx] = h
            self.rx_by_dcid[m.dcid] = h
        return "ok"

    # -- data ---------------------------------------------------------------

    def encap(self, quic: bytes, e=None) -> bytes:
        sport, dport = self.a.src_port, self.a.dst_port
        src_ip, dst_ip, dmac, smac = self.src_ip, self.dst_ip, self.peer_mac, self.net_mac
        if e is not None:
            sport, dport, src_ip, dst_ip = e["src_port"], e["dst_port"], e["src_ip"], e["dst_ip"]
            dmac, smac = e["dst_mac"], e["src_mac"]
        if src_ip.version == 4:
            ulen = 8 + len(quic)
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0,
                             src_ip.packed, dst_ip.packed)
            ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
            pseudo = src_ip.packed + dst_ip.packed + struct.pack("!BBH", 0, 17, ulen)
            et = 0x0800
        else:
            ulen = 8 + len(quic)
            ip = struct.pack("!IHBB16s16s", 6 << 28, ulen, 17, 64, src_ip.packed, dst_ip.packed)
            pseudo = src_ip.packed + dst_ip.packed + struct.pack("!IxxxB", ulen, 17)
            et = 0x86DD
        udp = struct.pack("!HHHH", sport, dport, ulen, 0)
        ck = _csum(pseudo + udp + quic) or 0xFFFF
        udp = udp[:6] + struct.pack("!H", ck)
        return dmac + smac + struct.pack("!H", et) + ip + udp + quic

    def from_host(self, frames):
        batch, ents = [], []
        for fr in frames:
            if fr[6:12] != self.host_mac:
                self.host_dst = fr[6:12]
            et, off = _ethertype(fr)
            if et is None:
                self.c["tag_stack_dropped"] += 1
                continue
            if et not in (ETH_SIGNALING, ETH_DATA):
                # anything else from the host goes to the network unchanged
                self._send(self.net, fr)
                self.c["net_tx"] += 1
                continue
            if et == ETH_SIGNALING and not (len(fr) > off + 2 and fr[off] == wire.MAGIC
                                            and fr[off + 2] == wire.KINDS["data_to_offload"]):
                self.signaling(fr)
                continue
            try:
                _eth, m = wire.decode_frame(fr)
            except wire.WireError:
                self.c["malformed"] += 1
                continue
            if m.kind == "compat_data":
                index, pn, q = m.index, m.full_pn, m.packet
            else:
                index, pn, q = m.index, m.pn, m.packet
            ent = self.tx.get(index)
            if ent is None or not q:
                self.c["tx_dropped"] += 1
                continue
            h, dlen = ent[0], ent[1]
            hl = 1 + dlen + (q[0] & 3) + 1
            if len(q) < hl:
                self.c["malformed"] += 1
                continue
            batch.append((h, q[:hl], q[hl:], pn))
            ents.append(ent)
        if batch:
            for ent, r in zip(ents, self.engine.protect_burst(batch)):
                if r.ok:
                    self._send(self.net, self.encap(r.packet, ent[2]))
                    self.c["tx_packets"] += 1
                    self.c["net_tx"] += 1
                else:
                    self.c["tx_dropped"] += 1

    def from_net(self, frames):
        dgrams, orig = [], []
        for fr in frames:
            et, off = _ethertype(fr)
            if et is None:
                self.c["tag_stack_dropped"] += 1
                continue
            if et in (ETH_SIGNALING, ETH_DATA):
                self.c["signaling_ignored_net"] += 1
                continue
            u = None
            if et == 0x0800 and len(fr) >= off + 28 and fr[off + 9] == 17:
                u = off + (fr[off] & 15) * 4
                end = off + int.from_bytes(fr[off + 2:off + 4], "big")
            elif et == 0x86DD and len(fr) >= off + 48 and fr[off + 6] == 17:
                u = off + 40
                end = u + int.from_bytes(fr[off + 4:off + 6], "big")
            if u is None or end > len(fr) or end < u + 9:
                self._to_host_raw(fr)
                continue
            dgrams.append(fr[u + 8:end])
            orig.append(fr)
        if not dgrams:
            return
        for fr, r in zip(orig, self.engine.unprotect_burst(dgrams)):
            if r.ok:
                index, fmt = self.rx.get(r.connection, (0xFFFF, "compat"))
                if fmt == "v1":
                    msg = wire.DataToHost(index=index, pn=r.pn, packet=r.packet, status=r.code,
                                          key_phase=r.key_phase, flags=r.flags)
                else:
                    msg = wire.CompatData(index=index, full_pn=r.pn, packet=r.packet)
                self._send(self.host, wire.frame(msg, self.host_dst, self.host_mac))
                self.c["rx_packets"] += 1
                self.c["host_tx"] += 1
            elif r.status == "unknown_connection":
                self.c["unknown_connection"] += 1
                self._to_host_raw(fr)
            elif r.status in ("auth_failed", "malformed", "key_phase_unavailable"):
                self.c[r.status] += 1
                self.c["dropped"] += 1
            else:
                self.c["other_status"] += 1
                self.c["dropped"] += 1

    def _to_host_raw(self, fr):
        if self.a.unknown == "pass":
            self._send(self.host, fr)
            self.c["passed_to_host"] += 1
            self.c["host_tx"] += 1
        else:
            self.c["dropped"] += 1

    @staticmethod
    def _send(sock, frame):
        for _ in range(100):
            try:
                sock.send(frame)
                return
            except BlockingIOError:
                time.sleep(0.0001)
            except OSError:
                return

    # -- loop ---------------------------------------------------------------

    def write_stats(self, final=False):
        if not self.a.stats:
            return
        out = dict(self.c, final=final, offload="standin", pid=os.getpid(),
                   engine=self.engine.stats(), connections=len(self.tx) + len(self.rx))
        tmp = self.a.stats + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f)
        os.replace(tmp, self.a.stats)

    @staticmethod
    def _drain(sock, n=64):
        out = []
        for _ in range(n):
            try:
                out.append(sock.recv(65536))
            except BlockingIOError:
                break
        return out

    def run(self):
        if self.a.ready:
            with open(self.a.ready, "w") as f:
                f.write(str(os.getpid()))
        print("quicoff stand-in offload: host %s, net %s (pid %d)"
              % (self.a.host_if, self.a.net_if, os.getpid()), flush=True)
        while not _stop:
            now = time.monotonic()
            if now - self.last_write > 0.2:
                self.write_stats()
                self.last_write = now
            r, _, _ = select.select([self.host, self.net], [], [], 0.05)
            if self.host in r:
                fr = self._drain(self.host)
                self.c["host_rx"] += len(fr)
                self.from_host(fr)
            if self.net in r:
                fr = self._drain(self.net)
                self.c["net_rx"] += len(fr)
                self.from_net(fr)
        self.write_stats(final=True)
        self.engine.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m quicoff.standin_offload",
                                description="STAND-IN for quicoff-dpdk (Python, slow)")
    p.add_argument("--host-if", required=True)
    p.add_argument("--net-if", required=True)
    p.add_argument("--stats")
    p.add_argument("--ready", help="file written once listening")
    p.add_argument("--local-cid-len", type=int, default=8)
    p.add_argument("--src-ip", default="198.18.0.1")
    p.add_argument("--dst-ip", default="198.18.0.2")
    p.add_argument("--src-port", type=int, default=4433)
    p.add_argument("--dst-port", type=int, default=4433)
    p.add_argument("--dst-mac", help="peer MAC on the network side (default broadcast)")
    p.add_argument("--unknown", choices=("pass", "drop"), default="pass")
    a = p.parse_args(argv)
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    StandIn(a).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
