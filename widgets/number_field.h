// A number box that shows only the decimals its value needs ("512,000", "1.85"), not the fixed
// count of decimals() ("512,000.000"); up to decimals() are still accepted when typed.
#pragma once

#include <QDoubleSpinBox>

namespace servescope::widgets {

class NumberField : public QDoubleSpinBox {
 public:
  using QDoubleSpinBox::QDoubleSpinBox;

  QString textFromValue(double value) const override;
};

}  // namespace servescope::widgets
