# SPDX-License-Identifier: Apache-2.0
"""``python -m quicoff ...``: the command-line tool (see quicoff.cli)."""

from .cli import main

raise SystemExit(main())
