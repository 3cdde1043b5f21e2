// The window's remembered controls (SettingsTable): a first run's defaults, values written and
// read back through a settings file, and what a control cannot take.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>

#include "app/gui/window/settings_table.h"
#include "tests/app/gui_test_support.h"

namespace servescope::gui {
namespace {

struct Controls {
  QSpinBox count;
  QDoubleSpinBox ratio;
  QCheckBox flag;
  QComboBox choice;
  SettingsTable table;

  Controls() {
    count.setRange(0, 32);
    ratio.setRange(0.0, 1.0);
    for (const int id : {3, 7, 11}) choice.addItem(QString::number(id), id);
    table.add("group/count", &count, 4);
    table.add("group/ratio", &ratio, 0.25);
    table.add("group/flag", &flag, true);
    table.add("group/choice", &choice, 7);
  }
};

TEST(SettingsTable, AFirstRunStartsFromEachRowsDefault) {
  testing::app();
  Controls c;
  c.table.apply_defaults();
  EXPECT_EQ(c.count.value(), 4);
  EXPECT_DOUBLE_EQ(c.ratio.value(), 0.25);
  EXPECT_TRUE(c.flag.isChecked());
  EXPECT_EQ(c.choice.currentData().toInt(), 7);
}

TEST(SettingsTable, WhatIsSavedIsWhatTheNextRunRestores) {
  testing::app();
  QTemporaryDir dir;
  const QString file = dir.filePath("settings.ini");
  {
    Controls c;
    c.count.setValue(9);
    c.ratio.setValue(0.5);
    c.flag.setChecked(false);
    c.choice.setCurrentIndex(2);
    QSettings s(file, QSettings::IniFormat);
    c.table.save(s);
  }
  Controls next;
  next.table.apply_defaults();
  next.table.restore(QSettings(file, QSettings::IniFormat));
  EXPECT_EQ(next.count.value(), 9);
  EXPECT_DOUBLE_EQ(next.ratio.value(), 0.5);
  EXPECT_FALSE(next.flag.isChecked());
  EXPECT_EQ(next.choice.currentData().toInt(), 11);
}

TEST(SettingsTable, AValueAControlCannotTakeIsClampedOrLeftAsItWas) {
  testing::app();
  QTemporaryDir dir;
  QSettings s(dir.filePath("settings.ini"), QSettings::IniFormat);
  s.setValue("group/count", 1000);  // above the box's range
  s.setValue("group/choice", 5);    // no such item
  Controls c;
  c.table.apply_defaults();
  c.table.restore(s);
  EXPECT_EQ(c.count.value(), 32);
  EXPECT_EQ(c.choice.currentData().toInt(), 7);
  EXPECT_DOUBLE_EQ(c.ratio.value(), 0.25);  // not remembered: its default
}

}  // namespace
}  // namespace servescope::gui
