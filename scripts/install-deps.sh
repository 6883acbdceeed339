#!/usr/bin/env bash
# Installs every dependency kc needs, from Debian packages only.
# Idempotent: packages already present are skipped quickly.
set -euo pipefail

packages=(
  build-essential cmake ninja-build clang lld libclang-rt-14-dev
  libgtest-dev googletest
  libyaml-cpp-dev
  libopenblas-dev libblis-dev libblas-dev   # the three BLAS libraries graded side by side
  libeigen3-dev                             # eigen backend (header-only)
  libdnnl-dev                               # onednn backend
  libtorch-dev                              # torch backend (libtorch CPU)
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev clinfo  # opencl backend on PoCL
  libopenmpi-dev openmpi-bin                # mpi backend (collectives with K local ranks)
  librapidcheck-dev                         # property-based checks (verification ladder L3)
  libseccomp-dev                            # the worker's system-call filter (docs/isolation.md)
  libsodium-dev                             # Ed25519 signatures of traces and certificates (docs/scale-out.md)
  libmpfr-dev                               # correctly rounded spec oracles (reference spec IEEE754-2019)
  libsleef-dev                              # sleef backend (vectorized libm, per ISA)
  libhwy-dev                                # hwy backend (Highway contrib/math, per SIMD target)
  valgrind                                  # kc check --isolate valgrind (memcheck during kernel calls)
  chromium                                  # the HTML report's browser test (headless; label `browser`)
  slurmctld slurmd slurm-client munge       # the Slurm test: a one-machine cluster runs kc shards (docs/scale-out.md)
  python3-dev python3-pip python3-venv python3-wheel  # the kc Python package and libkc_python.so (docs/python.md)
  python3-numpy python3-pytest python3-torch  # its tests (~160 MB, ~20 s with libtorch already present)
  python3-jsonschema python3-yaml             # tests/golden: reports, records, traces validated against schemas/
  clang-format                              # scripts/check-format.sh (.clang-format)
  pkg-config                                # the install test reads kc.pc
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
