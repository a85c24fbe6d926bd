# SPDX-License-Identifier: BSD-3-Clause
# The layout of every program's --help and --usage, which help2man and the
# bash completion read: option lines at columns 2 and 6, their text at column
# 29 (or three columns past a longer head), continuation lines at column 29,
# no line past column 79 but the synopsis and the examples' command lines (as
# help2man reads them), no text cut short,
# every option of --usage described in --help and the other way round, and
# a failed write to stdout a failure.
# Usage: bash help_layout.sh VOXELIZE OPTIMIZE EXPORT SOURCE_DIR ANALYZE
. "$(dirname "$0")/lib.sh"

ANALYZE=$(realpath "$1")

for program in "$VOXELIZE" "$OPTIMIZE" "$ANALYZE" "$EXPORT"; do
  name=$(basename "$program")
  "$program" --help >"$LOG/help" 2>"$LOG/err" || fail "$name --help: exit status $?"
  [ -s "$LOG/err" ] && fail "$name --help: printed on stderr"
  "$program" --usage >"$LOG/usage" 2>"$LOG/err" || fail "$name --usage: exit status $?"
  grep -q "^Usage: $name \[" "$LOG/usage" || fail "$name --usage: no usage line"

  # Section by section: the program's text up to the first option line, the
  # options up to --version (the last), the text after it.
  awk -v name="$name" '
    function bad(why) { print name " --help, line " NR ": " why ": [" $0 "]"; failed = 1 }
    done { after = 1 }  # past the help options: the text after them
    /^  -V, --version / { done = 1 }
    !after && /^  (-[^ ], |    )--[a-z]/ { options = 1 }
    length($0) > 79 && !/^  [a-z]/ && !/^Usage: / { bad("longer than 79 columns") }
    / $/ { bad("trailing blank") }
    options && !after && NF > 0 {
      if (/^  (-[^ ], |    )--[a-z]/) {
        head = $0; sub(/^  (-[^ ], |    )--[^ ]+/, "", head)
        start = length($0) - length(head)
        text = head; sub(/^ +/, "", text)
        gap = length(head) - length(text)
        if (text == "") bad("an option without its text")
        else if (start < 29 && start + gap != 29) bad("text not at column 29")
        else if (start >= 29 && gap != 3) bad("text not three columns past a long head")
      } else if (/^ [^ ]/) {             # a heading
      } else if (substr($0, 1, 29) ~ /^ *$/ && substr($0, 30, 1) != " ") { # continued
      } else {
        bad("neither an option, a heading nor a continuation at column 29")
      }
    }
    END { if (!options) { print name " --help: no option lines"; failed = 1 } exit failed }
  ' "$LOG/help" >"$LOG/layout" || fail "$(head -n 3 "$LOG/layout")"

  # The same options in both texts.
  sed -n 's/^  \(-[^ ], \|    \)--\([a-z0-9-]*\).*/\2/p' "$LOG/help" | sort >"$LOG/help_names"
  tr ' ' '\n' <"$LOG/usage" | sed -n 's/^\[--\([a-z0-9-]*\).*/\1/p' | sort >"$LOG/usage_names"
  [ -s "$LOG/help_names" ] || fail "$name: no option names read from --help"
  cmp -s "$LOG/help_names" "$LOG/usage_names" ||
    fail "$name: --help and --usage list other options: $(diff "$LOG/help_names" "$LOG/usage_names" | head -n 4 | tr '\n' ' ')"
  for option in help usage version output; do
    grep -qx "$option" "$LOG/help_names" || fail "$name --help: --$option not listed"
  done

  # -? is --help; -V is --version.
  "$program" -? >"$LOG/short" && cmp -s "$LOG/short" "$LOG/help" || fail "$name -?: not --help's text"
  "$program" -V | grep -qE "^$name [0-9]" || fail "$name -V: not the version"

  # A help that could not be written is a failure, said on stderr.
  if [ -w /dev/full ]; then
    "$program" --help >/dev/full 2>"$LOG/err"
    status=$?
    [ "$status" -eq 1 ] || fail "$name --help >/dev/full: exit status $status, expected 1"
    grep -q "^$name: " "$LOG/err" || fail "$name --help >/dev/full: no message"
  fi
  echo "ok: $name: $(wc -l <"$LOG/help") lines of --help"
done

# The texts of options that are longer than any fixed buffer, whole: the
# export's --output lists every format, the last one csv.
"$EXPORT" --help | grep -q "(required)" || fail "voxfe-export --help: --output's text cut short"
# The examples' command lines are not broken where users copy them.
"$VOXELIZE" --help | grep -q "^  voxfe-voxelize --image scan/ .*-o model.nc$" ||
  fail "voxfe-voxelize --help: an example's command line broken"
finish
