// servescope-cli info: the model's architecture, sizes, tensor types, parameters, weight bytes
// and the KV-cache bytes per token of every KV type.
#include <ostream>

#include "app/cli/command_support.h"
#include "engine/compute/roofs.h"
#include "engine/compute/vulkan/vulkan_backend.h"
#include "engine/core/error.h"
#include "engine/model/model_provenance.h"
#include "engine/serving/kv_block_pool.h"
#include "engine/tokenizer/pretokenizer.h"

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

// What the architecture adds to plain llama (or gpt2), where present: only the keys that apply.
json architecture_specifics(const model::ModelConfig& c) {
  json doc = json::object();
  if (!c.uses_rope()) return doc;
  doc["rope_mode"] = c.rope_neox ? "neox" : "normal";
  if (c.rope_scaling_factor > 0.0f) {
    doc["rope_scaling"] = {{"type", "linear"}, {"factor", shortest(c.rope_scaling_factor)}};
  }
  if (c.rope_freq_factors) doc["rope_frequency_factors"] = true;
  if (c.qkv_bias) doc["qkv_bias"] = true;
  doc["ffn_gate"] = c.gelu_gate ? "gelu" : "silu";
  if (c.embedding_scale > 0.0f) doc["embedding_scale"] = shortest(c.embedding_scale);
  if (c.attention_scale > 0.0f) doc["attention_scale"] = shortest(c.attention_scale);
  if (c.post_norms) doc["post_block_norms"] = true;
  if (c.qk_norm) doc["qk_norm"] = true;
  if (c.attn_softcap > 0.0f) doc["attn_logit_softcap"] = shortest(c.attn_softcap);
  if (c.final_softcap > 0.0f) doc["final_logit_softcap"] = shortest(c.final_softcap);
  if (c.sliding_window > 0 && (c.swa_pattern > 0 || !c.local_layers.empty())) {
    int64_t local = 0;
    for (int64_t l = 0; l < c.n_layers; ++l) local += c.is_local_layer(l) ? 1 : 0;
    doc["sliding_window"] = {
        {"window", c.sliding_window},
        {"pattern", c.local_layers.empty() ? json(c.swa_pattern) : json("per layer")},
        {"local_layers", local},
        {"local_rope_freq_base", shortest(c.rope_freq_base_local)}};
  }
  return doc;
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
  if (c.uses_rope()) doc["rope_freq_base"] = shortest(c.rope_freq_base);
  const json specifics = architecture_specifics(c);
  if (!specifics.empty()) doc["architecture_specifics"] = specifics;
  if (auto* vk = dynamic_cast<compute::vulkan::VulkanBackend*>(m->backend.get())) {
    // The roofs `probe`, the roofline and the lessons use (cached per device), with the compute
    // roof of the model's main weight type.
    const compute::Roofs probed = compute::probe_device_roofs(*vk, false).roofs;
    const compute::StepRoofs roofs =
        compute::step_roofs(probed, compute::main_probed_type(probed, weights.tensor_types));
    doc["device"] = {{"name", vk->device().name},
                     {"type", vk->device().type},
                     {"cache_gb_per_s", roofs.cache_gb_per_s},
                     {"stream_gb_per_s", roofs.memory_gb_per_s},
                     {"compute_gflop_per_s", roofs.compute_gflop_per_s}};
  }
  if (m->tokenizer) {
    const Vocabulary& v = m->tokenizer->vocabulary();
    doc["tokenizer"] = {{"model", v.model},
                        {"tokens", v.tokens.size()},
                        {"bos_id", v.bos_id},
                        {"eos_id", v.eos_id},
                        {"add_bos", v.add_bos}};
    if (v.model == "gpt2") {
      // The file's tokenizer.ggml.pre (null when absent) and the scheme it names.
      doc["tokenizer"]["pre"] = v.pre.empty() ? json(nullptr) : json(v.pre);
      doc["tokenizer"]["pre_scheme"] = PreTokenizer::named(v.pre).name();
    }
  }
  out << doc.dump(2) << "\n";
  return 0;
}

}  // namespace servescope::cli
