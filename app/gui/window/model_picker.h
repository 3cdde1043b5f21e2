// The toolbar's model picker: the bundled model, the recent files (remembered in QSettings
// when the window remembers settings), the model loaded now, and the random-weight timing
// models under a heading that cannot be chosen. Choosing an entry says which model; opening
// any other GGUF is the window's Open action (a button beside the picker and File > Open),
// not an entry of the list.
#pragma once

#include <QComboBox>
#include <QString>
#include <vector>

#include "app/gui/engine_bridge/timing_models.h"

class QStandardItemModel;

namespace servescope::gui {

class ModelPicker : public QComboBox {
  Q_OBJECT

 public:
  // timing_folder: where the timing models are written; bundled_vocab: the bundled model's
  // vocabulary, for the timing models' sizes (0: unknown).
  ModelPicker(std::vector<TimingModel> timing_models, QString timing_folder, int64_t bundled_vocab,
              bool remember_recent, QWidget* parent = nullptr);

  // Lists the entries again with `loaded` chosen (none chosen when empty: nothing loaded).
  void show_loaded(const QString& loaded);
  // Puts `path` first among the recent files (a no-op when settings are not remembered).
  void remember(const QString& path);
  const std::vector<TimingModel>& timing_models() const { return timing_models_; }

 Q_SIGNALS:
  void model_chosen(const QString& path);
  void timing_model_chosen(const servescope::gui::TimingModel& model);

 private:
  static constexpr int kMaxRecent = 6;
  static constexpr int kTimingIndexRole = Qt::UserRole + 1;  // an entry's timing model

  QStringList recent() const;
  void add_timing_entries();
  void on_activated(int row);

  std::vector<TimingModel> timing_models_;
  QString timing_folder_;
  int64_t bundled_vocab_;
  bool remember_recent_;
  QStandardItemModel* entries_;
  QString loaded_;
};

}  // namespace servescope::gui
