#!/usr/bin/env bash
# No function over 120 lines in app/ and core/, and no source file over 700 lines in app/ and views/: prints each
# offender as "path:line name N lines" and fails. A function's lines run from its name to its closing brace as
# Universal Ctags ends it (`end:`); a lambda counts on its own as ctags reports it (an `__anon...` entry), named
# here "<the function it is in>::<lambda>" because ctags' own name for it changes whenever lambdas are added
# before it. The lines of a lambda also count in the function around it.
#
# scripts/function_size_allowlist.txt: one "path name" a line (# comments), each a function still over the limit
# that someone is shortening. Those are reported as allowed. An entry that is no longer over the limit fails the
# check too, so the list only shrinks: remove the line once the function is short.
#   scripts/check_function_sizes.sh [ALLOWLIST]
set -euo pipefail
cd "$(dirname "$0")/.."
max_function=120 max_file=700
allowlist=${1:-scripts/function_size_allowlist.txt}

# Debian installs Universal Ctags as ctags-universal (ctags is an alternative that Exuberant Ctags, which has no
# end lines, may hold).
ctags=$(command -v ctags-universal || command -v ctags || true)
[ -n "$ctags" ] && "$ctags" --version 2>/dev/null | grep -q "Universal Ctags" ||
  { echo "check_function_sizes: Universal Ctags not found (scripts/setup.sh installs universal-ctags)" >&2; exit 2; }
[ -f "$allowlist" ] || { echo "check_function_sizes: no $allowlist" >&2; exit 2; }

# "path<TAB>line<TAB>name<TAB>lines" for every function or lambda over the limit.
long=$("$ctags" -R --sort=no --languages=C++ --kinds-C++=f --fields=+ne -o - app core | awk -F'\t' -v max="$max_function" '
  {
    ln = 0; en = 0; scope = ""
    for (i = 4; i <= NF; i++) {
      if ($i ~ /^line:/) ln = substr($i, 6)
      else if ($i ~ /^end:/) en = substr($i, 5)
      else if ($i ~ /^function:/) scope = substr($i, 10)
    }
    n = en - ln + 1
    if (en == 0 || n <= max) next
    name = $1
    if (name ~ /^__anon/ && scope != "") { # a lambda: named by the nearest enclosing function that has a name
      k = split(scope, parts, "::")
      while (k > 1 && parts[k] ~ /^__anon/) k--
      name = parts[k] "::<lambda>"
    }
    print $2 "\t" ln "\t" name "\t" n
  }')

declare -A allowed=() seen=()
while read -r path name _; do
  [[ -z "$path" || "$path" == \#* ]] && continue
  allowed["$path $name"]=1
done <"$allowlist"

failed=0 allowed_count=0
while IFS=$'\t' read -r path line name n; do
  [ -n "$path" ] || continue
  if [ -n "${allowed["$path $name"]:-}" ]; then
    seen["$path $name"]=1
    allowed_count=$((allowed_count + 1))
    echo "check_function_sizes: $path:$line $name $n lines (allowed: in $allowlist, being shortened)"
  else
    echo "check_function_sizes: $path:$line $name $n lines (over $max_function)"
    failed=$((failed + 1))
  fi
done <<<"$long"

for entry in "${!allowed[@]}"; do
  if [ -z "${seen[$entry]:-}" ]; then
    echo "check_function_sizes: $entry is in $allowlist but is no longer over $max_function lines (or is gone): remove its line"
    failed=$((failed + 1))
  fi
done

files=0
while IFS= read -r f; do
  files=$((files + 1))
  n=$(wc -l <"$f")
  if [ "$n" -gt "$max_file" ]; then
    echo "check_function_sizes: $f:1 (file) $n lines (over $max_file)"
    failed=$((failed + 1))
  fi
done < <(find app views -type f \( -name '*.cpp' -o -name '*.h' \) | sort)

echo "check_function_sizes: functions over $max_function lines in app/ and core/ and files over $max_file lines in app/ and views/ ($files files): $failed failing, $allowed_count allowed"
[ $failed -eq 0 ]
