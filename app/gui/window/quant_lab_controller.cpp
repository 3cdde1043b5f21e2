#include "app/gui/window/quant_lab_controller.h"

#include <QSettings>
#include <algorithm>
#include <cmath>
#include <limits>

#include "app/gui/engine_bridge/engine_client.h"
#include "widgets/quantisation_panel.h"

namespace servescope::gui {

namespace {

QString limit_text(double limit) {
  return std::isfinite(limit) ? QString::number(limit, 'g', 17) : QStringLiteral("off");
}

double limit_from(const QSettings& s, const QString& key, double fallback) {
  const QString text = s.value(key).toString();
  if (text == "off") return std::numeric_limits<double>::infinity();
  bool ok = false;
  const double value = text.toDouble(&ok);
  return ok && value >= 0.0 ? value : fallback;
}

}  // namespace

QuantLabController::QuantLabController(EngineClient& engine, widgets::QuantisationPanel& panel,
                                       std::function<QString()> prompt, QObject* parent)
    : QObject(parent), engine_(engine), prompt_(std::move(prompt)) {
  keep_offered_types();
  connect(&panel, &widgets::QuantisationPanel::compare_requested, this,
          &QuantLabController::compare);
  connect(&panel, &widgets::QuantisationPanel::cancel_requested, this, &QuantLabController::cancel);
  connect(&panel, &widgets::QuantisationPanel::limits_changed, this,
          [this](double max_kl, double max_tpot_ms, double min_speedup) {
            limits_ = {max_kl, max_tpot_ms, min_speedup};  // remembered with the settings
          });
  connect(&engine_, &EngineClient::quant_lab_ready, this, &QuantLabController::on_report);
  connect(&engine_, &EngineClient::quant_lab_progress, this, &QuantLabController::on_progress);
}

void QuantLabController::restore(const QSettings& s) {
  if (s.contains("quantisation/types")) types_ = s.value("quantisation/types").toStringList();
  keep_offered_types();
  const widgets::QuantLimits defaults = default_lab_limits();
  limits_.max_kl = limit_from(s, "quantisation/max_kl", defaults.max_kl);
  limits_.max_tpot_ms = limit_from(s, "quantisation/max_tpot_ms", defaults.max_tpot_ms);
  limits_.min_speedup = limit_from(s, "quantisation/min_speedup", defaults.min_speedup);
  if (!std::isfinite(limits_.min_speedup)) limits_.min_speedup = defaults.min_speedup;
}

void QuantLabController::save(QSettings& s) const {
  s.setValue("quantisation/types", types_);
  s.setValue("quantisation/max_kl", limit_text(limits_.max_kl));
  s.setValue("quantisation/max_tpot_ms", limit_text(limits_.max_tpot_ms));
  s.setValue("quantisation/min_speedup", limit_text(limits_.min_speedup));
}

// What the user chose last, of the types this build can still write; else the defaults.
void QuantLabController::keep_offered_types() {
  const std::vector<std::string> offered = lab_type_choices();
  QStringList chosen;
  for (const QString& type : types_) {
    if (std::find(offered.begin(), offered.end(), type.toStdString()) != offered.end()) {
      chosen << type;
    }
  }
  if (chosen.isEmpty()) {
    for (const std::string& type : default_lab_types()) chosen << QString::fromStdString(type);
  }
  types_ = chosen;
}

void QuantLabController::compare(const QStringList& types) {
  const std::optional<EngineInfo>& info = engine_.state().info;
  if (!info || info->random_weights || types.isEmpty()) return;
  pending_ = false;
  types_ = types;
  set_run({true, QStringLiteral("starting"), 0.0, QString()});
  engine_.start_quant_lab(prompt_(), types);
}

void QuantLabController::cancel() { engine_.cancel_quant_lab(); }

void QuantLabController::model_changed(bool random_weights) {
  cancel();  // the replaced model's comparison, if one runs
  report_.reset();
  set_run({});
  pending_ = !random_weights;
}

void QuantLabController::forget() {
  cancel();
  report_.reset();
  set_run({});
  pending_ = false;
}

void QuantLabController::panel_shown() {
  if (pending_) compare(types_);
}

void QuantLabController::on_report(const QuantLabReport& report) {
  const std::optional<EngineInfo>& info = engine_.state().info;
  if (!info || report.model_path != info->model_path.toStdString()) return;
  const int64_t serial = report_ ? report_->serial + 1 : 1;
  report_ = report_ ? with_last_comparison(report, *report_) : report;
  report_->serial = serial;
  ++revision_;
}

void QuantLabController::on_progress(bool running, const QString& stage, double fraction,
                                     const QString& outcome) {
  if (pending_) return;  // the replaced model's comparison winding down
  set_run({running, stage, fraction, outcome});
}

void QuantLabController::set_run(const widgets::QuantRunState& run) {
  run_ = run;
  ++revision_;
}

}  // namespace servescope::gui
