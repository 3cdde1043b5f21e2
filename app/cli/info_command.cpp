// servescope-cli info: the model's architecture, sizes, tensor types, parameters, weight bytes
// and the KV-cache bytes per token of every KV type.
#include <ostream>

#include "app/cli/command_support.h"
#include "engine/compute/vulkan/device_probe.h"
#include "engine/core/error.h"
#include "engine/model/model_provenance.h"
#include "engine/serving/kv_block_pool.h"

namespace servescope::cli {

using nlohmann::json;

namespace {

// What one token adds to the KV cache for each KV type, from the block pool's own formula; null
// where the type cannot store this model's rows (Q8_0 needs kv_dim a multiple of 32).
json kv_bytes_per_token_by_type(const model::ModelConfig& c) {
  json bytes = json::object();
  for (const gguf::GgmlType type : serving::kKvTypes) {
    const serving::KvLayout layout = serving::kv_layout(c, type);
    try {
      serving::validate(layout);
      bytes[kv_type_label(type)] = serving::kv_bytes_per_token(layout);
    } catch (const InputError&) {
      bytes[kv_type_label(type)] = nullptr;
    }
  }
  return bytes;
}

// Where the model comes from; null for what the file does not say.
json provenance_json(const model::ModelProvenance& p) {
  const auto text_or_null = [](const std::string& text) {
    return text.empty() ? json(nullptr) : json(text);
  };
  return {
      {"author", text_or_null(p.author)},
      {"license", text_or_null(p.license)},
      {"url", text_or_null(p.url)},
      {"source_url", text_or_null(p.source_url)},
      {"quantization_version",
       p.quantization_version ? json(*p.quantization_version) : json(nullptr)},
      {"chat_template", p.has_chat_template},
  };
}

}  // namespace

int run_info(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({}));
  const auto m = open_model(options);
  const model::ModelConfig& c = m->config;
  const model::WeightSummary weights = model::summarize_weights(m->file);
  json doc = {
      {"file", m->file.name()},
      {"gguf_version", m->file.version()},
      {"architecture", model::architecture_name(c.architecture)},
      {"name", c.name},
      {"backend", m->backend->name()},
      {"vocab_size", c.vocab_size},
      {"context_length", c.context_length},
      {"embedding_dim", c.dim},
      {"layers", c.n_layers},
      {"heads", c.n_heads},
      {"kv_heads", c.n_kv_heads},
      {"head_dim", c.head_dim},
      {"ffn_dim", c.ffn_dim},
      {"norm_eps", shortest(c.norm_eps)},
      {"tied_output", c.tied_output},
      {"random_weights", c.random_weights},
      {"parameters", weights.parameters},
      {"weight_bytes", weights.bytes},
      {"tensor_types", weights.tensor_types},
      {"kv_bytes_per_token", kv_bytes_per_token_by_type(c)},
  };
  doc.update(provenance_json(model::read_provenance(m->file)));
  if (c.random_weights) doc["note"] = model::kRandomWeightsNote;
  if (c.architecture == model::Architecture::kLlama)
    doc["rope_freq_base"] = shortest(c.rope_freq_base);
  if (auto* vk = dynamic_cast<compute::vulkan::VulkanBackend*>(m->backend.get())) {
    const auto probed = compute::vulkan::probe_roofs(*vk);  // measured once, then cached
    doc["device"] = {{"name", vk->device().name},
                     {"type", vk->device().type},
                     {"stream_gb_per_s", probed.roofs.stream_gb_per_s},
                     {"compute_gflop_per_s", probed.roofs.compute_gflop_per_s}};
  }
  if (m->tokenizer) {
    const Vocabulary& v = m->tokenizer->vocabulary();
    doc["tokenizer"] = {{"model", v.model},
                        {"tokens", v.tokens.size()},
                        {"bos_id", v.bos_id},
                        {"eos_id", v.eos_id},
                        {"add_bos", v.add_bos}};
  }
  out << doc.dump(2) << "\n";
  return 0;
}

}  // namespace servescope::cli
