#!/usr/bin/env bash
# Suite throughput: wall time of `kc calibrate contracts/classes` and
# `kc grade contracts` over the standard suite with one job and with the
# default (--jobs 0: one and a half jobs per core, rounded up), side by side,
# in one run. Each command runs once per setting;
# the machine's load average is printed before each, since a shared machine
# skews wall time.
#
# usage: bench/suite_throughput.sh [KC_BINARY]   (default build/rel/bin/kc, else build/dev/bin/kc)
set -euo pipefail
cd "$(dirname "$0")/.."
kc="${1:-}"
if [[ -z "$kc" ]]; then
  if [[ -x build/rel/bin/kc ]]; then kc=build/rel/bin/kc; else kc=build/dev/bin/kc; fi
fi
[[ -x "$kc" ]] || { echo "no kc binary at $kc (build it first)" >&2; exit 2; }
cores=$(nproc)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# run LABEL JOBS CMD...: prints seconds of wall time; the exit status of kc is
# kept in $out (a violation exit code is data here, not a failure of the bench).
run() {
  local label=$1 jobs=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  "$kc" "$@" --jobs "$jobs" >"$out/$label.$jobs.txt" 2>&1 && echo 0 >"$out/$label.$jobs.rc" || echo $? >"$out/$label.$jobs.rc"
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}

echo "kc suite throughput: $kc, $cores cores; load average before each run in brackets"
printf '%-34s %14s %14s %9s\n' "command" "1 job (s)" "--jobs 0 (s)" "speed-up"
for what in calibrate grade; do
  if [[ $what == calibrate ]]; then args=(calibrate contracts/classes); label="kc calibrate contracts/classes"
  else args=(grade contracts --out "$out/grade"); label="kc grade contracts"; fi
  l1=$(cut -d' ' -f1 /proc/loadavg); t1=$(run "$what" 1 "${args[@]}")
  ln=$(cut -d' ' -f1 /proc/loadavg); tn=$(run "$what" 0 "${args[@]}")
  printf '%-34s %8.1f [%4s] %8.1f [%4s] %8.2fx\n' "$label" "$t1" "$l1" "$tn" "$ln" "$(echo "$t1 / $tn" | bc -l)"
  # Same verdicts either way (the C-ORD-02 bad impl's mismatch count is random by
  # design; the sample cache's hit counts depend on which cases ran side by side).
  # The trace's last hash differs too: each record holds the case's seconds.
  strip() { sed -E -e 's/\([0-9]+ of [0-9]+\)//g' -e '/^shared across impls:/d' -e '/^kc: progress:/d' -e '/^kc: trace .* last hash /d' "$1"; }
  if ! diff <(strip "$out/$what.1.txt") <(strip "$out/$what.0.txt") >/dev/null; then
    echo "  note: outputs of the two runs differ (see below)"
    diff <(strip "$out/$what.1.txt") <(strip "$out/$what.0.txt") | head -20
  fi
done
