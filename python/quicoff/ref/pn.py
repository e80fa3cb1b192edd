# SPDX-License-Identifier: Apache-2.0
"""Packet-number encoding and decoding (RFC 9000 §17.1, Appendix A.2, A.3)."""

from __future__ import annotations

PN_MAX = (1 << 62) - 1


def encode_pn_len(pn: int, largest_acked: int | None = None) -> int:
    """Number of bytes (1..4) to send packet number ``pn`` with (RFC 9000 A.2).

    The encoding must cover twice the number of packets in flight, i.e.
    ``num_unacked = pn - largest_acked`` (``pn + 1`` when nothing has been
    acknowledged yet) needs ``log2(num_unacked) + 1`` bits. In integers: the
    smallest n with ``num_unacked <= 2**(8*n - 1)``.
    """
    if not 0 <= pn <= PN_MAX:
        raise ValueError(f"packet number out of range: {pn}")
    if largest_acked is None:
        num_unacked = pn + 1
    else:
        if largest_acked >= pn:
            raise ValueError("pn must be larger than largest_acked")
        num_unacked = pn - largest_acked
    for nbytes in (1, 2, 3, 4):
        if num_unacked <= 1 << (8 * nbytes - 1):
            return nbytes
    raise ValueError(f"{num_unacked} packets unacknowledged: cannot encode in 4 bytes")


def truncate_pn(pn: int, pn_len: int) -> bytes:
    """The ``pn_len`` least significant bytes of ``pn``, network order."""
    if pn_len not in (1, 2, 3, 4):
        raise ValueError(f"pn_len must be 1..4, not {pn_len}")
    if not 0 <= pn <= PN_MAX:
        raise ValueError(f"packet number out of range: {pn}")
    return (pn & ((1 << (8 * pn_len)) - 1)).to_bytes(pn_len, "big")


def decode_pn(largest_pn: int | None, truncated: int, nbits: int) -> int:
    """Recover a full packet number (RFC 9000 Appendix A.3).

    ``largest_pn`` is the largest packet number successfully processed in
    this space, or ``None`` if none has been (then the expected number is 0).
    ``nbits`` is 8 * the encoded length.
    """
    if nbits not in (8, 16, 24, 32):
        raise ValueError(f"nbits must be 8, 16, 24 or 32, not {nbits}")
    pn_win = 1 << nbits
    if not 0 <= truncated < pn_win:
        raise ValueError("truncated packet number wider than nbits")
    expected = 0 if largest_pn is None else largest_pn + 1
    pn_hwin = pn_win // 2
    pn_mask = pn_win - 1
    # The candidate is the value closest to `expected` with the right low bits.
    candidate = (expected & ~pn_mask) | truncated
    if candidate <= expected - pn_hwin and candidate < (1 << 62) - pn_win:
        return candidate + pn_win
    if candidate > expected + pn_hwin and candidate >= pn_win:
        return candidate - pn_win
    return candidate
