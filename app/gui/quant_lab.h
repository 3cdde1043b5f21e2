// The quantisation lab behind the Quantisation panel, run on its own thread after a model is
// loaded (on the CPU backend, so the engine's device is left to the engine): the error of one
// tensor and of every layer when the weights are stored as Q4_0, the KV cache's error as Q8_0
// after the prompt, the quant-report of every weight type on a short text, and the prompt
// continued greedily by the model as loaded and by its Q4_0 variant.
#pragma once

#include <QMetaType>
#include <string>
#include <vector>

#include "engine/eval/quant_report.h"
#include "engine/eval/tensor_error.h"
#include "engine/tokenizer/tokenizer.h"

namespace servescope::gui {

struct KvLayerSqnr {
  int64_t layer = 0;
  double sqnr_db = 0.0;  // keys and values together
};

struct QuantLabReport {
  std::string model_path;
  std::string prompt;
  eval::TensorError tensor;  // of weight_type
  std::string weight_type = "q4_0";
  std::vector<eval::LayerError> weight_layers;
  std::string kv_type = "q8_0";
  std::vector<KvLayerSqnr> kv_layers;
  eval::QuantReport report;
  std::vector<int32_t> baseline_ids;  // the prompt continued by the model as loaded
  std::vector<int32_t> variant_ids;   // and by its weight_type variant
  std::vector<std::string> problems;  // parts that could not be measured, and why
};

// text: the evaluation text (tokenised without BOS); prompt: continued by both models.
QuantLabReport run_quant_lab(const std::string& model_path, const Tokenizer& tokenizer,
                             const std::string& prompt, const std::string& text);

}  // namespace servescope::gui

Q_DECLARE_METATYPE(servescope::gui::QuantLabReport)
