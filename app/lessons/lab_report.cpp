#include "app/lessons/lab_report.h"

#include <QDate>
#include <algorithm>
#include <charconv>
#include <exception>

#include "app/lessons/format.h"
#include "app/lessons/generators.h"
#include "app/lessons/placeholders.h"
#include "app/lessons/vocabulary.h"

namespace servescope::lessons {
namespace {

std::string unit_of(const std::string& measure) {
  const MeasureSpec* spec = find_measure(kept_measure(measure));
  return spec ? std::string(spec->unit) : std::string();
}

// A prediction as the progress file keeps it, read with from_chars: locale-independent (the
// window's C locale may use a decimal comma). nullopt for anything but one number.
std::optional<double> parse_number(const std::string& text) {
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The learner's prediction as the step showed it, as written when it is not one; empty when
// they made none.
std::string given_prediction_text(const Prediction& asked, const std::string& given) {
  const std::optional<double> value = parse_number(given);
  const std::string shown = value ? prediction_text(asked, *value) : std::string();
  return shown.empty() ? given : shown;
}

ReportMeasure report_measure(const Observation& o, const Sample& s) {
  const std::string unit = unit_of(o.measure);
  ReportMeasure m{o.label.empty() ? o.measure : o.label, format_quantity(s.median, unit), {}};
  if (s.runs > 1) {
    m.spread = "median of " + std::to_string(s.runs) + " runs; " + format_quantity(s.low, unit) +
               " to " + format_quantity(s.high, unit);
  }
  return m;
}

ReportBar bar(std::string label, const Sample& s) { return {std::move(label), s.median, s.low, s.high}; }

ReportChart report_chart(const Step& step, const StepResultRecord& result,
                         const std::optional<double>& predicted) {
  ReportChart chart;
  if (step.observe.empty()) return chart;
  const Observation& head = step.observe.front();
  chart.title = head.label.empty() ? head.measure : head.label;
  chart.unit = unit_of(head.measure);
  // The headline measure as each kept condition measured it ("static", "continuous").
  const std::string suffix = "." + head.measure;
  for (const auto& [name, sample] : result.measures) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      chart.bars.push_back(bar(name.substr(0, name.size() - suffix.size()), sample));
    }
  }
  if (chart.bars.empty()) {  // else the observations that share its unit
    chart.title = "Measured, in " + chart.unit;
    for (const Observation& o : step.observe) {
      const auto it = result.measures.find(o.measure);
      if (it != result.measures.end() && unit_of(o.measure) == chart.unit) {
        chart.bars.push_back(bar(o.label.empty() ? o.measure : o.label, it->second));
      }
    }
  }
  if (predicted && step.predict && step.predict->unit == chart.unit) chart.prediction = predicted;
  return chart;
}

ReportStep report_step(const Lesson& lesson, const Step& step, const Progress& progress,
                       const ModelFacts* model) {
  ReportStep out;
  out.title = step.title;
  std::string given;
  for (const PredictionRecord& p : progress.predictions) {  // the latest one counts
    if (p.lesson == lesson.id && p.step == step.id) given = p.value;
  }
  const StepResultRecord* result = progress.result(lesson.id, step.id);
  // The figures the explanation was filled with when it was shown: the result's medians.
  Measurements measured;
  if (result) {
    for (const auto& [name, sample] : result->measures) measured[name] = sample.median;
  }
  FillContext fill{model, &measured, nullptr, std::nullopt};
  if (step.predict) {
    out.question = fill_placeholders(step.predict->prompt, fill).text;
    out.prediction = given_prediction_text(*step.predict, given);
  }
  if (!result) return out;
  for (const Observation& o : step.observe) {
    const auto it = result->measures.find(o.measure);
    if (it != result->measures.end()) out.measures.push_back(report_measure(o, it->second));
  }
  out.conditions = result->conditions;
  const bool number = step.predict && step.predict->kind == PredictionKind::kNumber;
  out.chart = report_chart(step, *result, number ? parse_number(given) : std::nullopt);
  out.explanation = fill_placeholders(step.explain, fill).text;
  const bool contradicted = std::any_of(result->conditions.begin(), result->conditions.end(),
                                        [](const ConditionRecord& c) { return c.passed == false; });
  if (contradicted && !step.explain_if_not.empty()) {
    out.explanation += "\n\n" + fill_placeholders(step.explain_if_not, fill).text;
  }
  return out;
}

std::vector<ReportAnswer> report_answers(const Lesson& lesson, const Progress& progress,
                                         const ModelFacts* model) {
  std::vector<ReportAnswer> out;
  for (const AnswerRecord& a : progress.answers) {
    if (a.lesson != lesson.id) continue;
    const auto q = std::find_if(lesson.questions.begin(), lesson.questions.end(),
                                [&](const Question& question) { return question.id == a.question; });
    if (q == lesson.questions.end()) continue;  // a question since removed from the lesson
    // A generated question's numbers come from the model, as the practice pane computed them
    // (one that needs a measurement keeps its "?").
    std::optional<GeneratedAnswer> generated;
    if (q->generated() && model) {
      try {
        generated = generate_answer(*q, *model);
      } catch (const std::exception&) {
        generated.reset();
      }
    }
    const FillContext fill{model, nullptr, generated ? &*generated : nullptr, std::nullopt};
    out.push_back({fill_placeholders(q->prompt, fill).text, a.given, a.correct, a.score,
                   fill_placeholders(q->working, fill).text});
  }
  return out;
}

// A Markdown table cell: one line, no column breaks.
std::string cell(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::string out;
  for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string condition_text(const ConditionRecord& c) {
  const char* verdict = !c.passed ? "not measured" : *c.passed ? "holds" : "does not hold";
  return "`" + c.condition + "`: " + verdict;
}

void append_step(std::string& md, const ReportStep& step, size_t& charts) {
  md += "### " + step.title + "\n\n";
  if (!step.question.empty()) {
    md += "**Prediction.** " + step.question + " **" +
          (step.prediction.empty() ? std::string("(none given)") : step.prediction) + "**\n\n";
  }
  if (!step.measures.empty()) {
    md += "| measured | value |\n|---|---|\n";
    for (const ReportMeasure& m : step.measures) {
      md += "| " + cell(m.label) + " | " + cell(m.value) +
            (m.spread.empty() ? "" : " (" + cell(m.spread) + ")") + " |\n";
    }
    md += "\n";
  }
  if (!step.chart.bars.empty()) md += chart_marker(charts++) + "\n\n";
  for (const ConditionRecord& c : step.conditions) md += "- " + condition_text(c) + "\n";
  if (!step.conditions.empty()) md += "\n";
  if (!step.explanation.empty()) md += step.explanation + "\n\n";
  if (step.measures.empty() && step.explanation.empty()) md += "*Not run yet.*\n\n";
}

}  // namespace

LabReport build_lab_report(const Progress& progress, std::span<const Lesson* const> lessons,
                           const ModelFacts* model, ReportFacts facts) {
  LabReport report{std::move(facts), {}};
  for (const Lesson* lesson : lessons) {
    ReportLesson out;
    out.title = lesson->title;
    for (const Step& step : lesson->steps) {
      const bool predicted = std::any_of(
          progress.predictions.begin(), progress.predictions.end(),
          [&](const PredictionRecord& p) { return p.lesson == lesson->id && p.step == step.id; });
      if (predicted || progress.result(lesson->id, step.id)) {
        out.steps.push_back(report_step(*lesson, step, progress, model));
      }
    }
    out.answers = report_answers(*lesson, progress, model);
    std::vector<std::string> cards;
    for (const Flashcard& c : lesson->flashcards) {
      cards.push_back(c.id);
      out.cards_reviewed += progress.cards.contains(c.id) ? 1 : 0;
    }
    out.card_boxes = due_counts(cards, progress.cards, QDate::currentDate()).cards;
    if (!out.steps.empty() || !out.answers.empty() || out.cards_reviewed > 0) {
      report.lessons.push_back(std::move(out));
    }
  }
  return report;
}

std::string lab_report_markdown(const LabReport& report) {
  std::string md = "# ServeScope lab report\n\n";
  md += "- Machine: " + report.facts.machine + "\n- Model: " + report.facts.model +
        "\n- Written: " + report.facts.written_at + "\n\n";
  md += "Every figure below was measured on that machine and model, and kept in the progress "
        "file when the step ran.\n\n";
  if (report.lessons.empty()) md += "*No lesson started yet.*\n";
  size_t charts = 0;
  for (const ReportLesson& lesson : report.lessons) {
    md += "## " + lesson.title + "\n\n";
    for (const ReportStep& step : lesson.steps) append_step(md, step, charts);
    if (!lesson.answers.empty()) {
      md += "### Practice\n\n";
      for (const ReportAnswer& a : lesson.answers) {
        md += "**" + a.question + "** Answer: " + a.given + " (" +
              (a.correct ? "correct" : "not correct") + ", score " +
              format_significant(a.score) + ")\n\n";
        if (!a.working.empty()) md += "*Working:* " + a.working + "\n\n";
      }
    }
    if (lesson.cards_reviewed > 0) {
      md += "### Flashcards\n\n| box | 1 | 2 | 3 | 4 | 5 |\n|---|---|---|---|---|---|\n| cards |";
      for (const int n : lesson.card_boxes) md += " " + std::to_string(n) + " |";
      md += "\n\n";
    }
  }
  return md;
}

std::string chart_marker(size_t n) { return "CHART-" + std::to_string(n); }

std::vector<const ReportChart*> report_charts(const LabReport& report) {
  std::vector<const ReportChart*> charts;
  for (const ReportLesson& lesson : report.lessons) {
    for (const ReportStep& step : lesson.steps) {
      if (!step.chart.bars.empty()) charts.push_back(&step.chart);
    }
  }
  return charts;
}

}  // namespace servescope::lessons
