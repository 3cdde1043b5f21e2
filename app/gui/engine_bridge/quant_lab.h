// The quantisation lab behind the Quantisation panel, run on its own thread (on the CPU
// backend, so the engine's device is left to the engine): one block of the weights as each
// block type stores it, the error of one tensor and of every layer when the weights are stored
// as Q4_0, the KV cache's error as Q8_0 after the prompt, the prompt continued greedily by the
// model as loaded and by its Q4_0 variant, and quant-report's comparison of the chosen weight
// types (quality, speed, latency and cost under its fixed load, with its verdict).
#pragma once

#include <QMetaType>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "engine/eval/quant_report.h"
#include "engine/eval/tensor_error.h"
#include "engine/tokenizer/tokenizer.h"
#include "widgets/quantisation_snapshot.h"

namespace servescope::gui {

struct KvLayerSqnr {
  int64_t layer = 0;
  double sqnr_db = 0.0;  // keys and values together
  // The F32 cache's keys and values rounded to the type: this layer's own rounding, without
  // what earlier layers' rounded caches passed on (equal to sqnr_db in the first layer).
  double rounding_only_sqnr_db = 0.0;
};

struct QuantLabReport {
  std::string model_path;
  std::string prompt;
  bool complete = false;     // false: the quick parts alone, the comparison is still running
  int64_t serial = 0;        // set by the window on arrival: a new number for each report
  eval::TensorError tensor;  // of weight_type
  std::string weight_type = "q4_0";
  std::vector<eval::LayerError> weight_layers;
  std::string kv_type = "q8_0";
  std::vector<KvLayerSqnr> kv_layers;
  std::vector<widgets::QuantBlockSnapshot> blocks;  // one block of the weights per block type
  std::vector<std::string> types;    // the weight types compared against F32 ("q8_0")
  eval::QuantReportOptions options;  // the comparison's (its load; limits are the user's)
  std::string load;                  // that load in words
  eval::QuantReport report;
  std::vector<int32_t> baseline_ids;  // the prompt continued by the model as loaded
  std::vector<int32_t> variant_ids;   // and by its weight_type variant
  std::vector<std::string> problems;  // parts that could not be measured, and why
};

// How a caller follows and stops a run: the quick parts as soon as they are measured, the
// comparison's progress, and a flag that stops it (run_quant_lab then throws
// eval::ReportCancelled).
struct QuantLabControl {
  std::function<void(const QuantLabReport&)> on_quick_parts;
  eval::ReportProgressCallback on_stage;
  const std::atomic<bool>* cancel = nullptr;
};

// The weight types the lab can compare against F32 (quant-report's targets), and the ones it
// compares unless the user chose others.
std::vector<std::string> lab_type_choices();
std::vector<std::string> default_lab_types();
// The limits the lab starts from (a learner moves them): KL alone, as quant-report's examples.
widgets::QuantLimits default_lab_limits();

// text: the evaluation text (tokenised without BOS); prompt: continued by both models;
// types: weight type labels to compare (InputError for one quant-report cannot write).
QuantLabReport run_quant_lab(const std::string& model_path, const Tokenizer& tokenizer,
                             const std::string& prompt, const std::string& text,
                             const std::vector<std::string>& types,
                             const QuantLabControl& control = {});

// A new run's quick parts arrive long before its comparison: until that is complete the last
// comparison (its table, load and verdicts) stays on show, as the lab's Cancel promises.
// Returns `quick` with `last`'s comparison where `quick` has none of its own.
QuantLabReport with_last_comparison(QuantLabReport quick, const QuantLabReport& last);

}  // namespace servescope::gui

Q_DECLARE_METATYPE(servescope::gui::QuantLabReport)
