#include "app/cli/make_model_command.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "app/cli/cli_options.h"
#include "app/cli/output_path.h"
#include "engine/eval/quantize_model.h"
#include "engine/eval/random_model.h"
#include "engine/model/model.h"
#include "units/units.h"

namespace servescope::cli {
namespace {

using nlohmann::json;

constexpr const char* kShapeOptions[] = {"dim", "layers", "ffn", "heads", "kv-heads"};

// The preset named by --params, or the shape given by --dim --layers [--heads --kv-heads --ffn]
// (heads default to dim/64, kv-heads to heads, ffn to 8/3 dim rounded up to whole blocks of 32).
std::pair<eval::RandomModelShape, std::string> chosen_shape(const Options& options) {
  bool any_shape_option = false;
  for (const char* name : kShapeOptions) any_shape_option = any_shape_option || options.has(name);
  if (options.has("params") == any_shape_option) {
    throw UsageError(
        "make-model needs either --params 25M|100M|400M|1B or --dim D --layers L (with "
        "optional --heads, --kv-heads, --ffn), not both");
  }
  eval::RandomModelShape shape;
  std::string label;
  if (options.has("params")) {
    label = *options.get("params");
    shape = eval::random_model_preset(label);
  } else {
    if (!options.has("dim") || !options.has("layers")) {
      throw UsageError("make-model with a custom shape needs both --dim D and --layers L");
    }
    shape.dim = options.get_int("dim", 0);
    shape.n_layers = options.get_int("layers", 0);
    shape.n_heads = options.get_int("heads", std::max<int64_t>(1, shape.dim / 64));
    shape.n_kv_heads = options.get_int("kv-heads", shape.n_heads);
    shape.ffn_dim = options.get_int("ffn", (8 * shape.dim / 3 + 31) / 32 * 32);
    label = "d" + std::to_string(shape.dim) + "-l" + std::to_string(shape.n_layers);
  }
  shape.context_length = options.get_int("context", shape.context_length);
  return {shape, label};
}

// Refuses a file the disk cannot hold, before writing any of it.
void check_disk_space(const std::filesystem::path& out, uint64_t bytes) {
  std::error_code error;
  const auto space = std::filesystem::space(
      out.has_parent_path() ? out.parent_path() : std::filesystem::path("."), error);
  if (error) return;  // unknown: let the write itself report a full disk
  if (space.available < bytes) {
    throw UsageError("not enough disk space for " + out.string() + ": it needs " +
                     units::format_bytes(static_cast<double>(bytes)) + ", " +
                     units::format_bytes(static_cast<double>(space.available)) + " are free");
  }
}

json shape_json(const eval::RandomModelShape& s) {
  return {{"dim", s.dim},       {"layers", s.n_layers},
          {"heads", s.n_heads}, {"kv_heads", s.n_kv_heads},
          {"ffn", s.ffn_dim},   {"context_length", s.context_length}};
}

int run_make_model(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, {{"model", "params", "dim", "layers", "ffn", "heads", "kv-heads",
                                "context", "type", "seed", "vocab", "out"},
                               {}});
  if (!options.has("out")) throw UsageError("make-model needs --out OUT.gguf");
  eval::RandomModelSpec spec;
  std::tie(spec.shape, spec.label) = chosen_shape(options);
  spec.type = eval::parse_weight_type(options.get_or("type", "f32"));
  spec.seed = static_cast<uint64_t>(options.get_int("seed", 1));
  if (options.has("vocab")) spec.vocab_size = options.get_int("vocab", 0);
  eval::validate_shape(spec.shape, spec.type);

  const std::filesystem::path tokenizer_path = options.get_or("model", default_model_path());
  const std::filesystem::path out_path = *options.get("out");
  auto start = std::chrono::steady_clock::now();
  write_random_model(spec, tokenizer_path, out_path, [&] {
    std::cerr << "make-model: writing " << out_path.string() << " (random weights)\n";
    start = std::chrono::steady_clock::now();
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const gguf::GgufFile written = gguf::GgufFile::open(out_path);  // read back: it must load
  const model::ModelConfig config = model::read_model_config(written);
  const model::WeightSummary weights = model::summarize_weights(written);
  out << json{{"output", out_path.string()},
              {"size", spec.label},
              {"name", config.name},
              {"random_weights", config.random_weights},
              {"note", model::kRandomWeightsNote},
              {"shape", shape_json(spec.shape)},
              {"vocab_size", config.vocab_size},
              {"type", eval::weight_type_label(spec.type)},
              {"seed", spec.seed},
              {"parameters", weights.parameters},
              {"weight_bytes", weights.bytes},
              {"file_bytes", written.file_size()},
              {"write_s", seconds},
              {"write_mb_per_s", static_cast<double>(written.file_size()) / 1e6 / seconds}}
             .dump(2)
      << "\n";
  return 0;
}

// "25M 512/8/8/4/1376, ...": each preset's dim/layers/heads/kv-heads/ffn, from the table.
std::string preset_shapes() {
  std::string text;
  for (const eval::RandomModelPreset& p : eval::random_model_presets()) {
    const eval::RandomModelShape& s = p.shape;
    text += (text.empty() ? "" : ", ") + std::string(p.name) + " " + std::to_string(s.dim) + "/" +
            std::to_string(s.n_layers) + "/" + std::to_string(s.n_heads) + "/" +
            std::to_string(s.n_kv_heads) + "/" + std::to_string(s.ffn_dim);
  }
  return text;
}

}  // namespace

void write_random_model(const eval::RandomModelSpec& spec,
                        const std::filesystem::path& tokenizer_path,
                        const std::filesystem::path& out,
                        const std::function<void()>& before_write) {
  check_output_path(out, tokenizer_path);
  const gguf::GgufFile tokenizer_source = gguf::GgufFile::open(tokenizer_path);
  const gguf::GgufWriter writer = eval::random_model_writer(spec, tokenizer_source);
  const int64_t vocab = eval::random_model_vocab(spec, tokenizer_source);
  check_disk_space(out, eval::random_model_weight_bytes(spec.shape, vocab, spec.type) +
                            (uint64_t{1} << 20));  // + metadata and padding
  if (before_write) before_write();
  write_via_partial(out, [&](const std::filesystem::path& partial) { writer.write(partial); });
}

Subcommand make_model_subcommand() {
  return {"make-model",
          "(--params 25M|100M|400M|1B | --dim D --layers L [--heads H] [--kv-heads K] [--ffn F]) "
          "[--context N] [--type f32|f16|q8_0|q4_0] [--seed S] [--vocab N] --out OUT.gguf: a llama "
          "model of that size with random weights and the model's tokenizer (--vocab: padded "
          "with unused tokens to N), for timing only (its text is meaningless); presets as "
          "dim/layers/heads/kv-heads/ffn: " +
              preset_shapes(),
          run_make_model};
}

}  // namespace servescope::cli
