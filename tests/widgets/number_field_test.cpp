// The lesson's number box: "512,000", not "512,000.000".
#include "widgets/number_field.h"

#include <gtest/gtest.h>

namespace servescope::widgets {
namespace {

TEST(NumberField, ShowsOnlyTheDecimalsTheValueNeeds) {
  NumberField field;
  field.setLocale(QLocale(QLocale::English, QLocale::UnitedStates));
  field.setRange(0.0, 1e15);
  field.setDecimals(3);
  field.setGroupSeparatorShown(true);
  field.setValue(512000);
  EXPECT_EQ(field.cleanText(), "512,000");
  field.setValue(1.85);
  EXPECT_EQ(field.cleanText(), "1.85");
  field.setValue(0.125);
  EXPECT_EQ(field.cleanText(), "0.125");
  // What it shows reads back as the same value, and typed decimals still count.
  EXPECT_DOUBLE_EQ(field.valueFromText("512,000"), 512000);
  EXPECT_DOUBLE_EQ(field.valueFromText("1.125"), 1.125);
}

TEST(NumberField, FollowsItsLocalesDecimalPoint) {
  NumberField field;
  field.setLocale(QLocale(QLocale::German, QLocale::Germany));
  field.setDecimals(3);
  field.setRange(0.0, 1e6);
  field.setValue(2.5);
  EXPECT_EQ(field.cleanText(), "2,5");
  field.setValue(3);
  EXPECT_EQ(field.cleanText(), "3");
}

}  // namespace
}  // namespace servescope::widgets
