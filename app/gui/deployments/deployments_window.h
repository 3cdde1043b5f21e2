// View > Here and there: the engine's formulas (serving/deployment.h) applied to a published
// model shape on datasheet devices and on this machine as its probe measured it, as a table
// and a chart. Every figure but this machine's roofs is computed, and says so. The user's own
// devices and shapes are kept in a file of their own (AppDataLocation/deployments.json).
#pragma once

#include <QDialog>
#include <filesystem>
#include <optional>

#include "app/common/deployments_file.h"
#include "app/gui/deployments/deployment_table.h"

class QComboBox;
class QLabel;
class QSpinBox;
class QTableView;

namespace servescope::gui {

class DeploymentChart;

class DeploymentsWindow : public QDialog {
  Q_OBJECT

 public:
  // `shipped`: the bundled data file; `user_file`: where what the user adds is kept.
  DeploymentsWindow(std::filesystem::path shipped, std::filesystem::path user_file,
                    QWidget* parent = nullptr);

  // This machine's row, from its probe (none: not measured yet, the row is left out).
  void set_this_machine(std::optional<serving::DeviceSpec> device);
  // Chooses the model (by index), the weights' and the cache's number formats and the context.
  void choose(int model, gguf::GgmlType weights, gguf::GgmlType kv_type, int context_tokens);

  const DeploymentTableModel& table() const { return *table_; }
  const app::DeploymentData& data() const { return data_; }
  QString summary() const;
  QString problem() const;  // what could not be read, or empty

  // Adds an entry to the user's file (refused, false, with problem() saying why, when the file's
  // own checks refuse it) and shows it.
  bool add_device(const serving::DeviceSpec& device);
  bool add_model(const app::PublishedModel& model);

 private:
  void load();
  void fill_model_picker();
  void recompute();
  bool save_user_entries(const app::DeploymentData& user);

  std::filesystem::path shipped_path_;
  std::filesystem::path user_path_;
  app::DeploymentData data_;  // shipped, then the user's
  app::DeploymentData user_;
  std::optional<serving::DeviceSpec> this_machine_;
  QComboBox* model_picker_;
  QComboBox* weight_picker_;
  QComboBox* kv_picker_;
  QSpinBox* context_;
  QLabel* summary_;
  QLabel* problem_;
  DeploymentTableModel* table_;
  QTableView* view_;
  DeploymentChart* chart_;
};

// This machine as its probe measured it: memory bandwidth and the matrix-product rate of the
// loaded model's weights (compute::StepRoofs), and the memory the operating system reports.
// None while either roof is unmeasured.
std::optional<serving::DeviceSpec> this_machine(double memory_gb_per_s, double compute_gflop_per_s);

}  // namespace servescope::gui
