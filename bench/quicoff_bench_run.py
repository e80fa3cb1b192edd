# SPDX-License-Identifier: Apache-2.0
"""One quicoff-bench run pinned to a CPU, for the comparison scripts beside
this file (aead_vs_ipsecmb.py, ccm_crossover.py, engine_work.py): each takes
the statistic it compares (median or minimum) from the records."""

import json
import os
import subprocess
import tempfile


def quicoff_records(exe, cpu, args, env=None):
    """The engine's own records (path "quicoff", ok) of `exe args --no-baseline`
    run under taskset on cpu, from its --json output."""
    with tempfile.TemporaryDirectory() as td:
        out = os.path.join(td, "q.json")
        cmd = ["taskset", "-c", str(cpu), exe, *args, "--no-baseline", "--json", out]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        with open(out) as f:
            records = json.load(f)["records"]
    return [r for r in records if r["path"] == "quicoff" and r["ok"]]
