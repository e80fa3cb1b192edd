# SPDX-License-Identifier: Apache-2.0
"""Where the quicoff source checkout is, and its meson build.

The tooling runs from a checkout (this file lives in <checkout>/lab/quicoff_lab);
$QUICOFF_SOURCE_DIR names another one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

__all__ = ["repo_root", "build_dir", "is_checkout"]


def is_checkout(path: Path) -> bool:
    """A quicoff source tree: the top meson.build and the library sources."""
    return (
        (path / "meson.build").is_file()
        and (path / "src").is_dir()
        and (path / "include" / "quicoff").is_dir()
    )


def repo_root() -> Path:
    """The checkout: $QUICOFF_SOURCE_DIR when set, else the one this package
    is in. Raises FileNotFoundError when neither is a quicoff source tree."""
    env = os.environ.get("QUICOFF_SOURCE_DIR")
    cand = Path(env) if env else Path(__file__).resolve().parents[2]
    if not is_checkout(cand):
        raise FileNotFoundError(
            "%s is not a quicoff source checkout%s"
            % (cand, " ($QUICOFF_SOURCE_DIR)" if env else "")
        )
    return cand


def build_dir(given: Optional[str] = None) -> Path:
    """The meson build directory: the one given, else <checkout>/build."""
    return Path(given) if given else repo_root() / "build"
