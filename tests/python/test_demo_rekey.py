# SPDX-License-Identifier: Apache-2.0
"""quicoff demo gives a connection new keys before a key reaches half its
RFC 9001 §6.6 confidentiality limit (the offloads would otherwise refuse every
later packet, key_exhausted). Checked on the Demo object alone, without the
testbed: install() is recorded instead of signalled."""

import os

from quicoff_lab import demo as dm
from quicoff_lab import traffic as tr


def make_demo():
    d = object.__new__(dm.Demo)  # no testbed, no build: only the bookkeeping
    d.flows, d.pn_next, d.key_pn0, d.rx_high = [], {}, {}, {}
    d.results = {"verdicts": {}, "rekeys": 0}
    d.installed = []
    d.install = lambda tb, flows: d.installed.append(list(flows))
    return d


def add(d, fid, suite, secret=None, ku=None):
    f = tr.Flow(
        id=fid,
        name="f%d" % fid,
        suite=suite,
        dcid=os.urandom(8),
        secret=secret or os.urandom(32),
        tx_index=1 + fid,
        rx_index=101 + fid,
        key_update_pn=ku,
    )
    d.flows.append(f)
    d.pn_next[fid] = d.key_pn0[fid] = 0
    return f


def test_ccm_rekeyed_before_half_its_limit_paths_together():
    d = make_demo()
    ccm = add(d, 0, "aes-128-ccm", ku=100)
    shared = os.urandom(32)
    p0, p1 = add(d, 1, "aes-128-gcm", shared), add(d, 2, "aes-128-gcm", shared)
    gcm = add(d, 3, "aes-128-gcm")
    limit = dm.Demo.CONFIDENTIALITY_LIMIT

    # far from the limits: nothing happens
    d.rekey_before(None, d.flows, rate=1000, duration=1)
    assert d.installed == [] and d.results["rekeys"] == 0

    # this step could take CCM past half its limit (2.97 M / 2), GCM not
    d.pn_next[0] = limit["aes-128-ccm"] // 2 - 1000
    d.pn_next[1] = d.pn_next[2] = limit["aes-128-gcm"] // 2 - 10**6
    old = ccm.secret
    d.rekey_before(None, [ccm, gcm], rate=0, duration=0.5)  # unpaced: 0.5 M
    assert d.installed == [[ccm]] and ccm.secret != old and len(ccm.secret) == len(old)
    assert ccm.key_update_pn is None and ccm.pn_start == d.pn_next[0] == d.key_pn0[0]
    assert d.results["rekeys"] == 1

    # one path of the multipath connection: both paths get the same new keys
    d.installed.clear()
    d.rekey_before(None, [p0], rate=0, duration=2)
    assert [sorted(f.id for f in g) for g in d.installed] == [[1, 2]]
    assert p0.secret == p1.secret != shared
    assert d.key_pn0[3] == 0 and gcm.secret != shared  # untouched
    # just rekeyed: the next step does not do it again
    d.installed.clear()
    d.rekey_before(None, [ccm, p0, p1], rate=0, duration=0.5)
    assert d.installed == []
