#!/usr/bin/env bash
# Times `gpuplane estimate -f` on N generated queries (default 5000), the
# whole process included, and checks every line got an answer.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-5000}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gpuplane" ./cmd/gpuplane
models=(Qwen/Qwen3-8B Qwen/Qwen3-32B meta-llama/Llama-3.1-8B meta-llama/Llama-3.1-70B Qwen/Qwen3-30B-A3B)
gpus=(h100_sxm h200_sxm b200_sxm l40s a100_80gb)
tps=(1 2 4 8)
isls=(256 1024 2000 4000 8000)
osls=(128 256 500 1000)
concs=(1 4 16 32 64 128)
for ((i = 0; i < n; i++)); do
  printf '{"model":"%s","gpu":"%s","tp":%d,"isl":%d,"osl":%d,"concurrency":%d,"precision":"fp8"}\n' \
    "${models[i % 5]}" "${gpus[(i / 5) % 5]}" "${tps[(i / 25) % 4]}" "${isls[(i / 100) % 5]}" \
    "${osls[(i / 7) % 4]}" "${concs[(i / 3) % 6]}"
done > "$tmp/queries.jsonl"
start=$(date +%s.%N)
"$tmp/gpuplane" estimate -f "$tmp/queries.jsonl" -o jsonl > "$tmp/out.jsonl"
end=$(date +%s.%N)
lines=$(wc -l < "$tmp/out.jsonl")
errors=$(grep -c '"error"' "$tmp/out.jsonl" || true)
echo "queries=$n answered=$lines with_error=$errors wall_s=$(echo "$end - $start" | bc)"
[[ "$lines" -eq "$n" ]]
