#!/usr/bin/env bash
# One command from a fresh clone to `import kc` (docs/python.md):
#   1. Debian packages (scripts/install-deps.sh: python3-venv, numpy, torch, ...)
#   2. the kc program and libkc_python.so (the `ci` preset's build, shared with scripts/test.sh)
#   3. a virtual environment .venv that sees Debian's numpy and torch, with the kc package in it
# Then: .venv/bin/python -c "import kc; print(kc.find_kc())"
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$(nproc 2>/dev/null || echo 2)" --target kc_cli kc_python
# Debian's interpreter (its numpy, torch and pip), not another python3 earlier on PATH.
py=/usr/bin/python3; [ -x "$py" ] || py=python3
[ -x .venv/bin/python ] || "$py" -m venv --system-site-packages .venv
.venv/bin/pip install --quiet --no-build-isolation --no-index ./python
.venv/bin/python -c "import kc; print('import kc: ok; kc program', kc.find_kc())"
echo "use it: .venv/bin/python (or: source .venv/bin/activate)"
