#!/usr/bin/env bash
# Checks C and C++ layout against .clang-format (Google style, 120 columns).
#   scripts/check-format.sh            every file in scripts/format-files.txt must be formatted
#   scripts/check-format.sh --changed BASE
#                                      also the lines changed since git revision BASE, in any
#                                      C/C++ file (clang-format-diff): new code is formatted
#                                      even in files that predate the check
#   scripts/check-format.sh FILE...    these files
# Exit 0 when formatted, 1 with clang-format's complaints otherwise, 2 without clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format not found (scripts/install-deps.sh installs it)" >&2; exit 2; }

base=""
files=()
if [ "${1:-}" = "--changed" ]; then
  base=${2:?"--changed needs a git revision"}
  shift 2
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  while IFS= read -r f; do
    case "$f" in ''|'#'*) continue;; esac
    files+=("$f")
  done < scripts/format-files.txt
fi

rc=0
missing=0
present=()
for f in "${files[@]}"; do
  if [ -f "$f" ]; then present+=("$f"); else echo "check-format: $f is listed but missing" >&2; missing=1; fi
done
if [ ${#present[@]} -gt 0 ] && ! clang-format --dry-run --Werror "${present[@]}"; then rc=1; fi
[ $missing -eq 0 ] || rc=1
echo "check-format: ${#present[@]} files $([ $rc -eq 0 ] && echo formatted || echo checked, some not formatted)"

if [ -n "$base" ]; then
  diff_tool=$(command -v clang-format-diff || command -v clang-format-diff-14 || true)
  [ -n "$diff_tool" ] || { echo "check-format: clang-format-diff not found" >&2; exit 2; }
  out=$(git diff -U0 --no-color "$base" -- '*.c' '*.cc' '*.cpp' '*.h' '*.cu' | "$diff_tool" -p1 || true)
  if [ -n "$out" ]; then
    echo "$out"
    echo "check-format: lines changed since $base are not formatted (the diff above makes them so)"
    rc=1
  else
    echo "check-format: lines changed since $base formatted"
  fi
fi
exit $rc
