# SPDX-License-Identifier: Apache-2.0
"""Control-plane driver for the quicoff RTL (hw/rtl/quicoff_rx.v) over its
AXI4-Lite port.

``RtlDriver.add_connection`` takes the arguments of
:meth:`quicoff.Engine.add_connection`, so one control-plane call can program
the software engine and the hardware. Calls only compute and queue register
writes; ``await drv.commit()`` (asynchronous bus, e.g. a cocotb AXI-Lite
master) or ``drv.commit_sync()`` (synchronous bus, e.g. an mmap of the
register window) sends them. The bus object provides ``write(addr, value)``
and ``read(addr) -> int`` on 32-bit registers.

The driver owns the hash table's placement: it computes the same seeded hash
as the hardware, picks a free way in the bucket (fingerprints unique per
bucket), and rewrites the whole bucket. The hardware lookup then never
probes.

Register map (byte addresses):
  0x000 ID "QORX"          0x004 DCID length of the table (0..20)
  0x008 hash seed (wo)     0x00C command: [3:0] op, [31:16] index; read: busy
  0x010 key-update event (read pops): [31] valid, [15:0] entry
  0x014 geometry {capacity16, buckets8, ways8}
  0x040.. global counters: frames, ok, auth_failed, unknown, malformed,
          passthrough, key_phase_unavailable, dropped
  0x080.. 32 staging words        0x100.. 8 read-back words
Commands: 1 entry (config, HP key, PN/phase state; counters cleared),
2 payload key+IV of one phase slot, 3 bucket, 4 remove, 5 read entry
state and counters into the read-back words, 6 PN/phase state only.
"""

from __future__ import annotations

import inspect
import ipaddress
import os

from . import ref

__all__ = ["RtlDriver", "rtl_hash", "GLOBAL_COUNTERS", "STATUS_NAMES"]

STATUS_NAMES = {
    0: "ok",
    1: "auth_failed",
    2: "unknown_connection",
    3: "malformed",
    4: "passthrough",
    5: "key_phase_unavailable",
}
GLOBAL_COUNTERS = (
    "frames",
    "ok",
    "auth_failed",
    "unknown_connection",
    "malformed",
    "passthrough",
    "key_phase_unavailable",
    "dropped",
)
_SUITES = {"aes-128-gcm": 0, "aes-256-gcm": 1}
OT_NONE, OT_NEXT, OT_PREV = 0, 1, 2
_M32 = 0xFFFFFFFF


def _xs32(x):
    x ^= (x << 13) & _M32
    x ^= x >> 17
    x ^= (x << 5) & _M32
    return x


def rtl_hash(seed: int, key20: bytes) -> int:
    """The hardware's lookup hash (quicoff_rx.v qo_hash) of a 20-byte key."""
    h = seed & _M32
    for i in range(5):
        h = _xs32(h ^ int.from_bytes(key20[4 * i : 4 * i + 4], "big"))
    return h


def _words(b: bytes) -> list[int]:
    b = b + bytes(-len(b) % 4)
    return [int.from_bytes(b[i : i + 4], "big") for i in range(0, len(b), 4)]


class _Conn:
    __slots__ = (
        "index",
        "suite",
        "key20",
        "bucket",
        "fp",
        "hp",
        "slots",
        "gen",
        "secret",
        "fail_pass",
    )


class RtlDriver:
    def __init__(
        self, bus, local_cid_len=8, capacity=256, buckets=128, ways=4, seed=None, direction="rx"
    ):
        """``direction``: which block's control port ``bus`` reaches
        (quicoff_rx: entries found by DCID through the hash table;
        quicoff_tx: entries named by index in the frame's descriptor)."""
        if direction not in ("rx", "tx"):
            raise ValueError("direction is rx or tx")
        self.direction = direction
        if not 0 <= local_cid_len <= ref.MAX_CID_LEN:
            raise ValueError("local_cid_len must be 0..20")
        self.bus = bus
        self.local_cid_len = local_cid_len
        self.capacity, self.buckets, self.ways = capacity, buckets, ways
        self.seed = int.from_bytes(os.urandom(4), "big") if seed is None else seed & _M32
        self._q = [("w", 0x004, local_cid_len), ("w", 0x008, self.seed)]
        self._bkt = [[None] * ways for _ in range(buckets)]  # (fp, index) or None
        self._conns: dict[int, _Conn] = {}
        self._free = list(range(capacity))

    # ---------------------------------------------------------------- queueing
    def _cmd(self, op, index, stage: dict[int, int]):
        for w, v in sorted(stage.items()):
            self._q.append(("w", 0x080 + 4 * w, v & _M32))
        self._q.append(("w", 0x00C, (index << 16) | op))
        self._q.append(("busy",))

    def _lookup_key(self, dcid: bytes, local_addr) -> bytes:
        if self.local_cid_len:
            if len(dcid) != self.local_cid_len:
                raise ValueError(f"this table's DCIDs are {self.local_cid_len} bytes")
            return dcid.ljust(20, b"\0")
        if local_addr is None:
            raise ValueError("zero-length CIDs are looked up by local address + port")
        addr, port = local_addr
        a = ipaddress.ip_address(addr).packed
        return (a + int(port).to_bytes(2, "big")).ljust(20, b"\0")

    def _state_words(self, largest_pn, cur_phase, other, first_pn):
        st = {}
        lp = 0 if largest_pn is None else (1 << 63) | largest_pn
        # valid bit in [31] of the high word, 30 PN bits below it
        st[18] = ((lp >> 63) << 31) | ((largest_pn or 0) >> 32 & 0x3FFFFFFF)
        st[19] = (largest_pn or 0) & _M32
        st[20] = (other << 1) | cur_phase
        st[21] = first_pn >> 32 & 0x3FFFFFFF
        st[22] = first_pn & _M32
        return st

    def _slot_words(self, keys: ref.PacketKeys, phase: int):
        key = keys.key.ljust(32, b"\0")
        st = dict(enumerate(_words(key) + _words(keys.iv)))
        st[11] = phase << 1
        return st

    # ---------------------------------------------------------------- Engine API
    def add_connection(
        self,
        direction,
        suite,
        dcid,
        secret=None,
        keys=None,
        path_id=None,
        *,
        level="1rtt",
        version=1,
        local_addr=None,
        nonce_layout=None,
        fail_action="drop",
        largest_pn=None,
        usage_threshold=0,
        key_generation=0,
        next_keys=None,
        next_secret=None,
        derive_next=True,
    ):
        """Same arguments as Engine.add_connection; returns the entry index.
        What the RTL does not do raises NotImplementedError (never silently
        ignored): long-header
        levels, ChaCha20/CCM, the multipath nonce, usage thresholds."""
        if direction != self.direction:
            raise ValueError(f"this driver programs the {self.direction} block")
        if suite not in _SUITES:
            raise NotImplementedError(f"{suite}: the RTL does AES-128-GCM and AES-256-GCM")
        if level not in ("1rtt", "1-rtt", "application"):
            raise NotImplementedError("the RTL offloads 1-RTT packets only")
        if path_id is not None or nonce_layout not in (None, "rfc9001"):
            raise NotImplementedError("the RTL uses the RFC 9001 nonce only")
        if usage_threshold:
            raise NotImplementedError("the RTL has no usage limits yet")
        if fail_action not in ("drop", "pass"):
            raise ValueError("fail_action is drop or pass")
        if (secret is None) == (keys is None):
            raise ValueError("give secret or keys")
        if next_keys is not None and next_secret is not None:
            raise ValueError("give next_keys or next_secret, not both")
        dcid = bytes(dcid)
        if secret is not None:
            keys = ref.derive_packet_keys(suite, secret, version)
        elif not isinstance(keys, ref.PacketKeys):
            keys = ref.PacketKeys(*keys)
        if next_secret is not None:
            next_keys = ref.derive_packet_keys(suite, next_secret, version)
        elif next_keys is None and secret is not None and derive_next:
            _, next_keys = ref.next_packet_keys(suite, secret, keys, version)
        elif next_keys is not None and not isinstance(next_keys, ref.PacketKeys):
            next_keys = ref.PacketKeys(*next_keys)

        if self.direction == "tx":
            key20, h = dcid.ljust(20, b"\0"), 0
        else:
            key20 = self._lookup_key(dcid, local_addr)
            h = rtl_hash(self.seed, key20)
        b, fp = h % self.buckets, h >> 20
        cells = self._bkt[b]
        if self.direction == "rx":
            if any(c is not None and c[0] == fp for c in cells):
                raise OverflowError("fingerprint already used in this bucket (reseed the table)")
            if None not in cells:
                raise OverflowError("bucket full")
        if not self._free:
            raise OverflowError("table full")
        idx = self._free.pop(0)
        c = _Conn()
        c.index, c.suite, c.key20, c.bucket, c.fp = idx, suite, key20, b, fp
        c.gen = key_generation
        c.fail_pass = fail_action == "pass"
        phase = key_generation & 1
        st = dict(enumerate(_words(keys.hp.ljust(32, b"\0"))))
        for i, w in enumerate(_words(key20)):
            st[12 + i] = w
        st[17] = 1 | (_SUITES[suite] << 8) | (int(c.fail_pass) << 9)
        st.update(
            self._state_words(largest_pn, phase, OT_NEXT if next_keys is not None else OT_NONE, 0)
        )
        self._cmd(2, idx, self._slot_words(keys, phase))
        if next_keys is not None:
            self._cmd(2, idx, self._slot_words(next_keys, phase ^ 1))
        self._cmd(1, idx, st)
        if self.direction == "rx":
            cells[cells.index(None)] = (fp, idx)
            self._write_bucket(b)
        self._conns[idx] = c
        return idx

    def update_connection(
        self,
        handle,
        *,
        keys=None,
        key_generation=None,
        largest_pn=None,
        first_pn=0,
        current_generation=None,
    ):
        """Installs generation ``key_generation`` in its phase slot as the
        next generation (libquicoff's QUICOFF_UPDATE_KEYS: it replaces the
        previous generation's keys). ``current_generation`` is the one the
        data plane uses now (read it with read_connection)."""
        self._conns[handle]  # KeyError for a handle never added
        if keys is None or key_generation is None:
            raise ValueError("give keys and key_generation")
        if not isinstance(keys, ref.PacketKeys):
            keys = ref.PacketKeys(*keys)
        self._cmd(2, handle, self._slot_words(keys, key_generation & 1))
        cur = key_generation - 1 if current_generation is None else current_generation
        if key_generation != cur + 1:
            raise ValueError("the RTL holds the current and the next (or previous) generation")
        # the other slot now holds the next generation; the PN state is kept
        # by reading it first (commit_* does the read-modify-write)
        self._q.append(("set_other", handle, OT_NEXT, largest_pn, first_pn))

    def remove_connection(self, handle):
        c = self._conns.pop(handle)
        if self.direction == "rx":
            cells = self._bkt[c.bucket]
            cells[[x and x[1] for x in cells].index(handle)] = None
            self._write_bucket(c.bucket)
        self._cmd(4, handle, {})
        self._free.append(handle)

    def _write_bucket(self, b):
        st = {}
        for w, cell in enumerate(self._bkt[b]):
            st[24 + w] = 0 if cell is None else (1 << 31) | (cell[0] << 16) | cell[1]
        self._cmd(3, b, st)

    # ---------------------------------------------------------------- bus
    def _ops(self):
        """Generator of bus operations: ('w', a, v) | ('r', a) -> value."""
        q, self._q = self._q, []
        for op in q:
            if op[0] == "w":
                yield op
            elif op[0] == "busy":
                while (yield ("r", 0x00C)) & 1:
                    pass
            elif op[0] == "set_other":
                _, h, other, largest_pn, first_pn = op
                yield ("w", 0x00C, (h << 16) | 5)
                while (yield ("r", 0x00C)) & 1:
                    pass
                rb = []
                for i in range(8):
                    rb.append((yield ("r", 0x100 + 4 * i)))
                lp = None if not rb[3] >> 31 else ((rb[3] & 0x3FFFFFFF) << 32) | rb[4]
                if largest_pn is not None:
                    lp = largest_pn
                cur_phase = rb[5] >> 2 & 1
                fpn = ((rb[6] & 0x3FFFFFFF) << 32) | rb[7]
                st = self._state_words(
                    lp, cur_phase, other, fpn if first_pn is None else max(fpn, first_pn)
                )
                for w, v in sorted(st.items()):
                    yield ("w", 0x080 + 4 * w, v)
                yield ("w", 0x00C, (h << 16) | 6)
                while (yield ("r", 0x00C)) & 1:
                    pass

    async def commit(self):
        gen = self._ops()
        val = None
        try:
            while True:
                op = gen.send(val)
                if op[0] == "w":
                    r = self.bus.write(op[1], op[2])
                    if inspect.isawaitable(r):
                        await r
                    val = None
                else:
                    r = self.bus.read(op[1])
                    val = (await r) if inspect.isawaitable(r) else r
        except StopIteration:
            pass

    def commit_sync(self):
        gen = self._ops()
        val = None
        try:
            while True:
                op = gen.send(val)
                val = self.bus.write(op[1], op[2]) if op[0] == "w" else self.bus.read(op[1])
        except StopIteration:
            pass

    async def _read(self, addr):
        r = self.bus.read(addr)
        return (await r) if inspect.isawaitable(r) else r

    async def stats(self):
        """Global counters as a dict."""
        return {n: await self._read(0x040 + 4 * i) for i, n in enumerate(GLOBAL_COUNTERS)}

    async def connection_stats(self, handle):
        """Per-entry counters and PN/phase state, as the hardware holds them."""
        await self.commit()
        w = self.bus.write(0x00C, (handle << 16) | 5)
        if inspect.isawaitable(w):
            await w
        while (await self._read(0x00C)) & 1:
            pass
        rb = [await self._read(0x100 + 4 * i) for i in range(8)]
        return {
            "ok": rb[0],
            "auth_failed": rb[1],
            "key_updates": rb[2],
            "largest_pn": (((rb[3] & 0x3FFFFFFF) << 32) | rb[4]) if rb[3] >> 31 else None,
            "key_phase": rb[5] >> 2 & 1,
            "other_slot": ("none", "next", "previous", "?")[rb[5] & 3],
            "first_pn": ((rb[6] & 0x3FFFFFFF) << 32) | rb[7],
        }

    async def events(self):
        """Key-update events since the last call: list of entry indexes."""
        out = []
        while True:
            v = await self._read(0x010)
            if not v >> 31:
                return out
            out.append(v & 0xFFFF)
