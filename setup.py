"""The one compiled part: tools/cpp/_lexmask.c, optional (without a C compiler and Python's headers
the install still succeeds and tools.cpp.source masks with its regex instead)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tools.cpp._lexmask", ["tools/cpp/_lexmask.c"], optional=True)])
