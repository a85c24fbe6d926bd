#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# cmake --install of the build tree into a temporary prefix, then:
#   - each installed program runs from the prefix (--version) with no
#     LD_LIBRARY_PATH, and still does once the prefix is moved elsewhere
#     (its RPATH is relative to the program);
#   - the man pages (when help2man was found), the bash completion (which
#     completes an option of the installed program) and the LICENSE are there;
#   - every installed header compiles on its own against the installed
#     headers alone, and the interface between the library's layers
#     (voxfe/device/) is not installed;
#   - a program outside the tree is built against the installed public API
#     twice, through pkg-config and through find_package(voxfe), and runs.
#   test_install.sh BUILD_DIR SOURCE_DIR [EXTRA_CFLAGS]
# EXTRA_CFLAGS: the sanitizer flags of a sanitizer build, which the consumer
# must share (the ASan runtime has to come first).
set -euo pipefail
build=$1 src=$2 extra=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libvoxfe.so' | head -n 1)")
test -f "$tmp/prefix/include/voxfe/voxfe.h" || fail "no voxfe/voxfe.h"
test -f "$tmp/prefix/include/voxfe/io.h" || fail "no voxfe/io.h"
test ! -e "$tmp/prefix/include/voxfe/device" || fail "voxfe/device/ is installed"

programs="voxfe-voxelize voxfe-optimize voxfe-analyze voxfe-export"
version=$(sed -n 's/^project(voxfe VERSION \([0-9.]*\).*/\1/p' "$src/../../CMakeLists.txt")
run_from() { # the programs of prefix $1, with no library path from the environment
  for p in $programs; do
    out=$(env -u LD_LIBRARY_PATH "$1/bin/$p" --version) || fail "$1/bin/$p --version failed"
    case $out in *"$version"*) ;; *) fail "$p --version says '$out', not $version" ;; esac
  done
}
run_from "$tmp/prefix"
mv "$tmp/prefix" "$tmp/moved"
run_from "$tmp/moved"
mv "$tmp/moved" "$tmp/prefix"
echo "the installed programs run from the prefix, also once it is moved"

if grep -q '^VOXFE_HELP2MAN:FILEPATH=/' "$build/CMakeCache.txt"; then
  for p in $programs; do
    page="$tmp/prefix/share/man/man1/$p.1"
    test -f "$page" || fail "no man page $page"
    grep -q '^\.TH' "$page" || fail "$page is not a man page"
    grep -qF -- '\-\-output' "$page" || fail "$page does not list the options"
  done
  echo "man pages: $(ls "$tmp/prefix/share/man/man1" | tr '\n' ' ')"
fi

completions="$tmp/prefix/share/bash-completion/completions"
for p in $programs; do test -f "$completions/$p" || fail "no bash completion $completions/$p"; done
got=$(bash -c '
  source "$1/voxfe-optimize"
  COMP_WORDS=("$2/bin/voxfe-optimize" --filter-r); COMP_CWORD=1
  _voxfe; printf "%s\n" "${COMPREPLY[@]}"' _ "$completions" "$tmp/prefix")
[ "$got" = "--filter-radius=" ] || fail "bash completion of --filter-r gave '$got'"
echo "bash completion: --filter-r -> $got"

test -f "$tmp/prefix/share/doc/voxfe/LICENSE" || fail "no LICENSE in share/doc/voxfe"

# every public header on its own, with the installed headers alone
# (voxfe/mpi.h, installed by builds with MPI, with MPI's compiler wrapper)
for h in "$tmp"/prefix/include/voxfe/*.h; do
  printf '#include <voxfe/%s>\n' "$(basename "$h")" > "$tmp/one_header.c"
  compiler=cc
  [ "$(basename "$h")" = mpi.h ] && compiler=mpicc
  $compiler -std=c11 -fsyntax-only -Wall -Werror -I"$tmp/prefix/include" "$tmp/one_header.c" ||
    fail "voxfe/$(basename "$h") does not compile on its own against the installed headers"
done

# pkg-config
PKG_CONFIG_PATH="$libdir/pkgconfig" cc -std=c11 $extra -o "$tmp/by-pkg-config" "$src/consumer/consumer.c" \
  $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs voxfe) -lm
LD_LIBRARY_PATH="$libdir" "$tmp/by-pkg-config"

# CMake package
cmake -S "$src/consumer" -B "$tmp/consumer-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_C_FLAGS="$extra" >/dev/null
cmake --build "$tmp/consumer-build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer-build/consumer"
