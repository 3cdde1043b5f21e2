#include "app/gui/lesson_ui/step_view.h"

#include <QButtonGroup>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>
#include <algorithm>

#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/gui/lesson_ui/page_parts.h"
#include "app/gui/window/shortcut_tip.h"
#include "app/lessons/format.h"
#include "app/lessons/placeholders.h"
#include "app/lessons/vocabulary.h"

namespace servescope::gui {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// The progress bar's words: which run of the step (when it repeats) and which action of it.
QString progress_label(int run, int runs, int done, int total, const QString& what) {
  const QString action =
      done >= total ? StepView::tr("done")
                    : StepView::tr("%1 (action %2 of %3)").arg(what).arg(done + 1).arg(total);
  if (runs <= 1) return done >= total ? StepView::tr("Done") : action;
  if (done >= total && run >= runs) return StepView::tr("Done");
  return StepView::tr("Run %1 of %2: %3").arg(run).arg(runs).arg(action);
}

}  // namespace

StepView::StepView(ActionDispatcher& dispatcher, StepContext context, QWidget* parent)
    : QWidget(parent),
      dispatcher_(dispatcher),
      runner_(new StepRunner(dispatcher, this)),
      context_(std::move(context)) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(4, 4, 4, 4);
  heading_ = new QLabel;
  heading_->setObjectName("step-heading");
  heading_->setWordWrap(true);
  QFont bold = heading_->font();
  bold.setBold(true);
  bold.setPointSizeF(bold.pointSizeF() * 1.2);
  heading_->setFont(bold);
  text_ = markdown_label("step-text");

  predict_prompt_ = wrapping_label({}, Qt::MarkdownText);
  choices_ = new QWidget;
  choices_layout_ = new QVBoxLayout(choices_);
  choices_layout_->setContentsMargins(12, 0, 0, 0);
  choice_group_ = new QButtonGroup(this);
  number_row_ = new QWidget;
  auto* number_layout = new QHBoxLayout(number_row_);
  number_layout->setContentsMargins(12, 0, 0, 0);
  number_ = prediction_number_field("predict-number");
  number_->setToolTip(tr("Your prediction. Commit to a number before you run the experiment."));
  number_->setAccessibleName(tr("Your prediction"));  // no label: the unit follows it
  number_unit_ = new QLabel;
  number_layout->addWidget(number_);
  number_layout->addWidget(number_unit_);
  number_layout->addStretch(1);

  auto* run_row = new QHBoxLayout;
  run_ = new QPushButton(tr("Run the experiment"));
  run_->setObjectName("run-step");
  run_->setShortcut(QKeySequence("Ctrl+R"));
  set_tip_with_shortcut(run_, tr("Runs this step's actions in the window"));
  cancel_ = new QPushButton(tr("Cancel"));
  cancel_->setToolTip(tr("Stops the experiment; the window keeps what was measured so far"));
  progress_ = new QProgressBar;
  progress_->setObjectName("step-progress");
  // Its words wrap below it: inside the bar "Run 3 of 3: Sweeping batch sizes 1 to 16 (action
  // 3 of 4)" spilled out at the docked width.
  progress_->setTextVisible(false);
  progress_text_ = wrapping_label();
  progress_text_->setObjectName("step-progress-text");
  run_row->addWidget(run_);
  run_row->addWidget(cancel_);
  run_row->addStretch(1);
  status_ = wrapping_label();

  observe_table_ = new QFrame;
  observe_table_->setObjectName("observe-table");
  observe_table_->setFrameShape(QFrame::StyledPanel);
  observe_grid_ = new QGridLayout(observe_table_);
  observe_grid_->setContentsMargins(6, 4, 6, 4);
  observe_grid_->setHorizontalSpacing(10);
  int column_index = 0;
  for (const QString& header : {tr("Observed"), tr("Measured"), tr("You predicted")}) {
    QLabel* label = wrapping_label(header);
    QFont font = label->font();
    font.setBold(true);
    label->setFont(font);
    observe_grid_->addWidget(label, 0, column_index);
    observe_grid_->setColumnStretch(column_index++, 1);  // equal shares; every cell wraps
  }
  explain_ = markdown_label("step-explain");

  column->addWidget(heading_);
  column->addWidget(text_);
  column->addWidget(predict_prompt_);
  column->addWidget(choices_);
  column->addWidget(number_row_);
  column->addLayout(run_row);
  // The whole page's width: "Run 2 of 3: Sweeping batch sizes 1 to 16 (action 3 of 4)" was
  // cut off beside the buttons.
  column->addWidget(progress_);
  column->addWidget(progress_text_);
  column->addWidget(status_);
  column->addWidget(observe_table_);
  column->addWidget(explain_);

  connect(choice_group_, &QButtonGroup::idToggled, this, [this](int, bool checked) {
    if (checked) Q_EMIT prediction_changed();
  });
  connect(number_, &QDoubleSpinBox::valueChanged, this, [this] { Q_EMIT prediction_changed(); });
  connect(run_, &QPushButton::clicked, this, &StepView::run);
  connect(cancel_, &QPushButton::clicked, this, &StepView::cancel);
  connect(&dispatcher_, &ActionDispatcher::progress, this,
          [this](int done, int total, const QString& what) {
            if (part_ != Part::kRunning) return;
            // One bar over every run of the step: each run's actions in turn.
            progress_->setRange(0, std::max(total, 1) * runs_);
            progress_->setValue((run_index_ - 1) * total + done);
            progress_text_->setText(progress_label(run_index_, runs_, done, total, what));
          });
  connect(&dispatcher_, &ActionDispatcher::notice, this,
          [this](const QString& text) { status_->setText(text); });
  connect(runner_, &StepRunner::repetition, this, [this](int run, int runs) {
    run_index_ = run;
    runs_ = std::max(runs, 1);
    if (runs > 1) {
      status_->setText(
          tr("Run %1 of %2: each side several times, for the spread.").arg(run).arg(runs));
    }
  });
  connect(runner_, &StepRunner::finished, this, [this](const StepOutcome& outcome) {
    if (part_ != Part::kRunning) return;
    show_observations(outcome);
    Q_EMIT run_finished();
  });
  connect(runner_, &StepRunner::failed, this, [this](const QString& reason) {
    if (part_ != Part::kRunning) return;
    part_ = Part::kPredict;
    status_->setText(tr("The experiment stopped: %1").arg(reason));
    run_->setEnabled(true);
    cancel_->setEnabled(false);
    Q_EMIT part_changed(part_);
  });
  connect(runner_, &StepRunner::cancelled, this, [this] {
    if (part_ != Part::kRunning) return;
    part_ = Part::kPredict;
    status_->setText(tr("Cancelled. Run it again when you are ready."));
    run_->setEnabled(true);
    cancel_->setEnabled(false);
    Q_EMIT part_changed(part_);
  });
}

QString StepView::filled(const std::string& markdown) const {
  // One snapshot, taken when the observations were shown, for the table and the text alike.
  const lessons::Measurements measured = observed_ ? *observed_ : context_.measured();
  lessons::FillContext fill;
  fill.model = context_.model();
  fill.measured = &measured;
  return qs(lessons::fill_placeholders(markdown, fill).text);
}

QString StepView::predict_line(const lessons::Step& step) const {
  return tr("**Predict:** %1").arg(filled(step.predict->prompt));
}

void StepView::show_step(const lessons::Lesson& lesson, int index) {
  if (runner_->busy() && part_ == Part::kRunning) runner_->cancel();
  if (lesson_ != &lesson) runner_->forget_steps();
  lesson_ = &lesson;
  outcome_.reset();
  index_ = index;
  observed_.reset();
  part_ = Part::kPredict;
  const lessons::Step& step = lesson.steps[static_cast<size_t>(index)];
  heading_->setText(
      tr("%1 (step %2 of %3)").arg(qs(step.title)).arg(index + 1).arg(lesson.steps.size()));
  text_->setText(filled(step.text));

  clear_choices();
  const bool has_predict = step.predict.has_value();
  const bool choice = has_predict && step.predict->kind == lessons::PredictionKind::kChoice;
  predict_prompt_->setVisible(has_predict);
  choices_->setVisible(choice);
  number_row_->setVisible(has_predict && !choice);
  if (has_predict) {
    predict_prompt_->setText(predict_line(step));
    if (choice) {
      int i = 0;
      for (const std::string& option : step.predict->options) {
        auto* button = new QRadioButton(QString("%1.").arg(i + 1));
        choice_group_->addButton(button, i++);
        choices_layout_->addWidget(option_row(button, qs(option)));
      }
    } else {
      number_->setValue(0.0);
      number_unit_->setText(qs(step.predict->unit));
    }
  }
  const bool has_run = !step.run.empty();
  run_->setText(has_run ? tr("Run the experiment") : tr("Show the explanation"));
  run_->setEnabled(true);
  cancel_->setEnabled(false);
  cancel_->setVisible(has_run);
  progress_->hide();  // shown while the experiment runs
  progress_text_->hide();
  progress_->reset();
  status_->clear();
  clear_observations();
  observe_table_->hide();
  explain_->hide();
  Q_EMIT part_changed(part_);
}

void StepView::clear_choices() {
  for (QAbstractButton* b : choice_group_->buttons()) choice_group_->removeButton(b);
  while (QLayoutItem* item = choices_layout_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
}

// Leaves the table's header row.
void StepView::clear_observations() {
  observed_rows_.clear();
  for (int i = observe_grid_->count() - 1; i >= 0; --i) {
    int row = 0, column = 0, rows = 0, columns = 0;
    observe_grid_->getItemPosition(i, &row, &column, &rows, &columns);
    if (row == 0) continue;
    QLayoutItem* item = observe_grid_->takeAt(i);
    delete item->widget();
    delete item;
  }
}

std::optional<double> StepView::prediction() const {
  if (!lesson_) return std::nullopt;
  const lessons::Step& step = lesson_->steps[static_cast<size_t>(index_)];
  if (!step.predict) return std::nullopt;
  if (step.predict->kind == lessons::PredictionKind::kChoice) {
    const int id = choice_group_->checkedId();
    return id >= 0 ? std::optional<double>(id) : std::nullopt;
  }
  return number_->value() > 0.0 ? std::optional<double>(number_->value()) : std::nullopt;
}

void StepView::set_prediction(double value) {
  if (!lesson_) return;
  const lessons::Step& step = lesson_->steps[static_cast<size_t>(index_)];
  if (!step.predict) return;
  if (step.predict->kind == lessons::PredictionKind::kNumber) {
    number_->setValue(value);
  } else if (QAbstractButton* b = choice_group_->button(static_cast<int>(value))) {
    b->setChecked(true);
  }
}

bool StepView::step_choice(int delta) {
  const QList<QAbstractButton*> options = choice_group_->buttons();
  if (part_ != Part::kPredict || !choices_->isVisibleTo(this) || options.isEmpty()) return false;
  const int count = static_cast<int>(options.size());
  const int chosen = choice_group_->checkedId();
  const int next = chosen < 0 ? (delta > 0 ? 0 : count - 1) : ((chosen + delta) % count + count) % count;
  choice_group_->button(next)->click();  // what a click records, a key records
  return true;
}

std::optional<QString> StepView::number_unit() const {
  if (!lesson_ || part_ != Part::kPredict) return std::nullopt;
  const lessons::Step& step = lesson_->steps[static_cast<size_t>(index_)];
  if (!step.predict || step.predict->kind != lessons::PredictionKind::kNumber) return std::nullopt;
  return qs(step.predict->unit);
}

void StepView::run() {
  if (!lesson_ || part_ == Part::kRunning) return;
  const lessons::Step& step = lesson_->steps[static_cast<size_t>(index_)];
  if (const std::optional<double> p = prediction()) Q_EMIT predicted(qs(step.id), *p);
  if (step.run.empty()) {
    show_observations(runner_->measure_now(step));
    Q_EMIT run_finished();  // nothing to run: shown is done (a lesson's last step ends it)
    return;
  }
  part_ = Part::kRunning;
  run_->setEnabled(false);
  cancel_->setEnabled(true);
  progress_->show();
  progress_text_->clear();
  progress_text_->show();
  status_->setText(tr("Running; the window stays yours meanwhile."));
  Q_EMIT part_changed(part_);
  runner_->run(step);
}

void StepView::cancel() { runner_->cancel(); }

void StepView::show_result(const StepOutcome& outcome) {
  if (!lesson_ || outcome.step_id != lesson_->steps[static_cast<size_t>(index_)].id) return;
  if (part_ == Part::kRunning) return;  // the run on screen is newer
  runner_->remember(outcome.step_id, outcome.measures);
  show_observations(outcome);
}

void StepView::refill() {
  if (!lesson_) return;
  const lessons::Step& step = lesson_->steps[static_cast<size_t>(index_)];
  text_->setText(filled(step.text));
  if (step.predict) predict_prompt_->setText(predict_line(step));
  if (part_ == Part::kObserve) explain_->setText(explanation_markdown());
}

void StepView::remember(const std::string& step_id, const lessons::StepMeasures& measures) {
  runner_->remember(step_id, measures);
}

// A measure as the observe table shows it: one run's value, or the median of the step's runs
// with their spread; what to run first when it has none.
QString StepView::measured_text(const std::string& measure) const {
  const MeasureValue v = dispatcher_.measure(measure);
  const std::string unit = v.unit.toStdString();
  if (outcome_) {
    const auto it = outcome_->measures.find(measure);
    if (it != outcome_->measures.end() && it->second.runs > 1) {
      const lessons::Sample& s = it->second;
      return qs(lessons::format_quantity(s.median, unit)) +
             tr(" (median of %1 runs; %2 to %3)")
                 .arg(s.runs)
                 .arg(qs(lessons::format_quantity(s.low, unit)),
                      qs(lessons::format_quantity(s.high, unit)));
    }
  }
  if (observed_) {  // the explanation's figure, the same
    const auto value = observed_->find(measure);
    if (value != observed_->end()) return qs(lessons::format_quantity(value->second, unit));
  }
  return v.value ? qs(lessons::format_quantity(*v.value, unit)) : v.missing;
}

void StepView::show_observations(StepOutcome outcome) {
  const lessons::Step& step = lesson_->steps[static_cast<size_t>(index_)];
  outcome_ = std::move(outcome);
  part_ = Part::kObserve;
  run_->setEnabled(true);
  run_->setText(step.run.empty() ? tr("Show the explanation") : tr("Run it again"));
  cancel_->setEnabled(false);
  progress_->setRange(0, 1);
  progress_->setValue(1);
  progress_text_->setText(tr("Done"));
  // A full orange "Done" bar read as a button; the table below says it is done.
  progress_->hide();
  progress_text_->hide();
  status_->clear();
  clear_observations();
  observed_ = context_.measured();
  for (const auto& [name, sample] : outcome_->measures) (*observed_)[name] = sample.median;
  const QString predicted_text = predicted_text_or("-");
  int row = 1;  // under the header
  for (const lessons::Observation& o : step.observe) {
    const ObservedRow& shown = observed_rows_.emplace_back(
        ObservedRow{qs(o.label.empty() ? o.measure : o.label), measured_text(o.measure)});
    QLabel* measured = wrapping_label(shown.measured);
    measured->setToolTip(qs(lessons::find_measure(o.measure)
                                ? std::string(lessons::find_measure(o.measure)->help)
                                : o.measure));
    measured->setTextInteractionFlags(Qt::TextSelectableByMouse);
    observe_grid_->addWidget(wrapping_label(shown.label), row, 0);
    observe_grid_->addWidget(measured, row, 1);
    observe_grid_->addWidget(wrapping_label(row == 1 ? predicted_text : QString()), row, 2);
    ++row;
  }
  observe_table_->setVisible(!step.observe.empty());
  explain_->setText(explanation_markdown());
  explain_->setVisible(!step.explain.empty());
  Q_EMIT part_changed(part_);
}

QString StepView::predicted_text_or(const QString& none) const {
  const std::optional<double> predicted = prediction();
  if (!predicted) return none;
  return qs(lessons::prediction_text(*lesson_->steps[static_cast<size_t>(index_)].predict,
                                     *predicted));
}

QString StepView::explanation_markdown() const {
  if (!lesson_) return {};
  const lessons::Step& step = lesson_->steps[static_cast<size_t>(index_)];
  QString out = filled(step.explain);
  if (outcome_ && outcome_->contradicted() && !step.explain_if_not.empty()) {
    out += "\n\n" + filled(step.explain_if_not);
  }
  return out;
}

QString StepView::part_markdown() const {
  if (!lesson_) return {};
  const lessons::Step& step = lesson_->steps[static_cast<size_t>(index_)];
  if (part_ == Part::kObserve) {
    QString out;
    for (const ObservedRow& r : observed_rows_) {
      out += QString("- %1: **%2**\n").arg(r.label, r.measured);
    }
    const QString predicted = predicted_text_or({});
    if (!predicted.isEmpty()) out += tr("- Predicted: %1\n").arg(predicted);
    return out + "\n" + explanation_markdown();
  }
  QString out = filled(step.text);
  if (part_ == Part::kRunning) out += "\n\n*" + tr("Running the experiment...") + "*";
  return out;
}

QString StepView::prediction_markdown() const {
  if (!lesson_ || part_ != Part::kPredict) return {};
  const lessons::Step& step = lesson_->steps[static_cast<size_t>(index_)];
  if (!step.predict) return {};
  // The options one per line in one paragraph, parted by line separators (a list's, or hard
  // breaks', spacing cost a line at lecture size);
  // the class's choice stands out from the back row: bold, and an arrow before it.
  QStringList lines;
  const int chosen = choice_group_->checkedId();
  int i = 0;
  for (const std::string& option : step.predict->options) {
    lines << (i == chosen ? QString("%1\\. **\u25b6 %2**").arg(i + 1).arg(qs(option))
                          : QString("%1\\. %2").arg(i + 1).arg(qs(option)));
    ++i;
  }
  if (step.predict->kind == lessons::PredictionKind::kNumber) {
    lines << tr("Predicted: %1").arg(predicted_text_or("-"));
  }
  return predict_line(step) + "\n\n" + lines.join(QChar::LineSeparator);
}

}  // namespace servescope::gui
