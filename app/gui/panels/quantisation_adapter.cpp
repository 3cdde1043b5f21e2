// Quantisation panel: the quantisation lab's report for the loaded model. Latency and cost are
// quant-report's own, measured under its fixed load; verdicts are quant-report's rule
// (eval::judge) applied to the user's limits.
#include <QCoreApplication>
#include <limits>
#include <memory>

#include "app/gui/panels/panel_adapter.h"
#include "app/gui/window/token_display.h"
#include "widgets/quantisation_panel.h"

namespace servescope::gui {
namespace {

QString text(const std::string& s) { return QString::fromStdString(s); }

widgets::QuantVariantRow variant_row(const eval::VariantReport& v, bool baseline) {
  widgets::QuantVariantRow row;
  row.weight_type = text(v.type);
  row.kv_type = text(v.kv_type);
  row.baseline = baseline;
  row.weight_bytes = static_cast<double>(v.weight_bytes);
  row.bits_per_weight = v.bits_per_weight;
  row.memory_bytes = static_cast<double>(v.memory_bytes);
  row.prefill_tokens_per_s = v.prefill_tokens_per_s;
  row.decode_tokens_per_s = v.decode_tokens_per_s;
  row.ttft_p50_ms = v.load.ttft_ms.p50;
  row.ttft_p99_ms = v.load.ttft_ms.p99;
  row.tpot_p50_ms = v.load.tpot_ms.p50;
  row.tpot_p99_ms = v.load.tpot_ms.p99;
  row.cost_per_request = 1000.0 * v.cost.device_seconds_per_request;
  row.perplexity = v.quality.perplexity;
  row.mean_kl = v.quality.vs_baseline.mean_kl;
  row.top1_agreement = v.quality.vs_baseline.top1_agreement;
  return row;
}

// quant-report's verdict for a row (0: the baseline, then the variants) under the user's
// limits.
widgets::QuantJudge report_judge(const eval::QuantReport& report) {
  return [report = std::make_shared<const eval::QuantReport>(report)](
             int row, const widgets::QuantLimits& limits) {
    widgets::QuantVerdict out;
    if (row < 1 || static_cast<size_t>(row) > report->variants.size()) return out;
    eval::QuantReportOptions options;
    options.max_kl = limits.max_kl;
    options.max_tpot_ms = limits.max_tpot_ms;
    options.min_speedup = limits.min_speedup;
    const eval::Verdict verdict =
        eval::judge(report->variants[static_cast<size_t>(row - 1)], report->baseline, options);
    out.accepted = verdict.accepted;
    for (const std::string& reason : verdict.reasons) out.reasons << text(reason);
    return out;
  };
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
  s.sqnr_variant = QCoreApplication::translate("Panels", "%1 weights, %2 KV cache")
                       .arg(text(lab.weight_type), text(lab.kv_type));
  for (const eval::LayerError& layer : lab.weight_layers) {
    s.weight_sqnr.push_back({text(layer.layer), layer.sqnr_db});
  }
  for (const KvLayerSqnr& layer : lab.kv_layers) {
    s.kv_sqnr.push_back({QString("blk.%1").arg(layer.layer), layer.sqnr_db});
  }
  if (!lab.report.baseline.type.empty()) {
    s.variants.push_back(variant_row(lab.report.baseline, true));
    for (const eval::VariantReport& v : lab.report.variants) {
      s.variants.push_back(variant_row(v, false));
    }
    s.judge = report_judge(lab.report);
  }
  s.cost_unit = QCoreApplication::translate("Panels", "device ms");
  s.load = text(lab.load);
  s.blocks = lab.blocks;
  s.prompt = text(lab.prompt);
  s.baseline_continuation =
      continuation(QCoreApplication::translate("Panels", "as loaded"), lab.baseline_ids, tokenizer);
  s.variant_continuation =
      continuation(QCoreApplication::translate("Panels", "%1 weights").arg(text(lab.weight_type)),
                   lab.variant_ids, tokenizer);
  return s;
}

class QuantisationAdapter final : public PanelAdapter {
 public:
  explicit QuantisationAdapter(QWidget* parent) : panel_(new widgets::QuantisationPanel(parent)) {}
  widgets::PanelView* view() const override { return panel_; }
  bool has_data() const override {
    return !panel_->snapshot().variants.empty() || !panel_->snapshot().blocks.empty();
  }

  void refresh(const PanelFeed& feed) override {
    const widgets::QuantRunState run = feed.quant_run ? *feed.quant_run : widgets::QuantRunState{};
    const int64_t serial = feed.quant_lab ? feed.quant_lab->serial : 0;
    if (serial == shown_serial_ && feed.quant_types == shown_types_ && serial != 0) {
      panel_->set_run_state(run);  // the results shown stay: only the run moved on
      return;
    }
    widgets::QuantisationSnapshot s;
    if (feed.quant_lab != nullptr && feed.info.tokenizer) {
      s = snapshot_of(*feed.quant_lab, *feed.info.tokenizer);
    }
    for (const std::string& type : lab_type_choices()) s.type_choices << text(type);
    s.chosen_types = feed.quant_types;
    s.run = run;
    s.limits = feed.quant_limits ? *feed.quant_limits : default_lab_limits();
    panel_->set_snapshot(std::move(s));
    shown_serial_ = serial;
    shown_types_ = feed.quant_types;
  }

 private:
  widgets::QuantisationPanel* panel_;
  int64_t shown_serial_ = 0;
  QStringList shown_types_;
};

}  // namespace

std::unique_ptr<PanelAdapter> make_quantisation_adapter(QWidget* parent) {
  return std::make_unique<QuantisationAdapter>(parent);
}

}  // namespace servescope::gui
