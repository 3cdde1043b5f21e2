#!/usr/bin/env bash
# BENCHMARKS.md's CPU figures in one run: the probe's roofs, llama.cpp side by side
# (1 and 2 threads), batch sweeps of the bundled model (F32, Q8_0 8-bit, Q4_0 exact and 8-bit)
# and of a 100M random-weight model, and decode time against model size (25M..1B, F32 / Q8_0 /
# Q4_0). With --base OLD_CLI every measurement runs for the old binary and then the new one,
# alternating, so both see the same machine load (an A/B against the previous commit).
#
#   tools/bench/cpu_speed.sh LLAMA_CPP_BUILD_DIR OUT_DIR [--cli NEW_CLI] [--base OLD_CLI]
#       [--sizes "25M 100M 400M 1B"]
#
# Writes JSON/Markdown per measurement into OUT_DIR and a log with the load average per step.
# The random-weight models (about 8.5 GB for all sizes) are written once into OUT_DIR/models.
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 2 ]] || usage
llama_build=$1
out=$2
shift 2
repo_root=$(cd "$(dirname "$0")/../.." && pwd)
new=$repo_root/build/release/bin/servescope-cli
base=""
sizes="25M 100M 400M 1B"
while [[ $# -gt 0 ]]; do
  case $1 in
    --cli) new=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) usage ;;
  esac
done
model=$repo_root/assets/models/servescope-stories.gguf
mkdir -p "$out/models"
log() { echo "[$(date +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)] $*" | tee -a "$out/log.txt"; }
binaries=(new)
[[ -n $base ]] && binaries=(base new)
cli_of() { if [[ $1 == base ]]; then echo "$base"; else echo "$new"; fi; }

log start
"$new" probe --fresh --threads 2 >"$out/probe-t2.json"
"$new" probe --fresh --threads 1 >"$out/probe-t1.json"
log probe
"$new" quantize --model "$model" --type q8_0 --out "$out/models/stories-q8_0.gguf" >/dev/null
"$new" quantize --model "$model" --type q4_0 --out "$out/models/stories-q4_0.gguf" >/dev/null
for size in $sizes; do
  for type in f32 q8_0 q4_0; do
    f=$out/models/$size-$type.gguf
    [[ -f $f ]] || "$new" make-model --model "$model" --params "$size" --type "$type" --out "$f" >/dev/null
  done
done
log models

# Cold (a fresh process's first run) for the A/B, as an old CLI can only measure; then warm
# (generate --warmup), as llama-bench measures.
compare() {  # compare THREADS BINARY cold|warm
  local mode=()
  [[ $3 == cold ]] && mode=(--cold)
  "$repo_root/tools/bench/compare_llama_cpp.sh" "$llama_build" --rounds 4 --threads "$1" \
    --cli "$(cli_of "$2")" --model "$model" "${mode[@]}" >"$out/llama-t$1-$2-$3.md"
  log "llama.cpp side by side, $1 threads, $2, $3"
}
for threads in 2 1; do
  for b in "${binaries[@]}"; do compare "$threads" "$b" cold; done
  compare "$threads" new warm
done
for round in 1 2; do
  for b in "${binaries[@]}"; do
    cli=$(cli_of "$b")
    "$cli" bench --sweep --backend cpu --model "$model" >"$out/sweep-f32-$b-$round.json"
    "$cli" bench --sweep --backend cpu --model "$out/models/stories-q8_0.gguf" --activations q8_0 \
      >"$out/sweep-q8a-$b-$round.json"
    "$cli" bench --sweep --backend cpu --model "$out/models/stories-q4_0.gguf" \
      >"$out/sweep-q4-$b-$round.json"
    "$cli" bench --sweep --backend cpu --model "$out/models/stories-q4_0.gguf" --activations q8_0 \
      >"$out/sweep-q4a-$b-$round.json"
    log "sweeps of the bundled model, round $round, $b"
  done
done
for size in $sizes; do
  for type in f32 q8_0 q4_0; do
    for b in "${binaries[@]}"; do
      "$(cli_of "$b")" generate --model "$out/models/$size-$type.gguf" --ids 1,2,3 --max-tokens 17 \
        --greedy --no-stop --json >"$out/size-$size-$type-$b.json"
    done
    log "decode, $size $type"
  done
done
if [[ " $sizes " == *" 100M "* ]]; then
  for b in "${binaries[@]}"; do
    "$(cli_of "$b")" bench --sweep --backend cpu --model "$out/models/100M-f32.gguf" \
      >"$out/sweep100M-$b.json"
    log "sweep of the 100M model, $b"
  done
fi
log done
