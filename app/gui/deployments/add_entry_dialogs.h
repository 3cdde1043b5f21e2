// The forms behind "Add device..." and "Add model shape...": what the user types becomes an
// entry of their own deployments file (app/common/deployments_file.h).
#pragma once

#include <optional>

#include "app/common/deployments_file.h"

class QWidget;

namespace servescope::gui {

// None when the user cancels.
std::optional<serving::DeviceSpec> ask_for_device(QWidget* parent);
std::optional<app::PublishedModel> ask_for_model_shape(QWidget* parent);

}  // namespace servescope::gui
