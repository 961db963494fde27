#!/usr/bin/env bash
# Times `gpuplane configure`, the whole process included, for the reference
# search (Qwen3-32B fp8, 8 x h200_sxm, 4000/500, TTFT 500 ms, ITL 30 ms) and
# the 64-device, three-kind pool of examples/pool.yaml. Prints the median of
# N runs (default 5) and the candidates each evaluated.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-5}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gpuplane" ./cmd/gpuplane
bench() {
  local name="$1"
  shift
  local times=()
  for ((i = 0; i < n; i++)); do
    local start end
    start=$(date +%s.%N)
    "$tmp/gpuplane" configure "$@" -o json > "$tmp/out.json"
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  local median
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((n + 1) / 2))p")
  local cands
  cands=$(grep -o '"candidates_evaluated": [0-9]*' "$tmp/out.json" | grep -o '[0-9]*$')
  local meets
  meets=$(grep -c '"meets_slo": true' "$tmp/out.json" || true)
  echo "$name: median_wall_s=$median runs=$n candidates_evaluated=$cands slo_meeting_rows=$meets"
}
bench reference-8xh200 --model Qwen/Qwen3-32B --precision fp8 --backend vllm --isl 4000 --osl 500 \
  --ttft 500 --itl 30 --gpu h200_sxm --total-gpus 8
bench pool64-3kinds --pool examples/pool.yaml --model Qwen/Qwen3-8B --precision fp8 --isl 2000 --osl 300 \
  --ttft 800 --itl 40
# A cluster: 1,000 devices of four kinds. The search simulates copies of a
# unit, so this costs about what the 64-device pool does.
cat > "$tmp/pool1000.yaml" <<'POOL'
pool:
- {device: h100_sxm, count: 400}
- {device: h200_sxm, count: 300}
- {device: "h100_sxm:3g.40gb", count: 200}
- {device: "a10:1/2", count: 100}
POOL
bench pool1000-4kinds --pool "$tmp/pool1000.yaml" --model Qwen/Qwen3-32B --precision fp8 --isl 4000 --osl 500 \
  --ttft 500 --itl 30
