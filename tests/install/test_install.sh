#!/usr/bin/env bash
# cmake --install of the build tree into a temporary prefix, then a program
# outside the tree built against it twice: through pkg-config and through
# find_package(voxfe). Both must build and run.
#   test_install.sh BUILD_DIR SOURCE_DIR [EXTRA_CFLAGS]
# EXTRA_CFLAGS: the sanitizer flags of a sanitizer build, which the consumer
# must share (the ASan runtime has to come first).
set -euo pipefail
build=$1 src=$2 extra=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libvoxfe.so' | head -n 1)")
test -f "$tmp/prefix/include/voxfe/voxfe.h"
test -f "$tmp/prefix/include/voxfe/io.h"

# pkg-config
PKG_CONFIG_PATH="$libdir/pkgconfig" cc -std=c11 $extra -o "$tmp/by-pkg-config" "$src/consumer/consumer.c" \
  $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs voxfe) -lm
LD_LIBRARY_PATH="$libdir" "$tmp/by-pkg-config"

# CMake package
cmake -S "$src/consumer" -B "$tmp/consumer-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_C_FLAGS="$extra" >/dev/null
cmake --build "$tmp/consumer-build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer-build/consumer"
