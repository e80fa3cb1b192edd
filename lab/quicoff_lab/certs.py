# SPDX-License-Identifier: Apache-2.0
"""A throwaway TLS key and certificate for the HTTP/3 servers of the tests,
the demo and the benchmarks (P-256, CN=localhost, two days), made by the
openssl command line so that no test depends on a Python TLS library."""

import os
import shutil
import subprocess
from typing import Tuple


def self_signed(directory: str) -> Tuple[str, str]:
    """Writes key.pem and cert.pem into ``directory``; returns their paths."""
    openssl = shutil.which("openssl")
    if not openssl:
        raise RuntimeError("openssl not found (apt-get install openssl)")
    key = os.path.join(str(directory), "key.pem")
    cert = os.path.join(str(directory), "cert.pem")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        + ["-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return key, cert
