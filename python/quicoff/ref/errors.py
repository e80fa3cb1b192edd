# SPDX-License-Identifier: Apache-2.0
"""Exceptions raised by the reference model.

Every failure to remove protection from a received packet is reported as a
:class:`RefError`: either the bytes cannot be parsed as a protected QUIC
packet (:class:`Malformed`) or the AEAD rejected them (:class:`AuthFailed`).
Bad arguments supplied by a *sender* (``protect``, header builders) raise the
built-in :class:`ValueError` instead, because they are programming errors, not
properties of data received from the network.
"""


class RefError(Exception):
    """Base class of the errors a receiver can see."""


class Malformed(RefError):
    """The bytes are not a well-formed protected QUIC packet.

    Raised for truncated headers, a Length field pointing past the end of the
    datagram, a packet too short to take the header-protection sample from, or
    a packet type that carries no packet protection (Retry, Version
    Negotiation, unknown version).
    """


class AuthFailed(RefError):
    """AEAD authentication of the packet failed (RFC 9001 §5.3)."""
