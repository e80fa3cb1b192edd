# SPDX-License-Identifier: Apache-2.0
"""TLS key log files (NSS SSLKEYLOGFILE format), as QUIC stacks write them.

Each line is ``LABEL <client_random hex> <secret hex>``; ``#`` starts a
comment.  The TLS 1.3 labels a QUIC connection needs:

=================================  ==========================================
CLIENT_EARLY_TRAFFIC_SECRET        0-RTT (client -> server)
CLIENT_HANDSHAKE_TRAFFIC_SECRET    Handshake packets, client -> server
SERVER_HANDSHAKE_TRAFFIC_SECRET    Handshake packets, server -> client
CLIENT_TRAFFIC_SECRET_0            1-RTT generation 0, client -> server
SERVER_TRAFFIC_SECRET_0            1-RTT generation 0, server -> client
=================================  ==========================================

Draft-era ``QUIC_``-prefixed spellings are accepted as aliases.  Other labels
(EXPORTER_SECRET, CLIENT_RANDOM for TLS 1.2, ...) are kept but unused.
Secrets are looked up by the 32-byte client random from the ClientHello.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Union

__all__ = [
    "KeyLog",
    "KeyLogError",
    "LABELS",
    "CLIENT_EARLY",
    "CLIENT_HANDSHAKE",
    "SERVER_HANDSHAKE",
    "CLIENT_1RTT",
    "SERVER_1RTT",
]

CLIENT_EARLY = "CLIENT_EARLY_TRAFFIC_SECRET"
CLIENT_HANDSHAKE = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
SERVER_HANDSHAKE = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
CLIENT_1RTT = "CLIENT_TRAFFIC_SECRET_0"
SERVER_1RTT = "SERVER_TRAFFIC_SECRET_0"
LABELS = (CLIENT_EARLY, CLIENT_HANDSHAKE, SERVER_HANDSHAKE, CLIENT_1RTT, SERVER_1RTT)

_ALIASES = {"QUIC_" + label: label for label in LABELS}


class KeyLogError(ValueError):
    pass


@dataclass
class KeyLog:
    """Secrets by client random: ``keylog.get(client_random, LABEL)``."""

    entries: Dict[bytes, Dict[str, bytes]] = field(default_factory=dict)
    bad_lines: List[int] = field(default_factory=list)  # 1-based numbers of lines skipped

    # -- building ---------------------------------------------------------
    @classmethod
    def from_text(cls, text: str) -> "KeyLog":
        log = cls()
        log.add_text(text)
        return log

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike]) -> "KeyLog":
        """Reads a key log file; OSError if it cannot be read."""
        with open(path, "rb") as f:
            raw = f.read()
        return cls.from_text(raw.decode("utf-8", errors="replace"))

    def add_text(self, text: str) -> int:
        """Adds the lines of ``text``; returns how many secrets were taken."""
        taken = 0
        # A file saved by an editor that writes a UTF-8 BOM (U+FEFF) would
        # otherwise glue it to the first label, and str.strip() keeps it.
        if text.startswith("\ufeff"):
            text = text[1:]
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 3:
                self.bad_lines.append(number)
                continue
            label, random_hex, secret_hex = parts
            label = _ALIASES.get(label, label)
            try:
                client_random = bytes.fromhex(random_hex)
                secret = bytes.fromhex(secret_hex)
            except ValueError:
                self.bad_lines.append(number)
                continue
            if len(client_random) != 32 or not secret:
                self.bad_lines.append(number)
                continue
            # A later line for the same random and label wins (a stack that
            # logs twice logs the same secret; a reused random is a new session).
            self.entries.setdefault(client_random, {})[label] = secret
            taken += 1
        return taken

    def add(self, client_random: bytes, label: str, secret: bytes) -> None:
        self.entries.setdefault(bytes(client_random), {})[_ALIASES.get(label, label)] = bytes(
            secret
        )

    def merge(self, other: "KeyLog") -> None:
        for random, secrets in other.entries.items():
            self.entries.setdefault(random, {}).update(secrets)

    # -- lookup -----------------------------------------------------------
    def get(self, client_random: bytes, label: str) -> Optional[bytes]:
        return self.entries.get(bytes(client_random), {}).get(label)

    def secrets(self, client_random: bytes) -> Dict[str, bytes]:
        return dict(self.entries.get(bytes(client_random), {}))

    def __contains__(self, client_random) -> bool:
        return bytes(client_random) in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def client_randoms(self) -> Iterable[bytes]:
        return self.entries.keys()

    # -- writing ----------------------------------------------------------
    def to_text(self) -> str:
        lines = []
        for random, secrets in self.entries.items():
            for label, secret in secrets.items():
                lines.append(f"{label} {random.hex()} {secret.hex()}")
        return "\n".join(lines) + ("\n" if lines else "")
