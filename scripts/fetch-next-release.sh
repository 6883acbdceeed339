#!/bin/bash
# Fetches packages of the next Debian release into a private prefix, without
# touching the system's apt sources, lists or installed packages: a private
# sources list and state directory (apt-get -o ...), `apt-get download`, and
# `dpkg -x` into DEST/root. Prints DEST/root on success.
# usage: scripts/fetch-next-release.sh DEST PACKAGE...
# Environment: KC_NEXT_SUITE (default trixie), KC_NEXT_MIRROR (default
# http://deb.debian.org/debian).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DEST PACKAGE..." >&2; exit 2; }
dest=$(realpath -m "$1")
shift
suite=${KC_NEXT_SUITE:-trixie}
mirror=${KC_NEXT_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$dest/apt/lists/partial" "$dest/apt/cache/archives/partial" "$dest/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$dest/apt/sources.list"
opts=(-o "Dir::Etc::sourcelist=$dest/apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent
  -o "Dir::State::Lists=$dest/apt/lists" -o "Dir::Cache=$dest/apt/cache" -o Dir::State::status=/dev/null
  -o "APT::Architecture=$(dpkg --print-architecture)" -o APT::Get::List-Cleanup=0
  -o APT::Sandbox::User=root)
apt-get -qq "${opts[@]}" update >&2
(cd "$dest/debs" && apt-get -qq "${opts[@]}" download "$@" >&2)
for d in "$dest"/debs/*.deb; do dpkg -x "$d" "$dest/root"; done
echo "$dest/root"
