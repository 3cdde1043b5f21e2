#include "app/lessons/generators.h"

#include <charconv>
#include <cmath>
#include <functional>

#include "app/lessons/format.h"
#include "app/lessons/vocabulary.h"
#include "engine/core/error.h"
#include "engine/serving/kv_block_pool.h"

namespace servescope::lessons {
namespace {

// from_chars, not stod: locale-independent (the window's C locale may use a decimal comma).
// The text was checked before; 0 if not.
template <typename T>
T parse(const std::string& text) {
  T value{};
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// The parameters of one question, resolved and checked against the generator's spec.
class Params {
 public:
  // measured == nullptr checks only: `measured` is then accepted where a parameter allows it.
  Params(const GeneratorSpec& spec, const std::map<std::string, std::string>& given,
         const Measurements* measured)
      : spec_(spec) {
    for (const auto& [name, text] : given) {
      if (find_param(spec, name) == nullptr) {
        throw InputError(std::string(spec.name) + " has no parameter '" + name + "'; it takes " +
                         param_names());
      }
    }
    for (const ParamSpec& p : spec.params) {
      const auto it = given.find(std::string(p.name));
      std::string text = it != given.end() ? it->second : std::string(p.default_value);
      if (text.empty()) {
        throw InputError(std::string(spec.name) + " needs the parameter " + std::string(p.name) +
                         " (" + std::string(p.help) + ")");
      }
      if (text == "measured" && !p.measured_from.empty()) {
        if (measured == nullptr) continue;
        const auto m = measured->find(std::string(p.measured_from));
        if (m == measured->end()) {
          throw InputError(std::string(p.name) + ": measured asks for " +
                           std::string(p.measured_from) + ", which has not been measured yet");
        }
        text = format_plain(m->second);
      }
      check(p, text);
      resolved_[std::string(p.name)] = text;
    }
  }

  int64_t integer(std::string_view name) const {
    return parse<int64_t>(resolved_.at(std::string(name)));
  }
  double number(std::string_view name) const {
    return parse<double>(resolved_.at(std::string(name)));
  }
  const std::string& text(std::string_view name) const { return resolved_.at(std::string(name)); }
  const std::map<std::string, std::string>& all() const { return resolved_; }

 private:
  std::string param_names() const {
    std::vector<std::string_view> names;
    for (const ParamSpec& p : spec_.params) names.push_back(p.name);
    return one_of(names);
  }

  void check(const ParamSpec& p, const std::string& text) const {
    const std::string what = std::string(spec_.name) + "'s " + std::string(p.name);
    if (p.kind == ParamKind::kChoice) {
      for (const std::string& a : p.allowed) {
        if (a == text) return;
      }
      throw InputError(what + " '" + text + "' is not one of " + one_of(p.allowed));
    }
    double value = 0;
    bool whole = true;
    if (p.kind == ParamKind::kInteger) {
      int64_t n = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
      whole = error == std::errc() && end == text.data() + text.size();
      value = static_cast<double>(n);
    } else {
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      whole = error == std::errc() && end == text.data() + text.size();
    }
    if (!whole) {
      throw InputError(what + " must be " +
                       (p.kind == ParamKind::kInteger ? "a whole number" : "a number") +
                       (p.measured_from.empty() ? "" : " or measured") + ", got '" + text + "'");
    }
    if (!(value >= p.min && value <= p.max)) {
      throw InputError(what + " " + text + " is outside " + format_plain(p.min) + ".." +
                       format_plain(p.max));
    }
  }

  const GeneratorSpec& spec_;
  std::map<std::string, std::string> resolved_;
};

serving::KvLayout layout_for(const ModelFacts& model, const Params& p) {
  const std::string& type = p.text("kv_type");
  const gguf::GgmlType kv = type == "f32"   ? gguf::GgmlType::F32
                            : type == "f16" ? gguf::GgmlType::F16
                                            : gguf::GgmlType::Q8_0;
  // kv_bytes has no block size: bytes per token do not depend on it.
  const int64_t block_size = p.all().count("block_size") != 0 ? p.integer("block_size") : 16;
  serving::KvLayout layout = serving::kv_layout(model.config, kv, block_size);
  serving::validate(layout);  // e.g. q8_0 needs kv_dim in whole 32-element blocks
  return layout;
}

double as_double(uint64_t v) { return static_cast<double>(v); }

void kv_bytes(const ModelFacts& model, const Params& p, GeneratedAnswer& out) {
  const serving::KvLayout layout = layout_for(model, p);
  const uint64_t per_token = serving::kv_bytes_per_token(layout);
  out.calc["kv_dim"] = static_cast<double>(layout.kv_dim);
  out.calc["row_bytes"] = as_double(serving::kv_row_bytes(layout));
  out.calc["bytes_per_token"] = as_double(per_token);
  out.value = as_double(per_token * static_cast<uint64_t>(p.integer("tokens")));
}

void kv_allocated_bytes(const ModelFacts& model, const Params& p, GeneratedAnswer& out) {
  const serving::KvLayout layout = layout_for(model, p);
  const int64_t tokens = p.integer("tokens");
  const int64_t blocks = serving::blocks_for_tokens(tokens, layout.block_size);
  const uint64_t per_block = serving::kv_bytes_per_block(layout);
  out.calc["blocks"] = static_cast<double>(blocks);
  out.calc["bytes_per_block"] = as_double(per_block);
  out.calc["bytes_per_token"] = as_double(serving::kv_bytes_per_token(layout));
  out.calc["kv_bytes"] =
      as_double(serving::kv_bytes_per_token(layout) * static_cast<uint64_t>(tokens));
  out.value = as_double(per_block * static_cast<uint64_t>(blocks));
}

uint64_t weight_bytes_of(const ModelFacts& model, const std::string& type) {
  if (type == "loaded") return model.weight_bytes;
  return model.weight_bytes_by_type.at(type);
}

void weight_bytes(const ModelFacts& model, const Params& p, GeneratedAnswer& out) {
  out.calc["parameters"] = static_cast<double>(model.parameters);
  out.value = as_double(weight_bytes_of(model, p.text("type")));
}

void decode_floor_ms(const ModelFacts& model, const Params& p, GeneratedAnswer& out) {
  const uint64_t bytes = weight_bytes_of(model, p.text("type"));
  const double gbs = p.number("bandwidth_gbs");
  out.calc["weight_bytes"] = as_double(bytes);
  out.calc["bandwidth_gbs"] = gbs;
  out.value = as_double(bytes) / (gbs * 1e9) * 1000.0;
}

void max_batch(const ModelFacts& model, const Params& p, GeneratedAnswer& out) {
  const serving::KvLayout layout = layout_for(model, p);
  const uint64_t memory = static_cast<uint64_t>(p.integer("memory_mib")) * 1024 * 1024;
  const uint64_t per_request =
      static_cast<uint64_t>(serving::blocks_for_tokens(p.integer("context"), layout.block_size)) *
      serving::kv_bytes_per_block(layout);
  if (memory <= model.weight_bytes) {
    throw InputError("max_batch: memory_mib " + p.text("memory_mib") +
                     " MiB does not even hold the weights (" +
                     format_quantity(as_double(model.weight_bytes), "bytes") + ")");
  }
  out.calc["weight_bytes"] = as_double(model.weight_bytes);
  out.calc["memory_bytes"] = as_double(memory);
  out.calc["free_bytes"] = as_double(memory - model.weight_bytes);
  out.calc["per_request_bytes"] = as_double(per_request);
  out.value = as_double((memory - model.weight_bytes) / per_request);
}

using Formula = std::function<void(const ModelFacts&, const Params&, GeneratedAnswer&)>;

const Formula& formula_of(std::string_view name) {
  static const std::map<std::string_view, Formula> formulas = {
      {"kv_bytes", kv_bytes},         {"kv_allocated_bytes", kv_allocated_bytes},
      {"weight_bytes", weight_bytes}, {"decode_floor_ms", decode_floor_ms},
      {"max_batch", max_batch},
  };
  return formulas.at(name);
}

}  // namespace

namespace {

const GeneratorSpec& require_generator(const std::string& generator) {
  const GeneratorSpec* spec = find_generator(generator);
  if (spec == nullptr) {
    std::vector<std::string> names;
    for (const GeneratorSpec& g : generator_specs()) names.emplace_back(g.name);
    throw InputError("unknown generator '" + generator + "'; generators: " + one_of(names));
  }
  return *spec;
}

}  // namespace

void check_generator_params(const std::string& generator,
                            const std::map<std::string, std::string>& params) {
  const Params checked(require_generator(generator), params, nullptr);
}

GeneratedAnswer generate_answer(const std::string& generator,
                                const std::map<std::string, std::string>& params,
                                const ModelFacts& model, const Measurements& measured) {
  const GeneratorSpec* spec = &require_generator(generator);
  const Params resolved(*spec, params, &measured);
  GeneratedAnswer answer;
  answer.generator = generator;
  answer.unit = std::string(spec->unit);
  answer.params = resolved.all();
  formula_of(spec->name)(model, resolved, answer);
  return answer;
}

GeneratedAnswer generate_answer(const Question& question, const ModelFacts& model,
                                const Measurements& measured) {
  return generate_answer(question.generator, question.params, model, measured);
}

}  // namespace servescope::lessons
