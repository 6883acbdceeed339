#!/bin/sh
# Regenerates the tables of docs/language.md from the code's tables:
# every block between `<!-- kc list WHAT --format md -->` and `<!-- end -->`
# becomes the output of `kc list WHAT --format md`.
# usage: scripts/update-language-doc.sh [path/to/kc]   (default build/ci/bin/kc)
set -eu
cd "$(dirname "$0")/.."
KC=${1:-build/ci/bin/kc}
DOC=docs/language.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
skip=0
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    "<!-- kc list "*" --format md -->")
      printf '%s\n' "$line" >>"$tmp"
      what=$(printf '%s' "$line" | sed 's/^<!-- kc list \([a-z_]*\) --format md -->$/\1/')
      "$KC" list "$what" --format md >>"$tmp"
      skip=1
      ;;
    "<!-- end -->")
      printf '%s\n' "$line" >>"$tmp"
      skip=0
      ;;
    *)
      [ "$skip" = 1 ] || printf '%s\n' "$line" >>"$tmp"
      ;;
  esac
done <"$DOC"
cp "$tmp" "$DOC"
