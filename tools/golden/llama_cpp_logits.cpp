// The golden logits of tests/data/models against llama.cpp's own forward pass (libllama): an
// independent check that ServeScope reads each architecture's GGUF keys and tensors as
// llama.cpp does. Built and run by compare_llama_cpp_logits.sh; not part of the build.
//
// Per model: llama.cpp evaluates the golden prompt in one batch (F32 KV cache, flash attention
// off, so that nothing is rounded to F16 on the way) and the largest |llama.cpp - golden| over
// every position's logits is printed.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "llama.h"

namespace {

// Largest |llama.cpp - golden|, or a negative number when llama.cpp cannot run the file.
double compare(const std::string& gguf, const std::string& golden_json) {
  std::ifstream in(golden_json);
  const auto doc = nlohmann::json::parse(in);
  const auto ids = doc["prompt_ids"].get<std::vector<llama_token>>();
  const auto golden = doc["logits"].get<std::vector<std::vector<double>>>();

  llama_model* model = llama_model_load_from_file(gguf.c_str(), llama_model_default_params());
  if (model == nullptr) return -1.0;
  llama_context_params params = llama_context_default_params();
  params.n_ctx = params.n_batch = params.n_ubatch = static_cast<uint32_t>(ids.size());
  params.type_k = params.type_v = GGML_TYPE_F32;
  params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, params);
  llama_batch batch = llama_batch_init(static_cast<int32_t>(ids.size()), 0, 1);
  for (size_t i = 0; i < ids.size(); ++i) {
    batch.token[i] = ids[i];
    batch.pos[i] = static_cast<llama_pos>(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = static_cast<int32_t>(ids.size());
  double worst = -1.0;
  if (ctx != nullptr && llama_decode(ctx, batch) == 0) {
    const int32_t vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    worst = 0.0;
    for (size_t i = 0; i < ids.size(); ++i) {
      const float* logits = llama_get_logits_ith(ctx, static_cast<int32_t>(i));
      for (int32_t v = 0; v < vocab; ++v) {
        worst = std::fmax(worst, std::fabs(logits[v] - golden[i][static_cast<size_t>(v)]));
      }
    }
  }
  llama_batch_free(batch);
  if (ctx != nullptr) llama_free(ctx);
  llama_model_free(model);
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf... (each next to its golden MODEL.json)\n", argv[0]);
    return 2;
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  int failures = 0;
  for (int a = 1; a < argc; ++a) {
    const std::string gguf = argv[a];
    const std::string stem = gguf.substr(0, gguf.size() - std::string(".gguf").size());
    const double worst = compare(gguf, stem + ".json");
    if (worst < 0.0) {
      std::printf("%-28s llama.cpp cannot run it\n", gguf.c_str());
      ++failures;
    } else {
      std::printf("%-28s max |llama.cpp - golden| = %.3g\n", gguf.c_str(), worst);
    }
  }
  llama_backend_free();
  return failures == 0 ? 0 : 1;
}
