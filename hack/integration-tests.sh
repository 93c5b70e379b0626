#!/usr/bin/env bash
# Prints the `go test -run` pattern that selects exactly the tests of the given packages'
# files marked `//go:build integration` (envtest, MinIO, etcd: the integration tier). The
# packages' other tests are unit tests: the unit tier runs them without the tag, the
# integration tier builds with the tag and runs only these, so each test runs once.
#   go test -tags integration -run "$(hack/integration-tests.sh ./controllers/...)" ./controllers/...
# Fails when a test of an untagged file shares a name with one of these (it would run in
# both tiers), or when no tagged file is found.
set -euo pipefail
cd "$(dirname "$0")/.."
(($# > 0)) || { echo "usage: $0 PACKAGE-PATTERN..." >&2; exit 2; }

tagged=() untagged=()
# shellcheck disable=SC2068 # the patterns are words
for d in $(go list -f '{{.Dir}}' $@); do
  for f in "$d"/*_test.go; do
    [[ -e $f ]] || continue
    first=$(head -1 "$f")
    if [[ $first == '//go:build integration' ]]; then
      tagged+=("$f")
    elif [[ $first == //go:build* && $first == *integration* ]]; then
      echo "$0: $f: write the constraint exactly as //go:build integration (this script and make test-tiers read it so)" >&2
      exit 1
    else
      untagged+=("$f")
    fi
  done
done
((${#tagged[@]} > 0)) || { echo "$0: no test file marked //go:build integration in $*" >&2; exit 1; }

names() { (($# == 0)) || grep -hoE '^func Test[A-Za-z0-9_]*\(' "$@" | grep -v '^func TestMain(' | sed 's/^func //; s/($//' | sort -u; }
heavy=$(names "${tagged[@]}")
both=$(comm -12 <(echo "$heavy") <(names "${untagged[@]}"))
[[ -z $both ]] || { printf '%s: these names stand in tagged and untagged test files (they would run in both tiers):\n%s\n' "$0" "$both" >&2; exit 1; }
echo "^($(paste -sd'|' <<<"$heavy"))\$"
