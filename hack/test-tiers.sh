#!/usr/bin/env bash
# Checks that every Go package with tests is in exactly one test tier, so that a new
# package cannot silently fall out of `make test` nor run twice.
#   hack/test-tiers.sh TIER 'PATTERNS' [TIER 'PATTERNS' ...]
# e.g. hack/test-tiers.sh unit './internal/planner/...' e2e './test/e2e'; the Makefile
# passes its TEST_UNIT, TEST_INTEGRATION, TEST_E2E and BENCHMARKS.
set -euo pipefail
cd "$(dirname "$0")/.."

(($# > 0 && $# % 2 == 0)) || { echo "usage: $0 TIER 'PATTERNS' [TIER 'PATTERNS' ...]" >&2; exit 2; }

# One `go list` per tier: a single call would merge a package two tiers both name.
# A pattern naming a folder that no longer exists makes go list fail, and so this check.
# The tier "split" names packages whose tests are divided by the integration build tag
# (Makefile TEST_SPLIT): they are listed in the unit tier too, and not counted twice.
listed="" split=""
while (($#)); do
  tier=$1 patterns=$2
  shift 2
  if [[ $tier == split ]]; then
    split=$patterns
    continue
  fi
  # shellcheck disable=SC2086 # the patterns are words
  pkgs=$(go list $patterns)
  listed+=$(sed "s|\$| $tier|" <<<"$pkgs")$'\n'
  if [[ $tier == benchmark ]]; then
    # make benchmark runs -run '^$': a Test in a benchmark package would never run.
    # shellcheck disable=SC2086
    stray=$(go list -f '{{.Dir}}' $patterns | while read -r d; do
      grep -HnE '^func Test[A-Za-z0-9_]*\(' "$d"/*_test.go 2>/dev/null | grep -v '^[^:]*:[0-9]*:func TestMain(' || true
    done)
    [[ -z $stray ]] || { printf 'tests in a benchmark package never run (move them to a tier):\n%s\n' "$stray" >&2; exit 1; }
  fi
done

# A test file that says it never ran is a claim nobody checked: run it or delete it.
never=$(git ls-files -z '*_test.go' | xargs -0 grep -lE '^// *NEVER RUN' 2>/dev/null || true)
[[ -z $never ]] || { printf 'test files whose header says they never ran:\n%s\n' "$never" >&2; exit 1; }

# A test file marked `//go:build integration` runs only in a split package (the unit build
# leaves it out; the integration tier runs those tests alone); one elsewhere never runs.
if [[ -n $split ]]; then
  # shellcheck disable=SC2086
  hack/integration-tests.sh $split >/dev/null
  # shellcheck disable=SC2086
  split_dirs=$(go list -f '{{.Dir}}' $split | sed "s|^$PWD/||")
else
  split_dirs=""
fi
stray=$(git ls-files -z -co --exclude-standard '*_test.go' | xargs -0 grep -lx '//go:build integration' 2>/dev/null | while read -r f; do
  grep -qxF "$(dirname "$f")" <<<"$split_dirs" || echo "$f"
done || true)
[[ -z $stray ]] || { printf 'test files marked //go:build integration outside TEST_SPLIT never run:\n%s\n' "$stray" >&2; exit 1; }

with_tests=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | sed '/^$/d' | sort)
twice=$(sed '/^$/d' <<<"$listed" | sort | awk '{tiers[$1] = tiers[$1] " " $2; n[$1]++} END {for (p in n) if (n[p] > 1) print p ":" tiers[p]}')
untiered=$(comm -23 <(echo "$with_tests") <(sed '/^$/d; s/ .*//' <<<"$listed" | sort -u))

if [[ -n $twice || -n $untiered ]]; then
  [[ -z $twice ]] || printf 'in more than one test tier:\n%s\n' "$twice" >&2
  [[ -z $untiered ]] || printf 'in no test tier (add them to TEST_UNIT, TEST_INTEGRATION or TEST_E2E in the Makefile):\n%s\n' "$untiered" >&2
  exit 1
fi
echo "test tiers: each of $(wc -l <<<"$with_tests") packages with tests is in exactly one tier"
