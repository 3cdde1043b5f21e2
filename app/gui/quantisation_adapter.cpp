// Quantisation panel: the quantisation lab's report for the loaded model.
#include "app/gui/panel_adapter.h"
#include "app/gui/token_display.h"
#include "widgets/quantisation_panel.h"

namespace servescope::gui {
namespace {

QString text(const std::string& s) { return QString::fromStdString(s); }

widgets::QuantVariantRow variant_row(const eval::VariantReport& v, bool baseline,
                                     const eval::QuantReportOptions& timing) {
  widgets::QuantVariantRow row;
  row.weight_type = text(v.type);
  row.kv_type = text(v.kv_type);
  row.baseline = baseline;
  row.memory_mb = static_cast<double>(v.memory_bytes) / 1e6;
  row.prefill_tokens_per_s = v.prefill_tokens_per_s;
  row.decode_tokens_per_s = v.decode_tokens_per_s;
  // One request of the timing run's shape, end to end: its prefill, then its decode tokens.
  if (v.prefill_tokens_per_s > 0.0 && v.decode_tokens_per_s > 0.0) {
    row.latency_ms =
        1000.0 * (static_cast<double>(timing.timing_prompt_tokens) / v.prefill_tokens_per_s +
                  static_cast<double>(timing.timing_decode_tokens) / v.decode_tokens_per_s);
  }
  row.cost_per_request = row.latency_ms;  // device time the request occupies, alone
  row.perplexity = v.quality.perplexity;
  row.mean_kl = v.quality.vs_baseline.mean_kl;
  row.top1_agreement = v.quality.vs_baseline.top1_agreement;
  return row;
}

widgets::TokenContinuation continuation(const QString& label, const std::vector<int32_t>& ids,
                                        const Tokenizer& tokenizer) {
  widgets::TokenContinuation c;
  c.label = label;
  c.ids = ids;
  for (const int32_t id : ids) c.pieces.push_back(token_display_text(tokenizer, id));
  return c;
}

widgets::QuantisationSnapshot snapshot_of(const QuantLabReport& lab, const Tokenizer& tokenizer) {
  widgets::QuantisationSnapshot s;
  const eval::TensorError& t = lab.tensor;
  s.tensor_error = {text(t.name), text(lab.weight_type), t.histogram.edges, t.histogram.counts,
                    t.rmse,       t.max_abs_error,       t.sqnr_db};
  s.sqnr_variant = text(lab.weight_type + " weights, " + lab.kv_type + " KV cache");
  for (const eval::LayerError& layer : lab.weight_layers) {
    s.weight_sqnr.push_back({text(layer.layer), layer.sqnr_db});
  }
  for (const KvLayerSqnr& layer : lab.kv_layers) {
    s.kv_sqnr.push_back({QString("blk.%1").arg(layer.layer), layer.sqnr_db});
  }
  const eval::QuantReportOptions timing;  // the lab's timing shape is the report's default
  if (!lab.report.baseline.type.empty()) {
    s.variants.push_back(variant_row(lab.report.baseline, true, timing));
    for (const eval::VariantReport& v : lab.report.variants) {
      s.variants.push_back(variant_row(v, false, timing));
    }
  }
  s.cost_unit = "device ms";
  s.prompt = text(lab.prompt);
  s.baseline_continuation = continuation("as loaded", lab.baseline_ids, tokenizer);
  s.variant_continuation =
      continuation(text(lab.weight_type + " weights"), lab.variant_ids, tokenizer);
  return s;
}

class QuantisationAdapter final : public PanelAdapter {
 public:
  explicit QuantisationAdapter(QWidget* parent) : panel_(new widgets::QuantisationPanel(parent)) {}
  widgets::PanelView* view() const override { return panel_; }
  bool has_data() const override { return !panel_->snapshot().variants.empty(); }

  void refresh(const PanelFeed& feed) override {
    if (feed.quant_lab == nullptr || !feed.info.tokenizer) {
      panel_->set_snapshot({});
      return;
    }
    panel_->set_snapshot(snapshot_of(*feed.quant_lab, *feed.info.tokenizer));
  }

 private:
  widgets::QuantisationPanel* panel_;
};

}  // namespace

std::unique_ptr<PanelAdapter> make_quantisation_adapter(QWidget* parent) {
  return std::make_unique<QuantisationAdapter>(parent);
}

}  // namespace servescope::gui
