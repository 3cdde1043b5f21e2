// The parts the Learn pane's pages are made of: a page that scrolls vertically as one (its
// text wraps to the pane's width, and nothing in it scrolls on its own), labels that wrap and
// take the height they need, and a choice's button with its text wrapping beside it.
#pragma once

#include <QScrollArea>
#include <QString>

class QAbstractButton;
class QDoubleSpinBox;
class QLabel;
class QWidget;

namespace servescope::gui {

// Vertically only; besides the arrows and Page Up/Down it knows Home and End, with or without
// Ctrl, as a document does. Never narrower than its page's narrowest layout.
class PageScroll : public QScrollArea {
 public:
  explicit PageScroll(const QString& name);
  QSize minimumSizeHint() const override;

 protected:
  void keyPressEvent(QKeyEvent* event) override;
};

// Text that wraps to the width it is given and takes the height it needs.
QLabel* wrapping_label(const QString& text = {}, Qt::TextFormat format = Qt::PlainText);
// Markdown, selectable by mouse only (a click leaves the keyboard with the page's scrolling),
// its links opened in the browser.
QLabel* markdown_label(const char* name);

// The box a predicted number is typed into (the Learn pane's, lecture mode's): 0 to 10^15,
// up to three decimals, digits grouped; 0 reads "your number", no prediction yet.
QDoubleSpinBox* prediction_number_field(const char* name);

// The row owns `button`; its own text stays short ("1.") or empty, and a click on the text
// clicks it. A button's own text cannot wrap: a long option widened the pane, and the window.
QWidget* option_row(QAbstractButton* button, const QString& text);

}  // namespace servescope::gui
