#include "app/gui/lesson_ui/practice_view.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollBar>
#include <QVBoxLayout>

#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/gui/lesson_ui/page_parts.h"
#include "app/gui/window/shortcut_tip.h"
#include "app/lessons/format.h"
#include "app/lessons/placeholders.h"

namespace servescope::gui {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString kind_label(const lessons::Question& q) {
  switch (q.kind) {
    case lessons::QuestionKind::kChoice:
      return PracticeView::tr("choice");
    case lessons::QuestionKind::kNumber:
      return q.generated() ? PracticeView::tr("number, from your model")
                           : PracticeView::tr("number");
    case lessons::QuestionKind::kExplain:
      return PracticeView::tr("explain");
  }
  return {};
}

}  // namespace

PracticeView::PracticeView(ActionDispatcher& dispatcher, StepContext context, QWidget* parent)
    : QWidget(parent), dispatcher_(dispatcher), context_(std::move(context)) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  list_ = new QListWidget;
  list_->setObjectName("question-list");
  list_->setMaximumHeight(120);
  list_->setWordWrap(true);  // "Question 2 (number, from your model) - try again" was cut
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // The question, its answer and its working on one page that scrolls as one: small boxes of
  // their own, 2 to 4 lines tall, cut the options and the model answer.
  prompt_ = markdown_label("question-prompt");
  choices_ = new QWidget;
  choices_layout_ = new QVBoxLayout(choices_);
  choices_layout_->setContentsMargins(0, 0, 0, 0);
  choice_group_ = new QButtonGroup(this);
  number_ = new QLineEdit;
  number_->setAccessibleName(tr("Your answer"));
  number_->setObjectName("answer-number");
  // The example shows the formats read; it is no lesson's answer.
  number_->setPlaceholderText(
      tr("Your answer, with or without its unit (e.g. 1,234,567, 1.18 MiB or 42 ms)"));
  explanation_ = new QPlainTextEdit;
  explanation_->setAccessibleName(tr("Your explanation"));
  explanation_->setPlaceholderText(
      tr("Explain in a few sentences, then check it against the model "
         "answer."));
  explanation_->setFixedHeight(110);
  self_check_ = new QWidget;
  self_check_layout_ = new QVBoxLayout(self_check_);
  self_check_layout_->setContentsMargins(0, 0, 0, 0);
  auto* buttons = new QHBoxLayout;
  check_ = new QPushButton(tr("Check"));
  check_->setObjectName("check-answer");
  check_->setShortcut(QKeySequence("Ctrl+Shift+Return"));
  set_tip_with_shortcut(check_, tr("Marks your answer and shows the full working"));
  confirm_ = new QPushButton(tr("Run it"));
  confirm_->setToolTip(
      tr("Runs this question in the window and compares the measurement with the "
         "formula's answer"));
  buttons->addWidget(check_);
  buttons->addWidget(confirm_);
  buttons->addStretch(1);
  feedback_ = wrapping_label();
  feedback_->setObjectName("answer-feedback");
  confirmation_ = wrapping_label();
  working_ = markdown_label("question-working");

  auto* page = new QWidget;
  auto* page_column = new QVBoxLayout(page);
  page_column->setContentsMargins(4, 4, 4, 4);
  page_column->addWidget(prompt_);
  page_column->addWidget(choices_);
  page_column->addWidget(number_);
  page_column->addWidget(explanation_);
  page_column->addWidget(self_check_);
  page_column->addLayout(buttons);
  page_column->addWidget(feedback_);
  page_column->addWidget(confirmation_);
  page_column->addWidget(working_);
  page_column->addStretch(1);
  page_ = new PageScroll("practice-scroll");
  page_->setWidget(page);

  column->addWidget(list_);
  column->addWidget(page_, 1);

  connect(list_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row != index_) show_question(row);
  });
  connect(check_, &QPushButton::clicked, this, [this] { check(); });
  connect(confirm_, &QPushButton::clicked, this, &PracticeView::confirm);
  connect(&dispatcher_, &ActionDispatcher::finished, this, [this] {
    if (!confirming_) return;
    confirming_ = false;
    const lessons::Question& q = question();
    const MeasureValue v = dispatcher_.measure(q.confirm->measure);
    refresh_generated();  // a measured parameter may have changed
    if (!v.value || !generated_) {
      confirmation_->setText(v.missing.isEmpty() ? generated_problem_ : v.missing);
      return;
    }
    const std::string unit = generated_->unit;
    confirmation_->setText(tr("Measured: %1. The formula said %2.")
                               .arg(qs(lessons::format_quantity(*v.value, v.unit.toStdString())),
                                    qs(lessons::format_quantity(generated_->value, unit))));
  });
  connect(&dispatcher_, &ActionDispatcher::failed, this, [this](const QString& reason) {
    if (!confirming_) return;
    confirming_ = false;
    confirmation_->setText(tr("Could not run it: %1").arg(reason));
  });
  connect(&dispatcher_, &ActionDispatcher::cancelled, this, [this] { confirming_ = false; });
}

const lessons::Question& PracticeView::question() const {
  return lesson_->questions[static_cast<size_t>(index_)];
}

void PracticeView::show_lesson(const lessons::Lesson& lesson) {
  lesson_ = &lesson;
  index_ = -1;
  const QSignalBlocker block(list_);
  list_->clear();
  int i = 1;
  for (const lessons::Question& q : lesson.questions) {
    const auto it = answered_.find(lesson.id + "/" + q.id);
    const QString mark = it == answered_.end() ? QString()
                         : it->second          ? tr("  - right")
                                               : tr("  - try again");
    list_->addItem(tr("Question %1 (%2)%3").arg(i++).arg(kind_label(q), mark));
  }
  show_question(lesson.questions.empty() ? -1 : 0);
}

void PracticeView::set_answered(std::map<std::string, bool> answered) {
  answered_ = std::move(answered);
  if (lesson_) {
    const int keep = index_;
    show_lesson(*lesson_);
    if (keep >= 0) show_question(keep);
  }
}

void PracticeView::mark_answered(const std::string& key, bool correct) {
  bool& right = answered_[key];
  right = right || correct;  // once right, it stays right
  if (lesson_ && index_ >= 0) {
    const QSignalBlocker block(list_);
    const lessons::Question& q = question();
    if (QListWidgetItem* item = list_->item(index_)) {
      item->setText(tr("Question %1 (%2)%3")
                        .arg(index_ + 1)
                        .arg(kind_label(q), answered_[lesson_->id + "/" + q.id]
                                                ? tr("  - right")
                                                : tr("  - try again")));
    }
  }
}

QString PracticeView::filled(const std::string& markdown,
                             const std::optional<std::string>& answer) const {
  const lessons::Measurements measured = context_.measured();
  lessons::FillContext fill;
  fill.model = context_.model();
  fill.measured = &measured;
  fill.generated = generated_ ? &*generated_ : nullptr;
  fill.answer = answer;
  return qs(lessons::fill_placeholders(markdown, fill).text);
}

void PracticeView::refresh_generated() {
  generated_.reset();
  generated_problem_.clear();
  if (index_ < 0 || !question().generated()) return;
  const lessons::ModelFacts* model = context_.model();
  if (!model) {
    generated_problem_ = tr("Load a model first: this question is computed from it.");
    return;
  }
  try {
    generated_ = lessons::generate_answer(question(), *model, context_.measured());
  } catch (const std::exception& error) {
    generated_problem_ = qs(error.what());
  }
}

bool PracticeView::show_question(int index) {
  const bool valid = lesson_ && index >= 0 && index < static_cast<int>(lesson_->questions.size());
  index_ = valid ? index : -1;
  page_->verticalScrollBar()->setValue(0);  // a new question starts at its top
  for (QAbstractButton* b : choice_group_->buttons()) choice_group_->removeButton(b);
  for (QVBoxLayout* rows : {choices_layout_, self_check_layout_}) {
    while (QLayoutItem* item = rows->takeAt(0)) {
      delete item->widget();
      delete item;
    }
  }
  self_checks_.clear();
  feedback_->clear();
  confirmation_->clear();
  working_->clear();
  working_->hide();
  number_->clear();
  explanation_->clear();
  self_check_->hide();
  if (!valid) {
    prompt_->setText(lesson_ ? tr("This lesson has no practice questions.") : QString());
    for (QWidget* w :
         std::initializer_list<QWidget*>{choices_, number_, explanation_, check_, confirm_}) {
      w->hide();
    }
    return false;
  }
  const QSignalBlocker block(list_);
  list_->setCurrentRow(index);
  show_prompt();
  const lessons::Question& q = question();
  choices_->setVisible(q.kind == lessons::QuestionKind::kChoice);
  number_->setVisible(q.kind == lessons::QuestionKind::kNumber);
  explanation_->setVisible(q.kind == lessons::QuestionKind::kExplain);
  check_->show();
  check_->setText(q.kind == lessons::QuestionKind::kExplain ? tr("Compare with the model answer")
                                                            : tr("Check"));
  confirm_->setVisible(q.confirm.has_value());
  int i = 0;
  for (const std::string& option : q.options) {
    auto* button = new QRadioButton(QString("%1.").arg(i + 1));
    choice_group_->addButton(button, i++);
    choices_layout_->addWidget(option_row(button, qs(option)));
  }
  for (const std::string& item : q.self_check) {
    self_checks_.push_back(new QCheckBox);
    self_check_layout_->addWidget(option_row(self_checks_.back(), qs(item)));
  }
  restore_given();
  return true;
}

void PracticeView::set_given(std::map<std::string, QString> given) {
  given_ = std::move(given);
  if (index_ >= 0) restore_given();
}

void PracticeView::restore_given() {
  const lessons::Question& q = question();
  const auto it = given_.find(lesson_->id + "/" + q.id);
  if (it == given_.end()) return;
  switch (q.kind) {
    case lessons::QuestionKind::kChoice:
      choose(it->second.toInt());
      break;
    case lessons::QuestionKind::kNumber:
      number_->setText(it->second);
      break;
    case lessons::QuestionKind::kExplain:
      explanation_->setPlainText(it->second);
      break;
  }
}

void PracticeView::choose(int option) {
  if (QAbstractButton* b = choice_group_->button(option)) b->setChecked(true);
}

void PracticeView::type_answer(const QString& text) {
  if (index_ >= 0 && question().kind == lessons::QuestionKind::kExplain) {
    explanation_->setPlainText(text);
  } else {
    number_->setText(text);
  }
}

void PracticeView::tick(int item, bool on) {
  if (item >= 0 && item < static_cast<int>(self_checks_.size())) {
    self_checks_[static_cast<size_t>(item)]->setChecked(on);
  }
}

std::optional<lessons::AnswerResult> PracticeView::check() {
  if (index_ < 0) return std::nullopt;
  const lessons::Question& q = question();
  lessons::AnswerResult result;
  QString given;
  switch (q.kind) {
    case lessons::QuestionKind::kChoice:
      if (choice_group_->checkedId() < 0) {
        feedback_->setText(tr("Choose an answer first."));
        return std::nullopt;
      }
      result = lessons::check_choice(q, choice_group_->checkedId());
      given = QString::number(choice_group_->checkedId());
      break;
    case lessons::QuestionKind::kNumber:
      refresh_generated();
      result = lessons::check_number(q, generated_ ? &*generated_ : nullptr,
                                     number_->text().toStdString());
      given = number_->text();
      break;
    case lessons::QuestionKind::kExplain: {
      if (self_check_->isHidden()) {  // isVisible() is false on a hidden tab too
        // First the model answer and the list to tick; the second press marks it.
        self_check_->show();
        check_->setText(tr("Mark my ticks"));
        working_->setText(
            tr("**Model answer:** %1\n\nTick what your explanation did.\n\n%2")
                .arg(filled(q.model_answer, std::nullopt), filled(q.working, std::nullopt)));
        working_->show();
        return std::nullopt;
      }
      std::vector<bool> ticked;
      for (const QCheckBox* box : self_checks_) ticked.push_back(box->isChecked());
      result = lessons::self_marked(q, ticked);
      given = explanation_->toPlainText();
      break;
    }
  }
  feedback_->setText(qs(result.feedback));
  working_->setText(working_markdown());
  working_->show();
  given_[lesson_->id + "/" + q.id] = given;
  Q_EMIT answered(qs(lesson_->id), qs(q.id), given, result);
  return result;
}

QString PracticeView::working_markdown() const {
  if (index_ < 0) return {};
  const lessons::Question& q = question();
  const std::optional<std::string> answer =
      lessons::answer_text(q, generated_ ? &*generated_ : nullptr);
  QString out = tr("**Working**\n\n%1").arg(filled(q.working, answer));
  if (q.kind == lessons::QuestionKind::kExplain) {
    out = tr("**Model answer:** %1\n\n%2").arg(filled(q.model_answer, answer), out);
  }
  return out;
}

void PracticeView::confirm() {
  if (index_ < 0 || !question().confirm || dispatcher_.busy()) return;
  confirming_ = true;
  confirmation_->setText(tr("Running it in the window..."));
  dispatcher_.run(to_lesson_actions(question().confirm->run));
}

QString PracticeView::feedback() const { return feedback_->text(); }
QString PracticeView::prompt_markdown() const { return prompt_->text(); }

void PracticeView::show_prompt() {
  refresh_generated();
  prompt_->setText(filled(question().prompt, std::nullopt) +
                       (generated_problem_.isEmpty() ? QString()
                                                     : "\n\n*" + generated_problem_ + "*"));
}

void PracticeView::refill() {
  if (index_ >= 0) show_prompt();  // what the learner typed or chose stays
}
QString PracticeView::confirmation() const { return confirmation_->text(); }

}  // namespace servescope::gui
