// servescope-cli quantize: re-encode the model's matrices as one weight type.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "app/cli/command_support.h"
#include "app/cli/commands.h"
#include "app/cli/output_path.h"
#include "engine/eval/quantize_model.h"

namespace servescope::cli {

using nlohmann::json;

namespace {

// "tensor 12/48 blk.1.ffn_up.weight" on stderr, rewritten in place on a terminal.
eval::QuantizeProgress stderr_progress() {
  const bool terminal = isatty(STDERR_FILENO) != 0;
  return [terminal](int64_t done, int64_t total, const std::string& name) {
    std::cerr << (terminal ? "\r\033[K" : "") << "quantize: tensor " << done << "/" << total << " "
              << name << (terminal && done < total ? "" : "\n") << std::flush;
  };
}

}  // namespace

int run_quantize(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, {{"model", "type", "out"}, {}});
  if (!options.has("type") || !options.has("out")) {
    throw UsageError(
        "quantize needs --type f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q2_k|q3_k|q4_k|q5_k|q6_k|"
        "q4_k_m|q5_k_m and --out OUT.gguf");
  }
  const std::filesystem::path in = options.get_or("model", default_model_path());
  const std::filesystem::path out_path = *options.get("out");
  const eval::QuantizeScheme scheme = eval::parse_quantize_scheme(*options.get("type"));
  check_output_path(out_path, in);
  const gguf::GgufFile source = gguf::GgufFile::open(in);
  write_via_partial(out_path, [&](const std::filesystem::path& partial) {
    eval::quantize_model(source, scheme, stderr_progress()).write(partial);
  });

  const gguf::GgufFile written = gguf::GgufFile::open(out_path);  // read back: it must load
  int64_t converted = 0;
  for (const gguf::TensorInfo& t : written.tensors()) converted += t.type == scheme.type ? 1 : 0;
  const model::WeightSummary output = model::summarize_weights(written);
  out << json{{"input", in.string()},
              {"output", out_path.string()},
              {"type", eval::scheme_label(scheme)},
              {"file_type", eval::scheme_file_type(scheme)},
              {"tensors", written.tensors().size()},
              {"tensors_of_type", converted},
              {"tensor_types", output.tensor_types},  // the mix a recipe or fallbacks made
              {"input_weight_bytes", model::summarize_weights(source).bytes},
              {"output_weight_bytes", output.bytes},
              {"output_file_bytes", written.file_size()}}
             .dump(2)
      << "\n";
  return 0;
}

}  // namespace servescope::cli
