# SPDX-License-Identifier: Apache-2.0
"""quicoff: QUIC packet-protection offload engine.

The C data plane (libquicoff, compiled into ``quicoff._quicoff``) is reached
through :class:`Engine` and the key-schedule helpers below.  The pure-Python
reference model lives in ``quicoff.ref``; it imports without the compiled
extension, so this package does too: the C-backed names then raise
ImportError when used.
"""

__version__ = "0.1.0"

SUITES = ("aes-128-gcm", "aes-256-gcm", "aes-128-ccm", "chacha20-poly1305")

_ENGINE_NAMES = (
    "LEVELS",
    "DIRECTIONS",
    "NONCE_LAYOUTS",
    "FAIL_ACTIONS",
    "PN_NONE",
    "STATUS_NAMES",
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
)

try:
    from ._engine import (  # noqa: F401
        DIRECTIONS,
        FAIL_ACTIONS,
        LEVELS,
        NONCE_LAYOUTS,
        PN_NONE,
        STATUS_NAMES,
        Engine,
        EngineClosedError,
        PacketKeys,
        QuicoffError,
        Result,
        derive_next_secret,
        derive_packet_keys,
        initial_keys,
        initial_secrets,
        pn_decode,
        pn_encode_len,
        status_name,
        suite_key_len,
        suite_secret_len,
    )

    _IMPORT_ERROR = None
except ImportError as e:  # extension not built (or library symbols missing)
    _IMPORT_ERROR = e

    def __getattr__(name):
        if name in _ENGINE_NAMES:
            raise ImportError(
                "quicoff.%s needs the compiled extension quicoff._quicoff, "
                "which failed to import: %s" % (name, _IMPORT_ERROR)
            ) from _IMPORT_ERROR
        raise AttributeError("module 'quicoff' has no attribute %r" % (name,))


__all__ = ("SUITES", "__version__") + _ENGINE_NAMES
