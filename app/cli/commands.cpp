#include "app/cli/commands.h"

#include "app/cli/command_support.h"
#include "app/cli/make_model_command.h"
#include "app/common/data_files.h"

namespace servescope::cli {

std::string default_model_path() { return app::bundled_model_path().string(); }

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> all = {
      {"info", "architecture, sizes, tensor types, parameters, weight and KV-cache bytes",
       run_info},
      {"tokenize", "--text T [--no-bos] [--parse-special]: token ids and pieces", run_tokenize},
      {"logits",
       "--ids 1,2,3 [--all] [--kv-type T]: next-token logits of the last (or every) position",
       run_logits},
      {"devices",
       "the CPU (model, cores, caches) and every Vulkan device (type, driver, memory heaps, "
       "subgroup size, limits); --device N picks vulkan[N]",
       run_devices},
      {"probe",
       "[--fresh]: the device's measured roofs: read GB/s in and beyond the last-level cache, "
       "matrix-multiply GFLOP/s per weight type (cached per device and activations: --activations "
       "q8_0 gives the Q8_0/Q4_0 roofs of 8-bit activations; --fresh remeasures)",
       run_probe},
      {"attention",
       "(--prompt T | --ids 1,2,3) --layer L --head H [--kv-type f32|f16|q8_0]: the softmax "
       "weights of one layer's head over the prompt (row i: query i over positions 0..i)",
       run_attention},
      {"generate",
       "(--prompt T | --ids 1,2,3) [--max-tokens N] [--greedy | --temperature T --top-k K "
       "--top-p P --seed S] [--n N] [--kv-type f32|f16|q8_0] [--json [--top K]] [--no-stop] "
       "[--warmup]: continue a prompt through the serving engine (--n: N samples sharing the "
       "prompt's KV blocks, sample i with seed S + i; --top: each token's probability, its "
       "sampling probability and the K most likely alternatives; --warmup: the same work once, "
       "untimed, first, as llama-bench does)",
       run_generate},
      {"quantize",
       "--type f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q2_k|q3_k|q4_k|q5_k|q6_k|q4_k_m|q5_k_m "
       "--out OUT.gguf: re-encode the model's matrices (q4_k_m / q5_k_m: llama.cpp's mixes)",
       run_quantize},
      make_model_subcommand(),
      {"perplexity",
       "[--text-file PATH] [--max-chunks N] [--kv-type T]: perplexity on a text (default: "
       "the bundled stories)",
       run_perplexity},
      {"weight-error",
       "--type f16|q8_0|q4_0: per-tensor and per-layer error of quantising the model's weights "
       "(RMSE, max, relative, SQNR, histogram)",
       run_weight_error},
      {"quant-report",
       "[--types f32,f16,bf16,q8_0,q6_k,q5_1,q5_0,q5_k,q5_k_m,q4_1,q4_0,q4_k,q4_k_m,q3_k,q2_k] "
       "[--kv-types f32,f16,q8_0] [--text-file PATH] "
       "[--max-chunks N] [--max-kl X] [--max-tpot-ms Y] [--min-speedup Z] [--greedy-tokens N] "
       "[--price-per-hour P]: quality, memory, speed, latency and cost per request under a "
       "fixed load of each weight type (or q4_k_m / q5_k_m recipe) and KV cache type against F32, "
       "with bits per weight and a verdict per limit",
       run_quant_report},
      {"kv-error",
       "--kv-type f16|q8_0 (--prompt T | --text-file PATH): per layer, RMSE, max error and "
       "SQNR of the keys and values an F16 or Q8_0 cache holds after the text, against F32",
       run_kv_error},
      {"bench",
       "[--clients N] [--rate R] [--prompt-tokens MIN:MAX] [--output-tokens MIN:MAX] "
       "[--max-batch N] [--token-budget N] [--kv-type f32|f16|q8_0] [--kv-blocks N | --kv-bytes "
       "B] [--block-size N] [--seed S] [--policy continuous|static [--batch-wait-ms W]] "
       "[--price-per-hour P] [--sweep [--sweep-max N]]: simulated clients through the batching "
       "engine; throughput, TTFT/TPOT percentiles, occupancy, KV peak, preemptions, cost per "
       "request (--sweep: per max batch size 1..32; --policy static: collect a batch until full "
       "or W ms, run it to the end)",
       run_bench},
  };
  return all;
}

}  // namespace servescope::cli
