// A lab report for handing in, built from the learner's progress file and the lessons: each
// step's prediction, what its experiment measured (the same figures the progress file keeps,
// formatted as the step showed them), the explanation as shown, practice answers with their
// working, the flashcards' boxes, and the machine and model. Plain data and Markdown; the
// window writes it as HTML and PDF (app/gui/lesson_ui/lab_report_file.h).
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "app/lessons/lesson.h"
#include "app/lessons/leitner.h"
#include "app/lessons/model_facts.h"
#include "app/lessons/progress_store.h"

namespace servescope::lessons {

struct ReportMeasure {
  std::string label;  // the step's label for it, else its name
  std::string value;  // the median, as format_quantity writes it
  std::string spread;  // "median of 3 runs; 1.2 ms to 1.5 ms", empty for one run
};

// One bar of a step's chart: a measured sample on the chart's axis.
struct ReportBar {
  std::string label;
  double median = 0.0, low = 0.0, high = 0.0;  // low == high for one run
};

// A step's chart: its headline measure side by side (under each condition it kept, else the
// observations in that measure's unit), with the learner's number prediction when it is in
// that unit. Empty `bars`: no chart.
struct ReportChart {
  std::string title;  // the headline observation's label
  std::string unit;
  std::vector<ReportBar> bars;
  std::optional<double> prediction;
};

struct ReportStep {
  std::string title;
  std::string question;    // the prediction's prompt, filled; empty when it asks none
  std::string prediction;  // the learner's: the option's text or the number with its unit
  std::vector<ReportMeasure> measures;  // the step's observations, from its kept result
  std::vector<ConditionRecord> conditions;
  std::string explanation;  // Markdown, filled with the result's figures; empty before a run
  ReportChart chart;
};

struct ReportAnswer {
  std::string question;  // Markdown, filled with the model's facts
  std::string given;
  bool correct = false;
  double score = 0.0;
  std::string working;  // Markdown
};

struct ReportLesson {
  std::string title;
  std::vector<ReportStep> steps;  // those the learner predicted or ran
  std::vector<ReportAnswer> answers;
  std::array<int, kLeitnerBoxes> card_boxes{};  // the lesson's cards in box 1..5
  int cards_reviewed = 0;  // cards in the progress file (never-reviewed ones are in box 1)
};

// Where it ran, in words: "AMD EPYC, 2 cores" and "servescope-stories (4.61 M parameters, f32)".
struct ReportFacts {
  std::string machine;
  std::string model;
  std::string written_at;  // ISO 8601, UTC
};

struct LabReport {
  ReportFacts facts;
  std::vector<ReportLesson> lessons;  // those with any progress, in the lessons' order
};

// `model` fills the {{model.*}} placeholders (nullptr: they read "?").
LabReport build_lab_report(const Progress& progress, std::span<const Lesson* const> lessons,
                           const ModelFacts* model, ReportFacts facts);

// The whole report as one Markdown document (headings, tables, the explanations as written).
// Each step's chart is a paragraph of its own reading chart_marker(n), n counting the charts
// from 0 in document order, for the writer to put the drawing in its place.
std::string lab_report_markdown(const LabReport& report);
std::string chart_marker(size_t n);  // "CHART-n"
// The steps' charts in document order (those with bars).
std::vector<const ReportChart*> report_charts(const LabReport& report);

}  // namespace servescope::lessons
