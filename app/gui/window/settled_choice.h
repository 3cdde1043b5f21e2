// A picker stepped through by keys (Q Q Q to reach Q4_0): each press shows its entry at once,
// and the choice is made, as a person choosing it in the picker makes it (its activated()),
// once the presses stop. Three presses had rebuilt the engine three times, the strip saying
// "Q4_0" while the bar quantised to F16.
#pragma once

#include <QObject>
#include <QString>

class QComboBox;
class QTimer;

namespace servescope::gui {

class SettledChoice : public QObject {
  Q_OBJECT

 public:
  static constexpr int kSettleMs = 600;

  SettledChoice(QComboBox& picker, QObject* parent);

  // The entry `delta` rows on from the one shown (wrapping), shown now and chosen when no
  // other step follows within kSettleMs; returns its text.
  QString step(int delta);
  bool settling() const;

 private:
  void choose();

  QComboBox& picker_;
  QTimer* timer_;
  int target_ = -1;  // the entry the presses came to
};

}  // namespace servescope::gui
