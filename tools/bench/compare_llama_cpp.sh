#!/usr/bin/env bash
# ServeScope's CPU backend against llama.cpp on the same model, same thread count, runs
# alternating (llama.cpp, then ServeScope, round after round) so both see the same machine load.
#
#   tools/bench/compare_llama_cpp.sh LLAMA_CPP_BUILD_DIR [--rounds N] [--threads T]
#       [--model F32.gguf] [--cli build/release/bin/servescope-cli] [--types f32,q8_0,q4_0] [--cold]
#
# LLAMA_CPP_BUILD_DIR holds bin/llama-bench (a CPU-only release build). The model's Q8_0 and
# Q4_0 copies are written with `servescope-cli quantize` into a temporary folder. Prefill is a
# 128-token prompt (llama-bench -p 128), decode 64 tokens from an empty context (-n 64).
# ServeScope runs `generate` with --ids: prefill = 128 prompt ids and one output token;
# decode = the BOS id and 65 output tokens (64 decode steps); for Q8_0/Q4_0 once with exact
# float activations and once with --activations q8_0 (8-bit activations as llama.cpp uses).
# Both sides measure warm: llama-bench runs its work once untimed first, and `generate --warmup`
# does the same (--cold, or a CLI older than --warmup: each run times a fresh process's first
# prefill, threads waking and scratch pages touched, as a user's first prompt sees it).
# Prints a Markdown table of means over the rounds and each ratio ServeScope / llama.cpp.
set -euo pipefail

usage() {
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

[[ $# -ge 1 ]] || usage
llama_build=$1
shift
rounds=5
threads=2
repo_root=$(cd "$(dirname "$0")/../.." && pwd)
model=$repo_root/assets/models/servescope-stories.gguf
cli=$repo_root/build/release/bin/servescope-cli
types=f32,q8_0,q4_0
warmup=(--warmup)
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --cli) cli=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --cold) warmup=(); shift ;;
    *) usage ;;
  esac
done
bench=$llama_build/bin/llama-bench
[[ -x $bench ]] || { echo "no llama-bench at $bench (build llama.cpp's llama-bench target)" >&2; exit 1; }
[[ -x $cli ]] || { echo "no servescope-cli at $cli (cmake --preset release && cmake --build --preset release --target servescope-cli, or --cli PATH)" >&2; exit 1; }
[[ -f $model ]] || { echo "no model at $model (--model F32.gguf)" >&2; exit 1; }

if [[ ${#warmup[@]} -gt 0 ]] &&
  ! "$cli" generate --model "$model" --ids 1 --max-tokens 1 --warmup --json > /dev/null 2>&1; then
  warmup=()  # a CLI from before --warmup
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

model_for() {  # the model file of a weight type
  if [[ $1 == f32 ]]; then echo "$model"; else echo "$work/model-$1.gguf"; fi
}
for type in ${types//,/ }; do
  if [[ $type != f32 ]]; then
    "$cli" quantize --model "$model" --type "$type" --out "$(model_for "$type")" > /dev/null 2>&1
  fi
done

# 128 prompt ids: BOS then ids 100..226 (any in-vocabulary ids; the weights do the same work).
prompt_ids=1
for ((i = 100; i < 227; ++i)); do prompt_ids+=",$i"; done

json_field() {  # json_field NAME < generate --json output
  sed -n "s/^ *\"$1\": \([0-9.e+-]*\),\{0,1\}$/\1/p"
}

llama_run() {  # llama_run MODEL -> "prefill_tok_s decode_tok_s" (0 0 if it failed)
  { "$bench" -m "$1" -t "$threads" -p 128 -n 64 -r 1 -o csv 2> /dev/null || true; } | awk -F, '
    NR == 1 { for (i = 1; i <= NF; ++i) { gsub(/"/, "", $i); col[$i] = i } next }
    { gsub(/"/, ""); if ($col["n_prompt"] > 0) p = $col["avg_ts"]; else d = $col["avg_ts"] }
    END { print p + 0, d + 0 }'
}

servescope_run() {  # servescope_run MODEL [extra options] -> "prefill_tok_s decode_tok_s"
  local m=$1
  shift
  local prefill decode
  prefill=$("$cli" generate --model "$m" --ids "$prompt_ids" --max-tokens 1 --greedy --no-stop \
    --threads "$threads" --json "${warmup[@]}" "$@" | json_field prefill_tokens_per_s)
  decode=$("$cli" generate --model "$m" --ids 1 --max-tokens 65 --greedy --no-stop \
    --threads "$threads" --json "${warmup[@]}" "$@" | json_field decode_tokens_per_s)
  echo "$prefill $decode"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
results=$work/results.txt
for ((round = 1; round <= rounds; ++round)); do
  for type in ${types//,/ }; do
    m=$(model_for "$type")
    echo "$type llama.cpp $(llama_run "$m")" >> "$results"
    echo "$type servescope $(servescope_run "$m")" >> "$results"
    if [[ $type != f32 && $type != f16 ]]; then
      echo "$type servescope-int8 $(servescope_run "$m" --activations q8_0)" >> "$results"
    fi
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

echo "Machine: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs;" \
  "load average (1/5/15 min) $load_start at the start, $load_end at the end."
echo "llama.cpp: $("$bench" -m "$model" -t 1 -p 0 -n 1 -r 1 -o csv 2> /dev/null |
  awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) { gsub(/"/, "", $i); col[$i] = i } next }
    { gsub(/"/, ""); print "build " $col["build_number"] ", commit " $col["build_commit"]; exit }')"
echo "Threads: $threads; $rounds alternating rounds; tokens/s, mean over the rounds;" \
  "ServeScope $([[ ${#warmup[@]} -gt 0 ]] && echo "warmed up (generate --warmup)" || echo "cold (a fresh process's first run)")."
echo
awk -v types="$types" '
  function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "n/a (llama.cpp failed)" }
  { key = $1 " " $2; prefill[key] += $3; decode[key] += $4; n[key]++ }
  END {
    print "| weights | activations | prefill ServeScope | prefill llama.cpp | ratio | decode ServeScope | decode llama.cpp | ratio |"
    print "|---|---|---|---|---|---|---|---|"
    split(types, list, ",")
    for (i = 1; i in list; ++i) {
      t = list[i]; ref = t " llama.cpp"
      lp = prefill[ref] / n[ref]; ld = decode[ref] / n[ref]
      for (v = 1; v <= 2; ++v) {
        key = t (v == 1 ? " servescope" : " servescope-int8")
        if (!(key in n)) continue
        p = prefill[key] / n[key]; d = decode[key] / n[key]
        printf "| %s | %s | %.0f | %.0f | %s | %.0f | %.0f | %s |\n", toupper(t),
          (v == 1 ? "exact float" : "8-bit"), p, lp, ratio(p, lp), d, ld, ratio(d, ld)
      }
    }
  }' "$results"
