#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# No environment variable steers the library or the programs: every choice
# that changes results, memory or speed is an option (an options struct's
# field, an argp option in --help, and the history line). This fails on any
# getenv (secure_getenv too) in the sources of engine/, cuda/ and cli/;
# tests and benchmarks are not looked at.
#
# usage: no_getenv.sh SOURCE_DIR
cd "$1" || exit 2
hits=$(find engine cuda cli -type f \
         \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \
            -o -name '*.hpp' \) -print | sort | xargs grep -n 'getenv' /dev/null)
if [ -n "$hits" ]; then
  echo "getenv in the library or the programs (make it an option):"
  echo "$hits"
  exit 1
fi
echo "no getenv in engine/, cuda/, cli/"
