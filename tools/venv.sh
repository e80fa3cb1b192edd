# SPDX-License-Identifier: Apache-2.0
# Sourced (not run) by tools/*.sh: puts quicoff's virtual environment first on
# PATH, so that `python3`, `pip`, `pytest` and `quicoff` in the calling script,
# and in everything it starts, are the venv's and never the system's.
#
# Why a venv: Debian 12's /usr/bin/python3 is "externally managed" (PEP 668)
# and refuses `pip install`; tools/install_deps.sh creates the venv (default
# .venv in the checkout, or $QUICOFF_VENV) and installs quicoff into it,
# editable, with its test extras.
#
#   . "$here/tools/venv.sh" || exit 1       # then: "$PY" -m pytest, quicoff ...
#
# Sets QUICOFF_VENV, VIRTUAL_ENV, PY (the venv's python) and PATH. Returns 1,
# with a message saying how to get the venv, when there is none.

_qo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICOFF_VENV=${QUICOFF_VENV:-$_qo_root/.venv}
unset _qo_root
if [ ! -x "$QUICOFF_VENV/bin/python" ]; then
    printf 'no quicoff virtual environment at %s: run bash tools/install_deps.sh\n' \
        "$QUICOFF_VENV" >&2
    return 1
fi
# what `. .venv/bin/activate` does, minus the prompt
export QUICOFF_VENV VIRTUAL_ENV=$QUICOFF_VENV
export PATH="$QUICOFF_VENV/bin:$PATH"
unset PYTHONHOME
hash -r
PY=$QUICOFF_VENV/bin/python
