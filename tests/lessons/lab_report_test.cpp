// The lab report from a progress file on the shipped lessons and the bundled model: its figures
// are the progress file's (read back from its JSON), formatted as the step showed them, and its
// explanations are filled with them; a lesson with no progress is left out.
#include "app/lessons/lab_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "app/lessons/lesson_set.h"
#include "app/lessons/model_facts.h"

namespace servescope::lessons {
namespace {

const std::filesystem::path kShippedLessons(SERVESCOPE_SHIPPED_LESSONS);
const std::filesystem::path kBundledModel(SERVESCOPE_BUNDLED_MODEL);

// The batching lesson's "Waiting for a batch" step, run three times, predicted at 300 ms; a
// practice answer; two flashcards reviewed.
Progress handed_in() {
  Progress p;
  const QDateTime at = QDateTime(QDate(2026, 12, 7), QTime(10, 0), Qt::UTC);
  p.predictions.push_back({"batching", "waiting-static", "300", at});
  StepResultRecord r{"batching", "waiting-static", {}, {}, at};
  r.measures["static.ttft_ms"] = {312.5, 305.25, 340.0, 3};
  r.measures["continuous.ttft_ms"] = {4.5, 4.25, 5.0, 3};
  r.measures["ttft_ms"] = {312.5, 305.25, 340.0, 3};
  r.measures["class_tokens_per_s"] = {900.0, 850.0, 950.0, 3};
  r.measures["tpot_ms"] = {6.25, 6.0, 6.5, 3};
  r.conditions.push_back({"static.ttft_ms >= 300", true});
  r.conditions.push_back({"clearly_greater(static.ttft_ms, continuous.ttft_ms)", std::nullopt});
  p.keep_result(r);
  p.answers.push_back({"kv-cache", "kv-bytes-f16", "2560", true, 1.0, at});
  return p;
}

class LabReportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new ModelFacts(model_facts(kBundledModel));
    set_ = new LessonSet(load_lesson_set(kShippedLessons, model_));
  }
  static void TearDownTestSuite() {
    delete set_;
    delete model_;
  }
  static LabReport report(const Progress& progress) {
    // What the learner handed in is what the file holds: read back from its JSON.
    const Progress read = progress_from_json(progress_to_json(progress));
    return build_lab_report(read, set_->usable(), model_, {"a machine", "a model", "2026-12-07"});
  }
  static ModelFacts* model_;
  static LessonSet* set_;
};

ModelFacts* LabReportTest::model_ = nullptr;
LessonSet* LabReportTest::set_ = nullptr;

TEST_F(LabReportTest, TheStepsFiguresAreTheProgressFilesAndFillItsExplanation) {
  const LabReport r = report(handed_in());
  ASSERT_EQ(r.lessons.size(), 1u);  // the KV answer names no shipped question: left out
  const ReportLesson& batching = r.lessons[0];
  EXPECT_EQ(batching.title, set_->usable()[3]->title);
  ASSERT_EQ(batching.steps.size(), 1u);
  const ReportStep& step = batching.steps[0];
  EXPECT_EQ(step.title, "Waiting for a batch");
  EXPECT_EQ(step.prediction, "300 ms");
  ASSERT_EQ(step.measures.size(), 3u);  // the step's three observations
  EXPECT_EQ(step.measures[0].label, "Your time to first token, static batching (wait 300 ms)");
  EXPECT_EQ(step.measures[0].value, "312 ms");  // three significant digits, as the step shows it
  EXPECT_EQ(step.measures[0].spread, "median of 3 runs; 305 ms to 340 ms");
  EXPECT_EQ(step.measures[2].value, "6.25 ms");
  EXPECT_NE(step.explanation.find("first token came after **312 ms**"), std::string::npos)
      << step.explanation;
  EXPECT_NE(step.explanation.find("against 4.5 ms under continuous"), std::string::npos);
  // Its chart: the headline measure under each kept condition, and the prediction on it.
  ASSERT_EQ(step.chart.bars.size(), 2u);
  EXPECT_EQ(step.chart.bars[0].label, "continuous");
  EXPECT_EQ(step.chart.bars[0].median, 4.5);
  EXPECT_EQ(step.chart.bars[1].label, "static");
  EXPECT_EQ(step.chart.bars[1].median, 312.5);
  EXPECT_EQ(step.chart.bars[1].high, 340.0);
  EXPECT_EQ(step.chart.unit, "ms");
  EXPECT_EQ(step.chart.prediction, 300.0);
  ASSERT_EQ(report_charts(r).size(), 1u);
  ASSERT_EQ(step.conditions.size(), 2u);
  const std::string md = lab_report_markdown(r);
  EXPECT_NE(md.find("`static.ttft_ms >= 300`: holds"), std::string::npos);
  EXPECT_NE(md.find("not measured"), std::string::npos);
  EXPECT_NE(md.find("- Machine: a machine"), std::string::npos);
  EXPECT_NE(md.find("\n" + chart_marker(0) + "\n"), std::string::npos);
}

TEST_F(LabReportTest, PracticeAnswersAndFlashcardBoxesAreReported) {
  Progress p;
  const Lesson& kv = *set_->usable()[2];
  ASSERT_FALSE(kv.questions.empty());
  ASSERT_GE(kv.flashcards.size(), 2u);
  const Question& q = kv.questions[0];
  p.answers.push_back({kv.id, q.id, "42", false, 0.25, QDateTime::currentDateTimeUtc()});
  p.cards[kv.flashcards[0].id] = {3, QDate::currentDate().addDays(2)};
  p.cards[kv.flashcards[1].id] = {5, QDate::currentDate().addDays(9)};
  const LabReport r = report(p);
  ASSERT_EQ(r.lessons.size(), 1u);
  const ReportLesson& lesson = r.lessons[0];
  ASSERT_EQ(lesson.answers.size(), 1u);
  EXPECT_EQ(lesson.answers[0].given, "42");
  EXPECT_EQ(lesson.answers[0].score, 0.25);
  EXPECT_EQ(lesson.cards_reviewed, 2);
  EXPECT_EQ(lesson.card_boxes[2], 1);  // box 3
  EXPECT_EQ(lesson.card_boxes[4], 1);  // box 5
  EXPECT_EQ(lesson.card_boxes[0], static_cast<int>(kv.flashcards.size()) - 2);  // never reviewed
  const std::string md = lab_report_markdown(r);
  EXPECT_NE(md.find("Answer: 42 (not correct, score 0.25)"), std::string::npos) << md;
  EXPECT_EQ(md.find("{{"), std::string::npos) << "a placeholder left unfilled";
}

TEST_F(LabReportTest, NoProgressSaysSo) {
  EXPECT_NE(lab_report_markdown(report(Progress{})).find("No lesson started yet"),
            std::string::npos);
}

}  // namespace
}  // namespace servescope::lessons
