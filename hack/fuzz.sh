#!/usr/bin/env bash
# Runs every Go fuzz target for a short, fixed time (default 5 s each).
# `go test` alone replays the seed corpora in testdata/fuzz; this looks for
# new crashes. A crash fails the run and leaves its input under the
# package's testdata/fuzz/<target>/, where it becomes a regression seed.
set -euo pipefail
cd "$(dirname "$0")/.."
t="${1:-5s}"
targets=(
  "./internal/strict FuzzUnmarshal"
  "./internal/strict FuzzWholeNumbers"
  "./internal/strict FuzzDuplicateKey"
  "./internal/catalog FuzzCatalogFile"
  "./internal/catalog FuzzHFConfig"
  "./internal/perf FuzzParseParams"
  "./internal/configure FuzzParseFile"
  "./internal/configure FuzzParsePool"
  "./internal/scenario FuzzParse"
  "./internal/dra/fleet FuzzParse"
  "./internal/dra/plugin FuzzDecodeConfig"
  "./internal/plannerlive FuzzParseConfig"
  "./internal/plannerlive FuzzBucketsQuantile"
  "./internal/workload FuzzReplay"
  "./internal/explain FuzzLoad"
  "./internal/emulate FuzzRequestBody"
  "./internal/frontend FuzzPrefillBody"
  "./internal/cli FuzzEstimateLine"
  "./internal/cli FuzzArrayQueries"
  "./internal/operator/plan FuzzRequest"
  "./internal/operator/devicepool FuzzSelector"
  "./internal/dra/healthfile FuzzParse"
  "./internal/recordcri FuzzRequests"
  "./internal/kernels FuzzParseTable"
  "./internal/kernels FuzzParseMoE"
  "./internal/kernels FuzzLoadMLAAndGDN"
  "./internal/kernels FuzzCacheRestore"
  "./internal/kernels FuzzReadIndexer"
  "./internal/calibrate FuzzLoadCSV"
  "./internal/calibrate FuzzParseKnobs"
  "./internal/listenaddr FuzzCheck"
)
for entry in "${targets[@]}"; do
  read -r pkg name <<<"$entry"
  echo "fuzz $pkg $name for $t"
  if ! out="$(go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$t" 2>&1)"; then
    # On a loaded machine the fuzzing engine can run out of its time while
    # its workers still start ("context deadline exceeded", no input
    # written): that is no crash, so try once more; a crash always writes
    # its input ("Failing input written to") and fails at once.
    if grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
      echo "fuzz $pkg $name: the engine timed out before fuzzing; again"
      if out="$(go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$t" 2>&1)"; then
        continue
      fi
    fi
    echo "$out" | grep -v '^fuzz: elapsed' >&2
    exit 1
  fi
done
echo "fuzzed ${#targets[@]} targets, $t each: no crash"
