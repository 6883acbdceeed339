#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, then use it the way another project
# would: find_package(kc) builds a plugin (tests/install/consumer), the
# installed kc grades it against a shipped contract, pkg-config gives the same
# include directory, and the installed kc finds its backends' libraries and its
# suite under the prefix, not in the build tree; kc vet builds against the
# prefix's header.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$(cd "$2" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kc-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Installed to one prefix, then moved: the installed files must not depend on
# the prefix they were installed to.
cmake --install "$build" --prefix "$tmp/staged" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
mv "$tmp/staged" "$tmp/prefix"
prefix=$tmp/prefix
for f in bin/kc include/kc/kc_plugin.h lib/cmake/kc/kcConfig.cmake lib/cmake/kc/kcConfigVersion.cmake \
         lib/cmake/kc/kcTargets.cmake lib/pkgconfig/kc.pc share/kc/schemas/report.schema.json \
         share/kc/contracts/blas/KC-RED-01.kc; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
echo "installed: $(find "$prefix" -type f | wc -l) files"

# The consumer project: find_package(kc) with the prefix on CMAKE_PREFIX_PATH.
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "find_package(kc) in the consumer project"; }
cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "building the consumer plugin"; }
cat "$tmp/consumer/kc_paths.txt"
grep -qx "KC_EXECUTABLE=$prefix/bin/kc" "$tmp/consumer/kc_paths.txt" || fail "KC_EXECUTABLE is not the prefix's kc"
grep -qx "KC_PLUGIN_ABI_VERSION=2" "$tmp/consumer/kc_paths.txt" || fail "KC_PLUGIN_ABI_VERSION"
plugin=$tmp/consumer/libconsumer_plugin.so
[ -f "$plugin" ] || fail "no $plugin"

# The installed kc grades it: conforming on the shipped dot contract.
out=$("$prefix/bin/kc" check "$prefix/share/kc/contracts/blas/KC-RED-01.kc" --plugin "$plugin" \
      --impl 'consumer.*' --seed 1 2>&1) || { echo "$out"; fail "installed kc check exited $?"; }
echo "$out"
grep -Eq '^KC-RED-01 +consumer\.dot_fp32 +conforming' <<<"$out" || fail "consumer.dot_fp32 not conforming on KC-RED-01"

# kc vet builds a kernel file against the prefix's kc_plugin.h.
out=$(cd "$tmp" && env -u KC_INCLUDE_DIR "$prefix/bin/kc" vet "$src/tests/install/consumer/consumer_plugin.c" \
      "$prefix/share/kc/contracts/blas/KC-RED-01.kc" --out "$tmp/vet" 2>&1) || { echo "$out"; fail "installed kc vet"; }
grep -q "^built: .*-I'$prefix/include'" <<<"$out" || { echo "$out"; fail "kc vet did not build against $prefix/include"; }
grep -Eq '^ *KC-RED-01 +✓' <<<"$out" || { echo "$out"; fail "kc vet: consumer.dot_fp32 not conforming"; }
echo "kc vet: built against the prefix's header, conforming"

# Its default paths are the prefix's suite.
out=$("$prefix/bin/kc" list contracts 2>&1) || { echo "$out"; fail "installed kc list contracts"; }
grep -q "KC-RED-01" <<<"$out" || fail "the installed kc's default suite lacks KC-RED-01"

# The backends' private libraries come from the prefix, not the build tree.
out=$("$prefix/bin/kc" backends 2>&1 || true)
for b in eigen hwy compilers torch; do
  line=$(grep -E "^$b " <<<"$out" || true)
  case "$line" in
    *"built without"* | "") echo "($b: not built here)";;
    *"loaded from $prefix/lib/kc"*) echo "$b: from the prefix";;
    *) echo "$line"; fail "the installed kc's $b backend does not load from $prefix/lib/kc";;
  esac
done
line=$(grep -E "^mpi " <<<"$out" || true)
case "$line" in
  *kc-mpi-worker*) grep -q "$prefix/bin/kc-mpi-worker" <<<"$line" || { echo "$line"; fail "mpi worker not the prefix's"; }
                  echo "mpi: worker from the prefix";;
esac

# pkg-config: the same header, from the moved prefix.
if command -v pkg-config >/dev/null; then
  cflags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags kc) || fail "pkg-config --cflags kc"
  echo "pkg-config --cflags kc: $cflags"
  # shellcheck disable=SC2086
  cc -std=c11 -fPIC -shared $cflags "$src/tests/install/consumer/consumer_plugin.c" -o "$tmp/libpc.so" \
    || fail "building the plugin with pkg-config's flags"
  out=$("$prefix/bin/kc" list impls --plugin "$tmp/libpc.so" 2>&1) || { echo "$out"; fail "kc list impls"; }
  grep -q "consumer.dot_fp32" <<<"$out" || fail "the pkg-config-built plugin's impl is not listed"
else
  echo "(pkg-config not installed: kc.pc not checked)"
fi
echo "install test: ok"
