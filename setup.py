# SPDX-License-Identifier: Apache-2.0
# Metadata lives in pyproject.toml; setup.py exists only because cffi's
# setuptools hook (cffi_modules) is a setup() keyword pyproject.toml cannot carry.
from setuptools import setup

setup(cffi_modules=["python/quicoff/_ffi_build.py:ffibuilder"])
