#!/usr/bin/env bash
# Regenerates tests/golden/expected/ from the current kc after an intended
# change of a report's output; review the diff (git diff tests/golden) before
# committing it. The run, and what is masked, are in tests/golden/golden_test.py.
# Usage: scripts/update-golden.sh [--with-html] [BUILD_DIR]   (default build/ci)
set -euo pipefail
cd "$(dirname "$0")/.."
extra=()
if [ "${1:-}" = "--with-html" ]; then extra=(--with-html); shift; fi
build=${1:-build/ci}
[ -x "$build/bin/kc" ] || { echo "update-golden: no $build/bin/kc (build it: cmake --build --preset ci)" >&2; exit 2; }
plugin=$build/lib/libkc_example_plugin.so
[ -f "$plugin" ] || { echo "update-golden: no $plugin (build the kc_example_plugin target)" >&2; exit 2; }
python3 tests/golden/golden_test.py --kc "$build/bin/kc" --src . --plugin "$plugin" --update "${extra[@]}"
git --no-pager diff --stat -- tests/golden/expected || true
