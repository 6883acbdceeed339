"""ctest's entry to the Python tests: skip (77) with a reason, else run pytest."""
import sys

for module, package in (("pytest", "python3-pytest"), ("numpy", "python3-numpy")):
    try:
        __import__(module)
    except ImportError:
        print(f"skipped: {sys.executable} has no {module} (Debian: {package}; scripts/install-deps.sh installs it)")
        sys.exit(77)

import os
import pytest

here = os.path.dirname(os.path.abspath(__file__))
sys.exit(pytest.main([here, "-q", "-p", "no:cacheprovider", "-rs", *sys.argv[1:]]))
