// servescope-cli logits: the next-token logits of the last (or every) position of a prompt.
#include <ostream>

#include "app/cli/command_support.h"
#include "engine/eval/evaluator.h"

namespace servescope::cli {

using nlohmann::json;

int run_logits(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"ids", "kv-type"}, {"all"}}));
  if (!options.has("ids")) throw UsageError("logits needs --ids 1,2,3");
  const auto m = open_model(options);
  const std::vector<int32_t> ids = parse_id_list(*options.get("ids"));
  model::KvCache cache = m->transformer->new_cache(static_cast<int64_t>(ids.size()));
  // Every position: in passes where the logits would not fit one backend binding.
  const std::vector<float> logits = options.has("all") ? eval::chunk_logits(*m->transformer, ids)
                                                       : m->transformer->forward(ids, cache, false);
  const auto vocab = static_cast<size_t>(m->config.vocab_size);
  json rows = json::array();
  for (size_t r = 0; r < logits.size() / vocab; ++r) {
    rows.push_back(float_array(logits.data() + r * vocab, vocab));
  }
  out << json{{"ids", ids}, {"logits", rows}}.dump() << "\n";
  return 0;
}

}  // namespace servescope::cli
