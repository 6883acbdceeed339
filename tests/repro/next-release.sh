#!/usr/bin/env bash
# Re-runs the reproductions of docs/findings.md (and the audit's library
# facts) against the next Debian release's builds of the libraries, on this
# machine, without installing anything: the packages are fetched with a
# private apt configuration and unpacked with `dpkg -x` into a work folder.
#
# For each library it first says whether the next release's build loads with
# this machine's own C runtime (a library built against a newer glibc or
# libstdc++ does not: the dynamic loader names the missing symbol version).
# Where it does not, the program is run once more through the next release's
# own dynamic loader (ld-linux from its libc6, with its libgcc-s1, libstdc++6,
# libgomp1, libgfortran5, libquadmath0, also unpacked), so the library's
# behaviour is still measured; the line says which runtime ran it.
#
# Usage: tests/repro/next-release.sh [WORKDIR]   (default ${TMPDIR:-/tmp}/kc-next-release)
# Environment: KC_NEXT_SUITE (default trixie), KC_NEXT_MIRROR (default the
# Debian archive). Needs the network (apt), cc, c++ and libmpfr-dev; it is not
# part of CTest. Prints one line per finding and code path:
#   finding | package version | loads here | runtime | still present | what the program printed
# and keeps each program's full output under WORKDIR/logs/. Exit 0 once every
# case has run (whatever it found), non-zero when the setup fails.
set -euo pipefail

suite=${KC_NEXT_SUITE:-trixie}
mirror=${KC_NEXT_MIRROR:-http://deb.debian.org/debian}
work=${1:-${TMPDIR:-/tmp}/kc-next-release}
here=$(cd "$(dirname "$0")" && pwd)
arch=$(dpkg --print-architecture)
triplet=$(gcc -dumpmachine)

# The libraries and their trixie package names (libdnnl's carries its soname).
lib_pkgs=(libopenblas0-pthread libblis4-openmp libblas3 libsleef3 libsleef-dev libdnnl3.6 libdnnl-dev libeigen3-dev)
rt_pkgs=(libc6 libgcc-s1 libstdc++6 libgomp1 libgfortran5 libquadmath0)

mkdir -p "$work"/{apt/lists/partial,apt/cache/archives/partial,debs,rt-debs,bin,logs}
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$work/apt/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$work/apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent
  -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache" -o Dir::State::status=/dev/null
  -o "APT::Architecture=$arch" -o APT::Get::List-Cleanup=0)
apt-get -qq "${apt_opts[@]}" update
(cd "$work/debs" && rm -f ./*.deb && apt-get -qq "${apt_opts[@]}" download "${lib_pkgs[@]}" 2>/dev/null)
(cd "$work/rt-debs" && rm -f ./*.deb && apt-get -qq "${apt_opts[@]}" download "${rt_pkgs[@]}" 2>/dev/null)
rm -rf "$work/root" "$work/rt"
for d in "$work"/debs/*.deb; do dpkg -x "$d" "$work/root"; done
for d in "$work"/rt-debs/*.deb; do dpkg -x "$d" "$work/rt"; done

version() { dpkg-deb -f "$work"/debs/"$1"_*.deb Version; }
lib=$work/root/usr/lib/$triplet
inc=$work/root/usr/include
rtlib=$work/rt/usr/lib/$triplet
rt_ld=$rtlib/ld-linux-x86-64.so.2
host_glibc=$(ldd --version | sed -n '1s/.* //p')
rt_glibc=$(dpkg-deb -f "$work"/rt-debs/libc6_*.deb Version | sed 's/-.*//')

openblas=$lib/openblas-pthread/libopenblas.so.0
blis=$lib/blis-openmp/libblis.so.4
refblas=$lib/blas/libblas.so.3
sleef=$lib/libsleef.so.3
dnnl_sos=("$lib"/libdnnl.so.[0-9]*.*)
dnnl=${dnnl_sos[0]}

# Whether a library loads with this machine's runtime: "yes", or "no: needs X, Y".
cat >"$work/loadcheck.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char** argv) {
  if (argc != 2 || !dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) {
    printf("%s\n", argc == 2 ? dlerror() : "usage: loadcheck LIB");
    return 1;
  }
  return 0;
}
EOF
cc -O2 -o "$work/bin/loadcheck" "$work/loadcheck.c" -ldl
# dlerror names only the first missing version; the loader's listing names all.
host_ld=$(readelf -l /bin/sh | sed -n 's/.*interpreter: \(.*\)]/\1/p')
loads() {
  local out
  if out=$(LD_LIBRARY_PATH="$(dirname "$1")" "$work/bin/loadcheck" "$1" 2>&1); then
    echo yes
  else
    local need
    need=$(LD_LIBRARY_PATH="$(dirname "$1")" "$host_ld" --list "$1" 2>&1 | grep -o "version \`[A-Z_]*[0-9.]*' not found" |
      sed "s/version \`//; s/' not found//" | sort -uV | paste -sd, - | sed 's/,/, /g')
    echo "no: needs ${need:-$out}"
  fi
}

# Builds link against the unpacked libraries; a library built for a newer
# runtime has undefined references to it, which only its loader resolves.
cflags=(-O2 -g -w)
link_lax=("-Wl,--allow-shlib-undefined")
cc "${cflags[@]}" "${link_lax[@]}" -o "$work/bin/openblas_sscal_nan_alpha" "$here/openblas_sscal_nan_alpha.c" "$openblas" -lm
cc "${cflags[@]}" "${link_lax[@]}" -o "$work/bin/openblas_nrm2_nonpositive_inc" "$here/openblas_nrm2_nonpositive_inc.c" "$openblas" -lm
cc "${cflags[@]}" "${link_lax[@]}" -o "$work/bin/openblas_scal_alpha_zero" "$here/openblas_scal_alpha_zero.c" "$openblas" -lm
cc "${cflags[@]}" "${link_lax[@]}" -o "$work/bin/openblas_sgemm_alpha_zero" "$here/openblas_sgemm_alpha_zero.c" "$openblas" -lm
cc "${cflags[@]}" "${link_lax[@]}" -o "$work/bin/blis_nrm2_infinities" "$here/blis_nrm2_infinities.c" "$blis" -lm
cc "${cflags[@]}" "${link_lax[@]}" -o "$work/bin/blis_sgemm_sup_overread" "$here/blis_sgemm_sup_overread.c" "$blis"
cat >"$work/blis_arch.c" <<'END_OF_ARCH'
#include <stdio.h>
void bli_init(void);
int bli_arch_query_id(void);
const char* bli_arch_string(int id);
int main(void) {
  bli_init();
  printf("BLIS picks sub-configuration %s on this CPU\n", bli_arch_string(bli_arch_query_id()));
  return 0;
}
END_OF_ARCH
cc "${cflags[@]}" "${link_lax[@]}" -o "$work/bin/blis_arch" "$work/blis_arch.c" "$blis"
cc "${cflags[@]}" -o "$work/bin/blas_small_gemm_sweep" "$here/blas_small_gemm_sweep.c" -ldl -lm
cc "${cflags[@]}" -o "$work/bin/blas_level1_rules" "$here/blas_level1_rules.c" -ldl -lm
cc "${cflags[@]}" -I"$inc/$triplet" -I"$inc" -o "$work/bin/sleef_erff_tiny" "$here/sleef_erff_tiny.c" "$sleef" -lmpfr -lgmp -lm
c++ -std=c++20 "${cflags[@]}" -I"$inc/eigen3" -msse2 -o "$work/bin/eigen_exp_neg_inf_sse2" "$here/eigen_exp_neg_inf.cpp"
c++ -std=c++20 "${cflags[@]}" -I"$inc/eigen3" -mavx2 -mfma -o "$work/bin/eigen_exp_neg_inf_avx2" "$here/eigen_exp_neg_inf.cpp"
c++ -std=c++20 "${cflags[@]}" -I"$inc" "${link_lax[@]}" -o "$work/bin/onednn_matmul_alpha_zero" \
  "$here/onednn_matmul_alpha_zero.cpp" "$dnnl"

# The reproduction programs test fixed inputs; the SLEEF finding is a region
# of arguments, whose fixed inputs can move between releases. This scan
# counts the arguments in [2^-140, 2^-120) (every 97th float, the region where
# SLEEF 3.5.1's non-FMA erff_u10 results cross FLT_MIN two representable steps
# from the correctly rounded value) at which each entry point is two or more
# steps off, as kc's KC-ELEM-EDGE contracts count. Exit 0 when a non-FMA entry
# point is (the finding reproduces), 1 when none is.
cat >"$work/sleef_erff_scan.c" <<'END_OF_SCAN'
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <mpfr.h>
#include <sleef.h>
float Sleef_erff1_u10purecfma(float);
__m256 Sleef_erff8_u10avx(__m256);
__m512 Sleef_erff16_u10avx512fnofma(__m512);
static float purec(float x) { return Sleef_erff1_u10purec(x); }
static float purecfma(float x) { return Sleef_erff1_u10purecfma(x); }
static float sse2(float x) { float o[4]; _mm_storeu_ps(o, Sleef_erff4_u10sse2(_mm_set1_ps(x))); return o[0]; }
static float sse4(float x) { float o[4]; _mm_storeu_ps(o, Sleef_erff4_u10sse4(_mm_set1_ps(x))); return o[0]; }
__attribute__((target("avx"))) static float avx(float x) {
  float o[8]; _mm256_storeu_ps(o, Sleef_erff8_u10avx(_mm256_set1_ps(x))); return o[0];
}
__attribute__((target("avx512f"))) static float avx512fnofma(float x) {
  float o[16]; _mm512_storeu_ps(o, Sleef_erff16_u10avx512fnofma(_mm512_set1_ps(x))); return o[0];
}
static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
int main(void) {
  struct { const char* name; float (*f)(float); int runs, fma; long off2; double worst; float at; } p[] = {
    {"purec", purec, 1, 0}, {"sse2", sse2, 1, 0}, {"sse4", sse4, __builtin_cpu_supports("sse4.1"), 0},
    {"avx", avx, __builtin_cpu_supports("avx"), 0}, {"avx512fnofma", avx512fnofma, __builtin_cpu_supports("avx512f"), 0},
    {"purecfma", purecfma, __builtin_cpu_supports("fma"), 1}};
  const int np = sizeof p / sizeof p[0];
  mpfr_t f, d;
  mpfr_init2(f, 200);
  mpfr_init2(d, 200);
  long n = 0, off2_nofma = 0;
  for (uint32_t b = 0x200; b < 0x03800000u; b += 97, ++n) {
    float x;
    memcpy(&x, &b, 4);
    mpfr_set_flt(f, x, MPFR_RNDN);
    mpfr_erf(f, f, MPFR_RNDN);
    const float cr = mpfr_get_flt(f, MPFR_RNDN);
    long e = 0;
    (void)mpfr_get_d_2exp(&e, f, MPFR_RNDN);
    const double u = fmax(ldexp(1.0, (int)e - 24), ldexp(1.0, -149)); /* SLEEF's tester's ULP */
    for (int i = 0; i < np; ++i) {
      if (!p[i].runs) continue;
      const float y = p[i].f(x);
      const uint32_t steps = bits(y) > bits(cr) ? bits(y) - bits(cr) : bits(cr) - bits(y);
      mpfr_set_flt(d, y, MPFR_RNDN);
      mpfr_sub(d, d, f, MPFR_RNDN);
      const double err = fabs(mpfr_get_d(d, MPFR_RNDN)) / u;
      p[i].off2 += steps >= 2;
      if (!p[i].fma) off2_nofma += steps >= 2;
      if (err > p[i].worst) p[i].worst = err, p[i].at = x;
    }
  }
  printf("SLEEF %d.%d.%d erff_u10 scan, %ld inputs in [2^-140, 2^-120) (every 97th float), two or more steps off:",
         SLEEF_VERSION_MAJOR, SLEEF_VERSION_MINOR, SLEEF_VERSION_PATCHLEVEL, n);
  for (int i = 0; i < np; ++i)
    if (p[i].runs) printf(" %s %ld (worst %.2f ULP at %a)%s", p[i].name, p[i].off2, p[i].worst, p[i].at, i + 1 < np ? ";" : "");
  printf("\n");
  return off2_nofma > 0 ? 0 : 1;
}
END_OF_SCAN
cc "${cflags[@]}" -I"$inc/$triplet" -I"$inc" -o "$work/bin/sleef_erff_scan" "$work/sleef_erff_scan.c" "$sleef" -lmpfr -lgmp -lm

# run_case FINDING PACKAGE LIBRARY|- KEY-PATTERN [@clean|@rule|@hook=FUNCTION] [VAR=VALUE...] -- PROGRAM [ARGS...]
# The reproductions exit 0 when the behaviour reproduces, 1 when it does not,
# 2 when they cannot run here. @clean: the program checks that nothing is
# wrong (0: clean); @rule: that the declared rules still match (0: they do);
# @hook=F: F LOG RC prints the verdict instead.
run_case() {
  local finding=$1 pkg=$2 library=$3 key=$4
  shift 4
  local envs=() kind=finding hook=""
  while [ "$1" != -- ]; do
    case $1 in
      @clean | @rule) kind=${1#@} ;;
      @hook=*) hook=${1#@hook=} ;;
      *) envs+=("$1") ;;
    esac
    shift
  done
  shift
  local load=header-only runtime="host glibc $host_glibc" libdirs=""
  if [ "$library" != - ]; then
    load=$(loads "$library")
    libdirs=$(dirname "$library")
  fi
  local log=$work/logs/${finding//[^A-Za-z0-9_.-]/_}.log rc=0
  if [ "${load%%:*}" = no ]; then
    runtime="$suite glibc $rt_glibc (its own ld.so)"
    env "${envs[@]}" "$rt_ld" --library-path "$rtlib:$libdirs" "$@" >"$log" 2>&1 || rc=$?
  else
    env "${envs[@]}" LD_LIBRARY_PATH="$libdirs" "$@" >"$log" 2>&1 || rc=$?
  fi
  local present
  case $kind:$rc in
    finding:0) present="still present: yes" ;;
    finding:1) present="still present: no" ;;
    clean:0) present="clean: yes" ;;
    clean:1) present="clean: NO" ;;
    rule:0) present="declarations match: yes" ;;
    rule:1) present="declarations match: NO" ;;
    *:2) present="cannot run here" ;;
    *) present="program failed (exit $rc)" ;;
  esac
  if [ -n "$hook" ] && [ "$rc" -le 1 ]; then present=$("$hook" "$log" "$rc"); fi
  local seen
  seen=$(grep -E "$key" "$log" | paste -sd'|' - | sed 's/|/ | /g; s/  */ /g')
  printf '%s | %s %s | loads: %s | run with %s | %s | %s\n' "$finding" "$pkg" "$(version "$pkg")" \
    "$load" "$runtime" "$present" "${seen:-see $log}"
}

# The nrm2 program asserts both increments at once; say which still returns 0.
nrm2_split() {
  local neg zero
  neg=$(grep -c 'INCX = -1: snrm2 0, dnrm2 0 ' "$1" || true)
  zero=$(grep -c 'INCX = 0: snrm2 0, dnrm2 0 ' "$1" || true)
  echo "still present: INCX < 0 $([ "$neg" = 1 ] && echo yes || echo no), INCX = 0 $([ "$zero" = 1 ] && echo yes || echo no)"
}

b=$work/bin
echo "# next Debian release ($suite) against the kc reproductions; host glibc $host_glibc; $(date -u +%F)"
run_case "KC-SCAL-02 openblas.sscal NaN alpha (default core)" libopenblas0-pthread "$openblas" '^(OpenBLAS|n = 1000)' \
  -- "$b/openblas_sscal_nan_alpha"
for core in PRESCOTT SANDYBRIDGE HASWELL ZEN SKYLAKEX; do
  run_case "KC-SCAL-02 openblas.sscal_core_${core,,} NaN alpha" libopenblas0-pthread "$openblas" '^n = 1000' \
    OPENBLAS_CORETYPE=$core -- "$b/openblas_sscal_nan_alpha"
done
run_case "KC-NRM2-03 blis.snrm2/dnrm2 two infinities" libblis4-openmp "$blis" '^(BLIS|x = \{1, inf)' \
  -- "$b/blis_nrm2_infinities"
run_case "KC-SCAL-02 openblas.sscal/dscal alpha = 0 over NaN/Inf (default core)" libopenblas0-pthread "$openblas" '^alpha = 0' \
  -- "$b/openblas_scal_alpha_zero"
run_case "KC-INC-01 openblas nrm2 INCX <= 0 returns 0" libopenblas0-pthread "$openblas" '^x = ' \
  @hook=nrm2_split -- "$b/openblas_nrm2_nonpositive_inc"
run_case "KC-GEMM-04 blis sgemm sup over-read of C (haswell)" libblis4-openmp "$blis" '^(BLIS arch|m=19|reproduced|not reproduced)' \
  -- "$b/blis_sgemm_sup_overread"
run_case "KC-GEMM-04/06 blis small-gemm sweep, haswell (C and B over-reads)" libblis4-openmp "$blis" '^[0-9]+ calls' \
  KC_BLIS_ARCH=haswell -- "$b/blas_small_gemm_sweep" "$blis" blis09_sup
echo "info: $(LD_LIBRARY_PATH=$(dirname "$blis") "$b/blis_arch") (BLIS $(version libblis4-openmp))"
run_case "KC-GEMM-04/06 blis small-gemm sweep, default arch" libblis4-openmp "$blis" '^[0-9]+ calls' \
  @clean -- "$b/blas_small_gemm_sweep" "$blis" clean
run_case "KC-GEMM-04/05/06 small-gemm sweep, openblas default core" libopenblas0-pthread "$openblas" '^[0-9]+ calls' \
  @clean -- "$b/blas_small_gemm_sweep" "$openblas" clean
run_case "KC-GEMM-04/05/06 small-gemm sweep, netlib" libblas3 "$refblas" '^[0-9]+ calls' \
  @clean -- "$b/blas_small_gemm_sweep" "$refblas" clean
run_case "KC-ELEM-EDGE-1 sleef erff_u10 non-FMA near FLT_MIN" libsleef3 "$sleef" '^(SLEEF|worst)' \
  -- "$b/sleef_erff_tiny"
run_case "KC-ELEM-EDGE-1 sleef erff_u10 non-FMA near FLT_MIN, scan" libsleef3 "$sleef" '^SLEEF' -- "$b/sleef_erff_scan"
run_case "audit KC-GEMM-03 openblas.sgemm_core_skylakex alpha = 0" libopenblas0-pthread "$openblas" '^core' \
  OPENBLAS_CORETYPE=SKYLAKEX -- "$b/openblas_sgemm_alpha_zero"
run_case "audit KC-SOFTMAX-MASKED eigen.sse2 exp(-inf)" libeigen3-dev - '^Eigen' -- "$b/eigen_exp_neg_inf_sse2"
run_case "audit KC-SOFTMAX-MASKED eigen.avx2 exp(-inf)" libeigen3-dev - '^Eigen' -- "$b/eigen_exp_neg_inf_avx2"
run_case "audit fact: onednn matmul alpha = 0, avx2 vs avx512_core" libdnnl3.6 "$dnnl" 'kernel' \
  -- "$b/onednn_matmul_alpha_zero"
# The declared level-1 rules (not findings): a "no" here means a declaration
# no longer matches the next release's build.
run_case "declared rules: scal alpha = 0, i?amax with NaN" libopenblas0-pthread "$openblas" '^(netlib|openblas|blis) ' \
  @rule -- "$b/blas_level1_rules" "$refblas" "$openblas" "$blis"

# Control: this machine's own OpenBLAS build, run through the next release's
# runtime as above, must still show its known behaviour; a change seen above
# is then the library's, not the runtime's.
host_openblas=/usr/lib/$triplet/openblas-pthread/libopenblas.so.0
if [ -e "$host_openblas" ]; then
  cc "${cflags[@]}" -o "$b/control_sscal" "$here/openblas_sscal_nan_alpha.c" "$host_openblas" -lm
  cc "${cflags[@]}" -o "$b/control_nrm2" "$here/openblas_nrm2_nonpositive_inc.c" "$host_openblas" -lm
  for prog in control_sscal control_nrm2; do
    rc=0
    out=$("$rt_ld" --library-path "$rtlib:$(dirname "$host_openblas")" "$b/$prog" 2>&1) || rc=$?
    echo "control: installed OpenBLAS, $prog, run with $suite glibc $rt_glibc | reproduces: $([ $rc = 0 ] && echo yes || echo "NO (exit $rc)") | $(tail -1 <<<"$out")"
  done
fi
