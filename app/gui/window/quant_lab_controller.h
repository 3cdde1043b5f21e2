// The quantisation lab as the window runs it: the weight types compared and the learner's
// accept-only-if limits (both remembered with the settings), the last report and how the run
// stands, and a revision the frame pump compares. A trained model's first comparison waits
// until the Quantisation panel is first shown: run at load, it would compete for the cores
// with the generation being timed. A random-weight model gets none (its variants compare
// noise).
#pragma once

#include <QObject>
#include <QStringList>
#include <cstdint>
#include <functional>
#include <optional>

#include "app/gui/engine_bridge/quant_lab.h"
#include "widgets/quantisation_snapshot.h"

class QSettings;

namespace servescope::widgets {
class QuantisationPanel;
}

namespace servescope::gui {

class EngineClient;

class QuantLabController : public QObject {
  Q_OBJECT

 public:
  // prompt: the text a comparison continues (the window's prompt when it starts).
  QuantLabController(EngineClient& engine, widgets::QuantisationPanel& panel,
                     std::function<QString()> prompt, QObject* parent);

  const std::optional<QuantLabReport>& report() const { return report_; }
  const widgets::QuantRunState& run() const { return run_; }
  const QStringList& types() const { return types_; }
  const widgets::QuantLimits& limits() const { return limits_; }
  // Counts changes to the report and the run.
  uint64_t revision() const { return revision_; }

  void restore(const QSettings& settings);
  void save(QSettings& settings) const;

  // Compares `types` with F32 on the model serving now (a trained one).
  void compare(const QStringList& types);
  void cancel();
  // A new model serves: the last one's comparison ends and its report goes.
  void model_changed(bool random_weights);
  // No model serves.
  void forget();
  // The Quantisation panel is on screen: a waiting first comparison starts.
  void panel_shown();

 private:
  void keep_offered_types();
  void on_report(const QuantLabReport& report);
  void on_progress(bool running, const QString& stage, double fraction, const QString& outcome);
  void set_run(const widgets::QuantRunState& run);

  EngineClient& engine_;
  std::function<QString()> prompt_;
  std::optional<QuantLabReport> report_;
  widgets::QuantRunState run_;
  QStringList types_;
  widgets::QuantLimits limits_ = default_lab_limits();
  bool pending_ = false;  // a first comparison waits for the panel
  uint64_t revision_ = 0;
};

}  // namespace servescope::gui
