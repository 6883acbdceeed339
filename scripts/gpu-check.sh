#!/usr/bin/env bash
# The checks that need an NVIDIA GPU (CI has none, so its runs skip them):
#   1. `kc backends` must list cuda as available
#   2. kc_cuda_test (the cuda backend against FP64 references)
#   3. the compute-sanitizer tests (CLI and runner), including a planted
#      out-of-bounds write that memcheck must name
#   4. `kc grade` of the cuda backend's impls (and the deliberately mis-declared
#      atomic sum, which C-ORD-02 must catch)
#   5. `kc vet` of a CUDA source file (built with nvcc, run in worker processes)
# Usage: scripts/gpu-check.sh [BUILD_DIR] [OUT_DIR]
#   BUILD_DIR: a kc build with the cuda backend (default build/release)
#   OUT_DIR:   where the grade and vet reports go (default gpu-check)
# Exit status: 0 if every step did what it should, else 1 (each step still runs).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
out=${2:-gpu-check}
kc="$build/bin/kc"
failed=0
step() { printf '\n=== %s ===\n' "$*"; }
fail() { echo "FAILED: $*"; failed=1; }

step "cuda backend"
line=$("$kc" backends 2>&1 | grep '^cuda ')
echo "$line"
case "$line" in *" available "*) ;; *) fail "cuda is not available"; echo "nothing else can run"; exit 1 ;; esac

step "kc_cuda_test"
"$build/tests/unit/cuda/kc_cuda_test" --gtest_brief=1 || fail kc_cuda_test

step "compute-sanitizer tests"
"$build/tests/cli/kc_cli_test" --gtest_brief=1 --gtest_filter='CliSanitizer.*' || fail "CliSanitizer tests"
"$build/tests/kc_isolate_test" --gtest_brief=1 --gtest_filter='SanitizerRun.*:Isolate.ACuda*' ||
  fail "SanitizerRun tests"

step "kc grade of the cuda impls"
mkdir -p "$out"
"$kc" grade contracts --impl 'cublas.*' --impl 'cudnn.*' --impl 'cuda.*' --out "$out/grade" --no-color \
  >"$out/grade.txt" 2>&1
tail -n 20 "$out/grade.txt"
grep -q 'C-ORD-02 × cuda.sum_atomic_claims_bitwise: NONDETERMINISTIC' "$out/grade.txt" ||
  fail "C-ORD-02 did not catch cuda.sum_atomic_claims_bitwise"
grep -Eq ', [1-9][0-9]* error' "$out/grade.txt" && fail "error verdicts in the grade"

step "kc vet of a CUDA file"
"$kc" vet examples/vet/generated_sgemm.cu --out "$out/vet" --no-color >"$out/vet.txt" 2>&1
grep -E '✗|gen\.|conforming,' "$out/vet.txt"
grep -Eq 'gen\.cuda_sgemm_tiled16 +plugin +conforming' "$out/vet.txt" ||
  fail "the bounds-checked CUDA kernel does not conform"
grep -q 'gen\.cuda_sgemm_fast: OUTPUT_NOT_WRITTEN, TILE_REMAINDER' "$out/vet.txt" ||
  fail "the whole-tiles-only CUDA kernel was not caught"

step "result"
if [ "$failed" -eq 0 ]; then echo "all GPU checks passed; reports in $out/"; else echo "some GPU checks failed"; fi
exit "$failed"
