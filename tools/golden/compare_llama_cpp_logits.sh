#!/usr/bin/env bash
# The test models' golden logits (float64 PyTorch) against llama.cpp's forward pass: do the
# architectures' files mean to llama.cpp what they mean to ServeScope?
#
#   tools/golden/compare_llama_cpp_logits.sh LLAMA_CPP_SOURCE_DIR LLAMA_CPP_BUILD_DIR [MODEL.gguf...]
#
# LLAMA_CPP_SOURCE_DIR holds include/llama.h and ggml/include; LLAMA_CPP_BUILD_DIR bin/libllama.so
# (a CPU build with shared libraries). Default models: the F32 test model of every architecture.
# llama.cpp evaluates GELU through an F16 table, so gpt2 and the gemma models differ by ~1e-3 (with
# that table emulated in the reference, by ~1e-5 like the others). llama.cpp refuses a file
# whose general.name contains "phi3" unless its vocabulary has phi-3's special tokens, so the
# phi3 model is compared through a copy under another name.
set -euo pipefail

[[ $# -ge 2 ]] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
source_dir=$1
build_dir=$2
shift 2
repo_root=$(cd "$(dirname "$0")/../.." && pwd)
models=("$@")
if [[ ${#models[@]} -eq 0 ]]; then
  for name in llama gpt2 qwen2 llama-ropescale phi3 gemma gemma2 gemma3; do
    models+=("$repo_root/tests/data/models/$name-f32.gguf")
  done
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++17 -O1 "$repo_root/tools/golden/llama_cpp_logits.cpp" \
  -I"$source_dir/include" -I"$source_dir/ggml/include" -L"$build_dir/bin" \
  -lllama -lggml -lggml-base -Wl,-rpath,"$build_dir/bin" -o "$work/llama_cpp_logits"

run=()
for model in "${models[@]}"; do
  if [[ $(basename "$model") == phi3-* ]]; then
    copy=$work/$(basename "$model" .gguf | sed 's/phi3/p-h-i-3/')
    python3 - "$model" "$copy.gguf" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(data.replace(b"-phi3-", b"-phX3-"))
PY
    cp "${model%.gguf}.json" "$copy.json"
    run+=("$copy.gguf")
  else
    run+=("$model")
  fi
done
"$work/llama_cpp_logits" "${run[@]}"
