// Qt conventions on the real window: tooltips name shortcuts as Qt spells them (never by hand),
// labelled inputs have buddies, menus, their entries and the toolbars' labels have mnemonics; the
// token chips as a model and view (keys, copy, what a screen reader hears); translators fall back
// to English.
#include <gtest/gtest.h>

#include <QAbstractButton>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QAccessible>
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLayout>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>
#include <memory>

#include "app/gui/window/main_window.h"
#include "app/gui/window/shortcut_tip.h"
#include "app/gui/window/token_chips.h"
#include "app/gui/window/translations.h"
#include "tests/app/gui_test_support.h"
#include "tests/app/gui_window_support.h"

namespace servescope::gui {
namespace {

using testing::app;

// Keys written into a tooltip: "Ctrl+", "Shift+", "Alt+", "(F11)".
const QRegularExpression kKeysInText(R"((Ctrl|Shift|Alt|Meta)\+|\(F\d+\))");

// `tip` less the shortcuts the action or button really has, as Qt spells them.
QString without_own_keys(QString tip, const QList<QKeySequence>& shortcuts) {
  for (const QKeySequence& keys : shortcuts) tip.remove(shortcut_text(keys));
  return tip;
}

class ConventionsFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    window_ = std::make_unique<MainWindow>(
        testing::lesson_window_options(cache_.path(), progress_.path()));
  }

  QTemporaryDir cache_;
  QTemporaryDir progress_;
  std::unique_ptr<MainWindow> window_;
};

TEST_F(ConventionsFixture, TooltipsNameOnlyTheirOwnShortcuts) {
  QStringList written_by_hand;
  for (QAction* action : window_->findChildren<QAction*>()) {
    if (without_own_keys(action->toolTip(), action->shortcuts()).contains(kKeysInText)) {
      written_by_hand << action->text() + ": " + action->toolTip();
    }
  }
  for (QAbstractButton* button : window_->findChildren<QAbstractButton*>()) {
    const auto* tool = qobject_cast<QToolButton*>(button);
    if (tool && tool->defaultAction()) continue;  // the action's tooltip, checked above
    if (without_own_keys(button->toolTip(), {button->shortcut()}).contains(kKeysInText)) {
      written_by_hand << button->text() + ": " + button->toolTip();
    }
  }
  EXPECT_TRUE(written_by_hand.isEmpty()) << written_by_hand.join("\n").toStdString();
}

// On this platform a hand-written "(Ctrl+R)" reads like the helper's: the sources must not
// write keys into a tooltip, a placeholder or a status line.
TEST(Conventions, NoSourceWritesShortcutKeysIntoATooltip) {
  const QDir gui(QString(SERVESCOPE_LESSONS_DIR) + "/../app/gui");
  ASSERT_TRUE(gui.exists()) << gui.path().toStdString();
  const QRegularExpression tooltip_with_keys(
      R"((setToolTip|setPlaceholderText|set_placeholder|showMessage)\()"
      R"([^;]*\((Ctrl|Shift|Alt|Esc|F\d+)[+) ])");
  QStringList found;
  QDirIterator files(gui.path(), {"*.cpp"}, QDir::Files, QDirIterator::Subdirectories);
  while (files.hasNext()) {
    const QString path = files.next();
    QFile file(path);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    // Statements, not lines: a tooltip's text often continues on the next line.
    const QString text =
        QString::fromUtf8(file.readAll()).replace(QRegularExpression(R"("\s*\n\s*")"), "");
    for (const QRegularExpressionMatch& m : tooltip_with_keys.globalMatch(text)) {
      found << QFileInfo(path).fileName() + ": " + m.captured(0).left(100);
    }
  }
  EXPECT_TRUE(found.isEmpty()) << found.join("\n").toStdString();
}

TEST_F(ConventionsFixture, TheTooltipHelperAddsTheActionsOwnShortcut) {
  QAction action("Run");
  action.setShortcut(QKeySequence("Ctrl+R"));
  set_tip_with_shortcut(&action, "Runs it");
  EXPECT_EQ(action.toolTip(),
            QString("Runs it (%1)").arg(QKeySequence("Ctrl+R").toString(QKeySequence::NativeText)));
  QAction plain("Plain");
  set_tip_with_shortcut(&plain, "No keys");
  EXPECT_EQ(plain.toolTip(), "No keys");
}

bool is_input(const QWidget* widget) {
  return qobject_cast<const QAbstractSpinBox*>(widget) || qobject_cast<const QComboBox*>(widget) ||
         qobject_cast<const QLineEdit*>(widget) || qobject_cast<const QAbstractSlider*>(widget);
}

// The widget laid out right after `label` in its layout, if any.
QWidget* next_in_layout(QLayout* layout, const QLabel* label) {
  for (int i = 0; i < layout->count(); ++i) {
    QLayoutItem* item = layout->itemAt(i);
    if (QLayout* inner = item->layout()) {
      if (QWidget* found = next_in_layout(inner, label)) return found;
    } else if (item->widget() == label) {
      QLayoutItem* next = i + 1 < layout->count() ? layout->itemAt(i + 1) : nullptr;
      return next ? next->widget() : nullptr;
    }
  }
  return nullptr;
}

TEST_F(ConventionsFixture, ALabelBesideAnInputIsItsBuddy) {
  QStringList without_buddy;
  for (QLabel* label : window_->findChildren<QLabel*>()) {
    if (label->text().isEmpty() || label->buddy() != nullptr) continue;
    QWidget* parent = label->parentWidget();
    QWidget* next = parent && parent->layout() ? next_in_layout(parent->layout(), label) : nullptr;
    if (next && is_input(next)) {
      without_buddy << label->text();
    }
  }
  EXPECT_TRUE(without_buddy.isEmpty()) << without_buddy.join("\n").toStdString();
}

// The toolbars' labels name their inputs with a mnemonic (Alt+B reaches the backend).
TEST_F(ConventionsFixture, TheToolbarLabelsHaveMnemonicsAndBuddies) {
  QStringList without;
  for (const char* name : {"engine-toolbar", "serving-toolbar"}) {
    auto* bar = window_->findChild<QWidget*>(name);
    ASSERT_NE(bar, nullptr) << name;
    for (QLabel* label : bar->findChildren<QLabel*>()) {
      if (label->text().trimmed().isEmpty()) continue;
      if (!label->text().contains('&') || label->buddy() == nullptr) without << label->text();
    }
  }
  EXPECT_TRUE(without.isEmpty()) << without.join("\n").toStdString();
}

// Every menu of the menu bar and every entry in them has a mnemonic.
void collect_without_mnemonic(const QMenu& menu, QStringList& without) {
  if (!menu.title().contains('&')) without << menu.title();
  for (QAction* action : menu.actions()) {
    if (action->isSeparator() || action->text().isEmpty()) continue;
    if (action->menu()) {
      collect_without_mnemonic(*action->menu(), without);
    } else if (!action->text().contains('&')) {
      without << menu.title() + " > " + action->text();
    }
  }
}

TEST_F(ConventionsFixture, EveryMenuAndEntryHasAMnemonic) {
  QStringList without;
  for (QAction* top : window_->menuBar()->actions()) {
    if (top->menu()) collect_without_mnemonic(*top->menu(), without);
  }
  EXPECT_TRUE(without.isEmpty()) << without.join("\n").toStdString();
}

TEST_F(ConventionsFixture, TheLearnMenuEntriesHaveMnemonics) {
  QStringList without;
  for (QAction* action : window_->findChildren<QAction*>()) {
    const QString text = action->text();
    for (const char* entry : {"Learn pane", "Lecture mode", "Export progress", "Import progress",
                              "Pin this run", "Unpin"}) {
      if (QString(text).remove('&').startsWith(entry) && !text.contains('&')) without << text;
    }
  }
  EXPECT_TRUE(without.isEmpty()) << without.join("\n").toStdString();
}

QVector<GeneratedToken> three_tokens() {
  return {{450, "The", 0.5, {}}, {6635, " cat", 0.25, {{" dog", 0.2}}}, {13, "\n", -1.0, {}}};
}

TEST(TokenChips, AreAListModelOfTextIdAndProbability) {
  app();
  TokenChips chips(TokenChips::Shading::kProbability);
  chips.set_tokens(three_tokens());
  const TokenListModel& model = *chips.model();
  ASSERT_EQ(model.rowCount(), 3);
  EXPECT_EQ(model.index(1).data(TokenListModel::kTextRole).toString(), " cat");
  EXPECT_EQ(model.index(1).data(TokenListModel::kIdRole).toInt(), 6635);
  EXPECT_DOUBLE_EQ(model.index(1).data(TokenListModel::kProbabilityRole).toDouble(), 0.25);
  EXPECT_EQ(model.index(1).data(Qt::DisplayRole).toString(), QString::fromUtf8("\u00b7cat"));
  EXPECT_TRUE(model.index(1).data(Qt::ToolTipRole).toString().contains("token id 6635"));
  chips.append_tokens({{29889, ".", 0.9, {}}});
  EXPECT_EQ(model.rowCount(), 4);
  EXPECT_EQ(chips.tokens().back().text, ".");
}

TEST(TokenChips, ArrowsMoveTheCurrentChipAndCtrlCCopiesTheSelection) {
  app();
  TokenChips chips(TokenChips::Shading::kAlternating);
  chips.resize(400, 100);
  chips.show();
  chips.set_tokens(three_tokens());
  EXPECT_EQ(chips.current_chip(), -1);
  QTest::keyClick(&chips, Qt::Key_Right);
  EXPECT_EQ(chips.current_chip(), 0);
  QTest::keyClick(&chips, Qt::Key_Right, Qt::ShiftModifier);
  EXPECT_EQ(chips.current_chip(), 1);
  EXPECT_EQ(chips.selected_text(), "The cat");
  QTest::keyClick(&chips, Qt::Key_C, Qt::ControlModifier);
  EXPECT_EQ(QApplication::clipboard()->text(), "The cat");
  QTest::keyClick(&chips, Qt::Key_End);
  EXPECT_EQ(chips.current_chip(), 2);
  EXPECT_EQ(chips.selected_text(), "\n");
  QTest::keyClick(&chips, Qt::Key_Left);
  EXPECT_EQ(chips.current_chip(), 1);
  QTest::keyClick(&chips, Qt::Key_A, Qt::ControlModifier);
  EXPECT_EQ(chips.selected_text(), "The cat\n");
}

TEST(TokenChips, UpAndDownMoveBetweenRowsOfChips) {
  app();
  TokenChips chips(TokenChips::Shading::kAlternating);
  QVector<GeneratedToken> many;
  for (int i = 0; i < 40; ++i) many.push_back({i, " word", 0.5, {}});
  chips.resize(200, 400);  // several rows
  chips.show();
  chips.set_tokens(many);
  QTest::keyClick(&chips, Qt::Key_Home);
  QTest::keyClick(&chips, Qt::Key_Down);
  const int below = chips.current_chip();
  EXPECT_GT(below, 0);
  EXPECT_GT(chips.chip_rect(below).top(), chips.chip_rect(0).bottom());
  QTest::keyClick(&chips, Qt::Key_Up);
  EXPECT_EQ(chips.current_chip(), 0);
}

TEST(TokenChips, AScreenReaderHearsEachChip) {
  app();
  TokenChips chips(TokenChips::Shading::kProbability);
  chips.resize(400, 100);
  chips.show();
  chips.set_tokens(three_tokens());
  QAccessibleInterface* list = QAccessible::queryAccessibleInterface(&chips);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->role(), QAccessible::List);
  EXPECT_EQ(list->text(QAccessible::Name), "Generated tokens");
  ASSERT_EQ(list->childCount(), 3);
  QAccessibleInterface* cat = list->child(1);
  ASSERT_NE(cat, nullptr);
  EXPECT_EQ(cat->role(), QAccessible::ListItem);
  EXPECT_TRUE(cat->text(QAccessible::Name).contains("\" cat\""))
      << cat->text(QAccessible::Name).toStdString();
  EXPECT_TRUE(cat->text(QAccessible::Name).contains("25.0%"));
  EXPECT_EQ(list->indexOfChild(cat), 1);
  EXPECT_EQ(cat->parent(), list);
  chips.set_tokens({});
  EXPECT_EQ(list->childCount(), 0);
}

TEST(Translations, FallBackToEnglishWhenThereIsNone) {
  app();
  QTemporaryDir empty;
  EXPECT_EQ(install_translators(*QCoreApplication::instance(), QLocale("xx_YY"), empty.path()), 0);
  EXPECT_EQ(QCoreApplication::translate("WindowText", "No model loaded yet."),
            "No model loaded yet.");
}

}  // namespace
}  // namespace servescope::gui
