// servescope-cli perplexity: the model's perplexity on a text.
#include <ostream>

#include "app/cli/command_support.h"
#include "app/common/data_files.h"
#include "engine/eval/evaluator.h"

namespace servescope::cli {

using nlohmann::json;

int run_perplexity(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"text-file", "max-chunks", "kv-type"}, {}}));
  const auto m = open_model(options);
  const std::vector<int32_t> ids = evaluation_ids(options, *m);
  eval::QualityEvaluator evaluator(
      eval::split_into_chunks(ids, m->config.context_length, m->tokenizer->vocabulary().bos_id,
                              options.get_int("max-chunks", 0)),
      stderr_eval_progress());
  const eval::VariantQuality q = evaluator.score(*m->transformer, m->file.name());
  out << json{{"model", m->file.name()},
              {"backend", m->backend->name()},
              {"text", options.get_or("text-file", app::bundled_eval_text_path().string())},
              {"text_tokens", ids.size()},
              {"positions", q.positions},
              {"perplexity", q.perplexity}}
             .dump(2)
      << "\n";
  return 0;
}

}  // namespace servescope::cli
