#include "app/gui/window/settings_table.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSettings>
#include <QSpinBox>

namespace servescope::gui {

namespace {

void set_value(QWidget* widget, const QVariant& value) {
  if (auto* box = qobject_cast<QSpinBox*>(widget)) {
    box->setValue(value.toInt());
  } else if (auto* real = qobject_cast<QDoubleSpinBox*>(widget)) {
    real->setValue(value.toDouble());
  } else if (auto* check = qobject_cast<QCheckBox*>(widget)) {
    check->setChecked(value.toBool());
  } else if (auto* combo = qobject_cast<QComboBox*>(widget)) {
    // Compared as the item's data type: a remembered "1" finds the item whose data is 1.
    for (int row = 0; row < combo->count(); ++row) {
      QVariant item = combo->itemData(row);
      QVariant wanted = value;
      if (wanted.convert(item.metaType()) && wanted == item) {
        combo->setCurrentIndex(row);
        return;
      }
    }
  }
}

QVariant value_of(const QWidget* widget) {
  if (auto* box = qobject_cast<const QSpinBox*>(widget)) return box->value();
  if (auto* real = qobject_cast<const QDoubleSpinBox*>(widget)) return real->value();
  if (auto* check = qobject_cast<const QCheckBox*>(widget)) return check->isChecked();
  if (auto* combo = qobject_cast<const QComboBox*>(widget)) return combo->currentData();
  return {};
}

}  // namespace

void SettingsTable::add(const char* key, QWidget* widget, const QVariant& default_value) {
  rows_.push_back({key, widget, default_value});
}

void SettingsTable::apply_defaults() const {
  for (const Row& row : rows_) set_value(row.widget, row.default_value);
}

void SettingsTable::restore(const QSettings& settings) const {
  for (const Row& row : rows_) set_value(row.widget, settings.value(row.key, row.default_value));
}

void SettingsTable::save(QSettings& settings) const {
  for (const Row& row : rows_) settings.setValue(row.key, value_of(row.widget));
}

}  // namespace servescope::gui
