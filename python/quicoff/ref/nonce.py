# SPDX-License-Identifier: Apache-2.0
"""AEAD nonce construction (RFC 9001 §5.3) and its multipath variants.

Layouts (all produce a 12-byte nonce = iv XOR a 96-bit value):

``"rfc9001"``
    96-bit big-endian packet number, left-padded with zeros. ``path_id`` is
    ignored.
``"multipath"``
    draft-ietf-quic-multipath-19 / RFC 10069: path ID as a 32-bit
    big-endian integer followed by the packet number as a 64-bit big-endian
    integer. With path ID 0 this equals the "rfc9001" layout.
``"multipath-path-id-le"``
    What the DPU prototype's DPDK code (docs/glossary.md) produced on a
    little-endian DPU (``htonl`` then shift): the path ID's 4 bytes in *little-endian* order, then the
    packet number as a 64-bit big-endian integer. Kept so that old captures
    can be checked; not interoperable for path IDs other than 0.

For the path-aware layouts ``path_id=None`` means path 0 (the initial path).
"""

from __future__ import annotations

from .pn import PN_MAX
from .suites import IV_LEN

NONCE_LAYOUTS = ("rfc9001", "multipath", "multipath-path-id-le")


def nonce(iv: bytes, pn: int, path_id: int | None = None, layout: str = "rfc9001") -> bytes:
    if len(iv) != IV_LEN:
        raise ValueError(f"iv must be {IV_LEN} bytes, got {len(iv)}")
    if not 0 <= pn <= PN_MAX:
        raise ValueError(f"packet number out of range: {pn}")
    if layout == "rfc9001":
        block = pn.to_bytes(IV_LEN, "big")
    elif layout in ("multipath", "multipath-path-id-le"):
        pid = 0 if path_id is None else path_id
        if not 0 <= pid < (1 << 32):
            raise ValueError(f"path_id must fit 32 bits: {pid}")
        block = pid.to_bytes(4, "big" if layout == "multipath" else "little") + pn.to_bytes(
            8, "big"
        )
    else:
        raise ValueError(f"unknown nonce layout {layout!r}; expected one of {NONCE_LAYOUTS}")
    return bytes(a ^ b for a, b in zip(iv, block))
