"""Shim: ``cffi_modules`` cannot be declared in pyproject.toml."""
from setuptools import setup

setup(cffi_modules=["setup_build.py:ffibuilder"])
