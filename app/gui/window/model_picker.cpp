#include "app/gui/window/app_settings.h"
#include "app/gui/window/model_picker.h"

#include <QFileInfo>
#include <QSettings>
#include <QStandardItemModel>
#include <algorithm>

#include "app/cli/commands.h"
#include "app/gui/window/window_text.h"

namespace servescope::gui {

ModelPicker::ModelPicker(std::vector<TimingModel> timing_models, QString timing_folder,
                         int64_t bundled_vocab, bool remember_recent, QWidget* parent)
    : QComboBox(parent),
      timing_models_(std::move(timing_models)),
      timing_folder_(std::move(timing_folder)),
      bundled_vocab_(bundled_vocab),
      remember_recent_(remember_recent),
      entries_(new QStandardItemModel(this)) {
  setObjectName("model-picker");
  setModel(entries_);
  setMinimumContentsLength(18);
  setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  setPlaceholderText(tr("no model loaded"));
  setToolTip(
      tr("The GGUF model the engine runs: the bundled one, a recent file or a "
         "random-weight timing model (Open... beside it for any other)"));
  setAccessibleName(tr("Model"));
  connect(this, &QComboBox::activated, this, &ModelPicker::on_activated);
}

QStringList ModelPicker::recent() const {
  return remember_recent_ ? app_settings().value("models/recent").toStringList() : QStringList();
}

void ModelPicker::remember(const QString& path) {
  if (!remember_recent_) return;
  QStringList list = recent();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecent) list.removeLast();
  app_settings().setValue("models/recent", list);
}

void ModelPicker::show_loaded(const QString& loaded) {
  loaded_ = loaded;
  const QString bundled = QString::fromStdString(cli::default_model_path());
  const auto is_timing = [&](const QString& p) {
    return std::any_of(timing_models_.begin(), timing_models_.end(), [&](const TimingModel& m) {
      return timing_model_path(timing_folder_, m) == p;
    });
  };
  QStringList paths = {bundled};
  for (const QString& p : recent()) {
    if (!paths.contains(p) && !is_timing(p) && QFileInfo::exists(p)) paths.append(p);
  }
  if (!loaded.isEmpty() && !paths.contains(loaded) && !is_timing(loaded)) paths.append(loaded);
  clear();
  for (const QString& p : paths) {
    const QString name = QFileInfo(p).fileName();
    addItem(p == bundled ? tr("%1 (bundled)").arg(name) : name, p);
    setItemData(count() - 1, p, Qt::ToolTipRole);
  }
  add_timing_entries();
  setCurrentIndex(loaded.isEmpty() ? -1 : findData(loaded));  // the placeholder when none
}

void ModelPicker::add_timing_entries() {
  insertSeparator(count());
  auto* heading = new QStandardItem(QString(kTimingGroup));
  heading->setEnabled(false);  // a heading, not a model
  const QString tooltip = timing_tooltip(timing_folder_);
  heading->setToolTip(tooltip);
  entries_->appendRow(heading);
  for (size_t i = 0; i < timing_models_.size(); ++i) {
    addItem("  " + timing_model_title(timing_models_[i], bundled_vocab_),
            timing_model_path(timing_folder_, timing_models_[i]));
    setItemData(count() - 1, static_cast<uint>(i), kTimingIndexRole);
    setItemData(count() - 1, tooltip, Qt::ToolTipRole);
  }
}

void ModelPicker::on_activated(int row) {
  const QString path = itemData(row).toString();
  if (path.isEmpty() || path == loaded_) return;
  const QVariant timing = itemData(row, kTimingIndexRole);
  if (timing.isValid()) {
    Q_EMIT timing_model_chosen(timing_models_.at(timing.toUInt()));
  } else {
    Q_EMIT model_chosen(path);
  }
}

}  // namespace servescope::gui
