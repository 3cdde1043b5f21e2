// servescope-cli attention: the softmax weights one layer's head used over a prompt.
#include <ostream>

#include "app/cli/command_support.h"
#include "engine/eval/quantize_model.h"

namespace servescope::cli {

using nlohmann::json;

namespace {

// --layer / --head: a whole number in [0, count).
int64_t index_option(const Options& options, const std::string& name, int64_t count) {
  if (!options.has(name)) throw UsageError("attention needs --" + name + " N");
  const int64_t value = options.get_int(name, 0);
  if (value < 0 || value >= count) {
    throw UsageError("--" + name + " " + std::to_string(value) + " is outside the model (0.." +
                     std::to_string(count - 1) + ")");
  }
  return value;
}

}  // namespace

int run_attention(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(
      args, with_common({{"prompt", "prompt-file", "ids", "layer", "head", "kv-type"}, {}}));
  const auto m = open_model(options);
  const int64_t layer = index_option(options, "layer", m->config.n_layers);
  const int64_t head = index_option(options, "head", m->config.n_heads);
  const std::vector<int32_t> ids = prompt_ids(options, *m);

  m->transformer->set_attention_capture(model::AttentionCapture{layer, head});
  model::KvCache cache = m->transformer->new_cache(static_cast<int64_t>(ids.size()));
  m->transformer->forward(ids, cache);
  const model::AttentionWeights& captured = m->transformer->captured_attention().at(0);

  json pieces = json::array();
  if (m->tokenizer) {
    for (const int32_t id : ids) pieces.push_back(m->tokenizer->piece(id));
  }
  json weights = json::array();
  for (const std::vector<float>& row : captured.rows) {
    weights.push_back(float_array(row.data(), row.size()));
  }
  out << json{{"layer", layer},
              {"head", head},
              {"ids", ids},
              {"pieces", pieces},
              {"weights", weights},
              {"backend", m->backend->name()},
              {"kv_type", eval::weight_type_label(m->transformer->kv_type())}}
             .dump()
      << "\n";
  return 0;
}

}  // namespace servescope::cli
