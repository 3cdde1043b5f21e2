// The words a lesson file may use: actions (what a step runs in the window, with their typed
// arguments), measures (what the window has measured, shown in `observe` and filled into
// text), panels and their highlight elements, model placeholders and question generators.
// The loader and validator check lessons against these lists; the window implements every
// entry (its test walks these lists). lessons/README.md documents them for authors.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace servescope::lessons {

// How an action's argument (or one field of it) is written and checked.
enum class ArgKind {
  kChoice,      // one of `allowed`
  kInteger,     // a whole number in [min, max]
  kBool,        // true / false
  kText,        // any non-empty text
  kChoiceList,  // a non-empty list, each item one of `allowed`
  kFields,      // a mapping of named fields (ActionSpec::fields); `{}` when none are needed
};

struct FieldSpec {
  std::string_view name;
  ArgKind kind = ArgKind::kInteger;
  std::vector<std::string> allowed;  // kChoice, kChoiceList
  int64_t min = 0;                   // kInteger
  int64_t max = 0;
  bool required = false;
  std::string_view help;
};

struct ActionSpec {
  std::string_view name;
  ArgKind kind = ArgKind::kText;
  std::vector<std::string> allowed;  // kChoice
  int64_t min = 0;                   // kInteger
  int64_t max = 0;
  std::vector<FieldSpec> fields;  // kFields
  std::string_view example;       // as written in a lesson file
  std::string_view help;          // what the window does
};

// load_model, set_backend, set_kv_type, set_classmates, set_batching, set_batch_wait,
// set_activations, set_greedy, set_prompt, set_max_tokens, generate, decode_steps, batch_sweep,
// staggered_load, size_sweep, quant_compare, select_variant, keep, open_panel, highlight.
std::span<const ActionSpec> action_specs();
const ActionSpec* find_action(std::string_view name);
const FieldSpec* find_field(const ActionSpec& action, std::string_view field);

// "bundled" and "timing:<preset>" for each random-weight timing model (25M, 100M, 400M, 1B).
std::vector<std::string> model_choices();
// The timing models' preset names: 25M, 100M, 400M, 1B.
std::vector<std::string> timing_model_sizes();

struct MeasureSpec {
  std::string_view name;
  std::string_view unit;  // bytes, tokens, ms, tokens/s, GB/s, GFLOP/s, x
  std::string_view help;
};

std::span<const MeasureSpec> measure_specs();
const MeasureSpec* find_measure(std::string_view name);

// phases, kv, batching, quantisation, roofline, attention (the window's panel keys).
std::span<const std::string_view> panel_names();
// The elements of a panel a step may highlight; empty for an unknown panel.
std::span<const std::string_view> highlight_elements(std::string_view panel);

struct PlaceholderSpec {
  std::string_view name;  // after "model.": {{model.layers}}
  std::string_view help;
};

// name, layers, heads, kv_heads, head_dim, dim, vocab, context, weight_bytes, weight_type.
std::span<const PlaceholderSpec> model_placeholders();
bool is_model_placeholder(std::string_view name);

enum class ParamKind {
  kInteger,  // a whole number in [min, max]
  kNumber,   // a positive number in [min, max]
  kChoice,   // one of `allowed`
};

struct ParamSpec {
  std::string_view name;
  ParamKind kind = ParamKind::kInteger;
  std::vector<std::string> allowed;
  double min = 0;
  double max = 0;
  bool required = true;
  std::string_view default_value;  // when not required
  // kNumber only: a measure name that may stand in for the number ("measured" in the file),
  // e.g. decode_floor_ms's bandwidth_gbs: measured -> the roof for the weights' working set.
  std::string_view measured_from;
  std::string_view help;
};

struct GeneratorSpec {
  std::string_view name;
  std::vector<ParamSpec> params;
  std::string_view unit;                 // of the answer
  std::vector<std::string_view> values;  // the intermediate values it offers as {{calc.*}}
  std::string_view formula;              // the engine's formula, in words
};

// kv_bytes, kv_allocated_bytes, weight_bytes, decode_floor_ms, max_batch.
std::span<const GeneratorSpec> generator_specs();
const GeneratorSpec* find_generator(std::string_view name);
const ParamSpec* find_param(const GeneratorSpec& generator, std::string_view name);

// The KV cache element types (f32, f16, q8_0) and weight types (f32, f16, q8_0, q4_0).
std::vector<std::string> kv_type_names();
std::vector<std::string> weight_type_names();

// "a, b or c": for messages listing what is allowed.
std::string one_of(std::span<const std::string> allowed);
std::string one_of(std::span<const std::string_view> allowed);

}  // namespace servescope::lessons
