// servescope-cli weight-error: per-tensor and per-layer error of quantising the weights.
#include <ostream>

#include "app/cli/command_support.h"
#include "app/cli/commands.h"
#include "engine/eval/quantize_model.h"
#include "engine/eval/tensor_error.h"

namespace servescope::cli {

using nlohmann::json;

int run_weight_error(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, {{"model", "type"}, {}});
  if (!options.has("type")) throw UsageError("weight-error needs --type f32|f16|q8_0|q4_0");
  const gguf::GgmlType type = eval::parse_weight_type(*options.get("type"));
  const gguf::GgufFile source = gguf::GgufFile::open(options.get_or("model", default_model_path()));
  const std::vector<eval::TensorError> errors = eval::measure_quantisation_error(source, type);
  json tensors = json::array();
  for (const eval::TensorError& e : errors) {
    tensors.push_back({{"name", e.name},
                       {"type", gguf::type_name(e.type)},
                       {"elements", e.elements},
                       {"rmse", e.rmse},
                       {"max_abs_error", e.max_abs_error},
                       {"relative_error", e.relative_error},
                       {"sqnr_db", finite_or_null(e.sqnr_db)},
                       {"histogram", e.histogram.counts}});
  }
  out << json{{"model", source.name()},
              {"type", eval::weight_type_label(type)},
              {"bin_edges", eval::default_error_bin_edges()},
              {"layers", layer_errors_json(eval::summarize_by_layer(errors))},
              {"tensors", tensors}}
             .dump(2)
      << "\n";
  return 0;
}

}  // namespace servescope::cli
