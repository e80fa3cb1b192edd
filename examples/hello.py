# SPDX-License-Identifier: Apache-2.0
"""The smallest complete use of the Python bindings (run by the tests, shown in the README)."""

import quicoff

dcid = bytes(range(1, 9))
secret = bytes([0x42]) * 32  # a TLS 1-RTT traffic secret

with quicoff.Engine(local_cid_len=8) as engine:
    tx = engine.add_connection("tx", "aes-128-gcm", dcid, secret=secret)
    rx = engine.add_connection("rx", "aes-128-gcm", dcid, secret=secret)

    header = bytes([0x41]) + dcid + (7).to_bytes(2, "big")  # short header, PN 7 in 2 bytes
    wire = engine.protect(tx, header, b"hello, offload", pn=7)

    (result,) = engine.unprotect(wire)  # one result per coalesced packet
    print(result.status, result.pn, result.payload)  # ok 7 b'hello, offload'
    assert result.status == "ok" and result.connection == rx
    print(engine.stats()["rx_packets"], "packet(s) unprotected")
