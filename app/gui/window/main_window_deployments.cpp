// View > Here and there: the window of its own, with this machine's row from the roofs the
// loaded engine was measured against.
#include <QStandardPaths>

#include "app/common/deployments_file.h"
#include "app/gui/deployments/deployments_window.h"
#include "app/gui/window/main_window.h"

namespace servescope::gui {

void MainWindow::show_deployments() {
  if (deployments_ == nullptr) {
    const std::filesystem::path user_file =
        QStandardPaths::writableLocation(QStandardPaths::AppDataLocation).toStdString() +
        "/deployments.json";
    deployments_ = new DeploymentsWindow(app::bundled_deployments_path(), user_file, this);
  }
  const std::optional<EngineInfo>& info = engine_info();
  deployments_->set_this_machine(
      info ? this_machine(info->roofs.memory_gb_per_s, info->roofs.compute_gflop_per_s)
           : std::nullopt);
  deployments_->show();
  deployments_->raise();
  deployments_->activateWindow();
}

}  // namespace servescope::gui
