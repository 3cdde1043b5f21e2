// The window's remembered controls as one table: each row a QSettings key, the control whose
// value it is and the value a first run starts from. Defaults, restoring and saving all read
// the same rows, so a key, a control and its default are written once.
#pragma once

#include <QVariant>
#include <vector>

class QSettings;
class QWidget;

namespace servescope::gui {

class SettingsTable {
 public:
  // widget: a QSpinBox, QDoubleSpinBox, QCheckBox or QComboBox (its value is the current
  // item's data).
  void add(const char* key, QWidget* widget, const QVariant& default_value);

  // Every control to its default, as a first run sees it.
  void apply_defaults() const;
  // Every control to its remembered value (the default where none is remembered; a value a
  // control cannot take leaves it as it is, a spin box clamps it).
  void restore(const QSettings& settings) const;
  void save(QSettings& settings) const;

 private:
  struct Row {
    const char* key;
    QWidget* widget;
    QVariant default_value;
  };
  std::vector<Row> rows_;
};

}  // namespace servescope::gui
