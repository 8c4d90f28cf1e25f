#!/usr/bin/env bash
# Formats every tracked C++ source as .clang-format says (clang-format 14, Debian's clang-format
# package, which setup.sh installs: another version lays some lines out differently).
#   bash scripts/format.sh           rewrite the files in place
#   bash scripts/format.sh --check   change nothing; list the files it would change and exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
tool=$(command -v clang-format-14 || true)
if [ -z "$tool" ]; then
  echo "format.sh: clang-format-14 not found (bash scripts/setup.sh installs it)" >&2
  exit 2
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "format.sh: not a git checkout; the files to format are the tracked ones" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.hpp' | grep -v '^tests/data/')
case "${1:-}" in
  "") "$tool" -i "${files[@]}" ;;
  --check)
    changed=()
    for f in "${files[@]}"; do
      "$tool" --dry-run -Werror "$f" >/dev/null 2>&1 || changed+=("$f")
    done
    if [ ${#changed[@]} -gt 0 ]; then
      printf 'format.sh: not as .clang-format lays it out (bash scripts/format.sh rewrites them):\n' >&2
      printf '  %s\n' "${changed[@]}" >&2
      exit 1
    fi
    echo "format.sh: ${#files[@]} files as .clang-format lays them out" ;;
  *) echo "format.sh: unknown option '$1' (--check)" >&2; exit 2 ;;
esac
