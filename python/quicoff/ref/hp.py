# SPDX-License-Identifier: Apache-2.0
"""Header protection (RFC 9001 §5.4).

A 16-byte sample of the ciphertext, taken 4 bytes after the start of the
Packet Number field (§5.4.2), is turned into a 5-byte mask:

* AES suites (§5.4.3): mask = AES-ECB(hp_key, sample)[0:5]
* ChaCha20 (§5.4.4): counter = sample[0:4] as a little-endian integer,
  nonce = sample[4:16], mask = ChaCha20(hp_key, counter, nonce, 5 zero bytes)

mask[0] covers the low 4 bits (long header) or low 5 bits (short header) of
byte 0; mask[1:1+pn_len] covers the packet number bytes.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from .suites import SAMPLE_LEN, get_suite

SAMPLE_OFFSET = 4  # sample starts at pn_offset + 4
LONG_FIRST_BYTE_MASK = 0x0F
SHORT_FIRST_BYTE_MASK = 0x1F


def hp_mask(suite: str, hp_key: bytes, sample: bytes) -> bytes:
    """Five-byte header-protection mask for ``sample``."""
    s = get_suite(suite)
    if len(sample) != SAMPLE_LEN:
        raise ValueError(f"sample must be {SAMPLE_LEN} bytes")
    if len(hp_key) != s.key_len:
        raise ValueError(f"{suite} hp key is {s.key_len} bytes, got {len(hp_key)}")
    if s.hp == "aes":
        enc = Cipher(algorithms.AES(hp_key), modes.ECB()).encryptor()
        return (enc.update(sample) + enc.finalize())[:5]
    # ChaCha20: the library takes a 16-byte "nonce" which is the RFC 8439
    # block counter (32 bits, little-endian) followed by the 96-bit nonce.
    counter = int.from_bytes(sample[0:4], "little")
    chacha_nonce = sample[4:16]
    enc = Cipher(
        algorithms.ChaCha20(hp_key, counter.to_bytes(4, "little") + chacha_nonce), mode=None
    ).encryptor()
    return enc.update(b"\x00" * 5) + enc.finalize()


def first_byte_mask(first_byte: int) -> int:
    """Bits of byte 0 that header protection covers, by header form."""
    return LONG_FIRST_BYTE_MASK if first_byte & 0x80 else SHORT_FIRST_BYTE_MASK
