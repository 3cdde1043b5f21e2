#include "app/lessons/lesson_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace servescope::lessons {
namespace {

const std::filesystem::path kLessonData =
    std::filesystem::path(SERVESCOPE_TEST_DATA_DIR) / "lessons";

std::vector<std::string> problem_lines(const std::vector<Problem>& problems) {
  std::vector<std::string> lines;
  for (const Problem& p : problems) lines.push_back(p.to_string());
  return lines;
}

// The problem reported at `line`, or an empty string.
std::string problem_at(const std::vector<Problem>& problems, int line) {
  for (const Problem& p : problems) {
    if (p.line == line) return p.message;
  }
  return {};
}

TEST(LessonLoader, ReadsEveryPartOfTheValidFixture) {
  const LoadResult result = load_lesson_file(kLessonData / "valid" / "02-kv-sample.yaml");
  ASSERT_TRUE(result.problems.empty()) << testing::PrintToString(problem_lines(result.problems));
  ASSERT_TRUE(result.lesson.has_value());
  const Lesson& lesson = *result.lesson;
  EXPECT_EQ(lesson.id, "kv-sample");
  EXPECT_EQ(lesson.number, 2);
  EXPECT_EQ(lesson.objectives, std::vector<std::string>{"b"});
  EXPECT_THAT(lesson.intro, testing::HasSubstr("one key row"));
  ASSERT_EQ(lesson.steps.size(), 2u);

  const Step& step = lesson.steps[0];
  EXPECT_EQ(step.id, "predict-double");
  EXPECT_EQ(step.line, 10);
  ASSERT_TRUE(step.predict.has_value());
  EXPECT_EQ(step.predict->kind, PredictionKind::kChoice);
  EXPECT_EQ(step.predict->options.size(), 3u);
  ASSERT_EQ(step.run.size(), 14u);
  EXPECT_EQ(step.run[0].name, "load_model");
  EXPECT_EQ(step.run[0].value.text, "bundled");
  EXPECT_EQ(step.run[0].line, 19);
  EXPECT_EQ(step.run[3].value.integer, 0);
  EXPECT_TRUE(step.run[5].value.flag);
  EXPECT_EQ(step.run[6].value.text, "Once upon a time");
  EXPECT_EQ(step.run[7].value.integer, 50);
  EXPECT_EQ(step.run[8].field_integer("max_tokens", -1), 100);
  EXPECT_EQ(step.run[9].value.integer, 10);
  EXPECT_TRUE(step.run[10].fields.empty());
  EXPECT_EQ(step.run[11].fields.at("sizes").items, (std::vector<std::string>{"25M", "100M"}));
  EXPECT_EQ(step.run[13].field_text("panel"), "kv");
  EXPECT_EQ(step.run[13].field_text("element"), "retained-bytes");
  ASSERT_EQ(step.observe.size(), 2u);
  EXPECT_EQ(step.observe[0].measure, "kv_bytes");
  EXPECT_EQ(step.observe[0].line, 34);
  EXPECT_EQ(lesson.steps[1].predict->kind, PredictionKind::kNumber);
  EXPECT_EQ(lesson.steps[1].predict->unit, "bytes");

  ASSERT_EQ(lesson.questions.size(), 4u);
  const Question& generated = lesson.questions[0];
  EXPECT_TRUE(generated.generated());
  EXPECT_EQ(generated.generator, "kv_bytes");
  EXPECT_EQ(generated.params.at("tokens"), "200");
  EXPECT_EQ(generated.params.at("kv_type"), "q8_0");
  EXPECT_DOUBLE_EQ(generated.tolerance.value_or(0), 0.02);
  ASSERT_TRUE(generated.confirm.has_value());
  EXPECT_EQ(generated.confirm->run.size(), 2u);
  EXPECT_EQ(generated.confirm->run[1].field_integer("max_tokens", 0), 200);
  EXPECT_EQ(generated.confirm->measure, "kv_bytes");
  EXPECT_EQ(lesson.questions[1].choice_answer.value_or(-1), 1);
  EXPECT_DOUBLE_EQ(lesson.questions[2].number_answer.value_or(0), 2.0);
  EXPECT_EQ(lesson.questions[3].kind, QuestionKind::kExplain);
  EXPECT_EQ(lesson.questions[3].self_check.size(), 2u);
  EXPECT_EQ(lesson.flashcards.size(), 2u);
  EXPECT_EQ(lesson.experiment_count(), 1);
  EXPECT_EQ(lesson.generated_question_count(), 1);
}

TEST(LessonLoader, ASyntaxErrorNamesItsLine) {
  const std::string file = (kLessonData / "invalid" / "syntax.yaml").string();
  const LoadResult result = load_lesson_file(file);
  EXPECT_FALSE(result.lesson.has_value());
  ASSERT_EQ(result.problems.size(), 1u);
  EXPECT_EQ(result.problems[0].file, file);
  EXPECT_GE(result.problems[0].line, 3);  // the flow list opened on line 3 never closes
  EXPECT_THAT(result.problems[0].message, testing::HasSubstr("not valid YAML"));
}

TEST(LessonLoader, EachStructuralProblemNamesItsLine) {
  const LoadResult result = load_lesson_file(kLessonData / "invalid" / "structure.yaml");
  const auto& problems = result.problems;
  SCOPED_TRACE(testing::PrintToString(problem_lines(problems)));
  EXPECT_THAT(problem_at(problems, 2), testing::HasSubstr("whole number, got 'two'"));
  EXPECT_THAT(problem_at(problems, 4), testing::HasSubstr("unknown key 'colour'"));
  EXPECT_THAT(problem_at(problems, 11), testing::HasSubstr("unknown action 'warp_speed'"));
  EXPECT_THAT(problem_at(problems, 12), testing::HasSubstr("whole number, got 'many'"));
  EXPECT_THAT(problem_at(problems, 13), testing::HasSubstr("true or false, got 'maybe'"));
  EXPECT_THAT(problem_at(problems, 14), testing::HasSubstr("unknown key 'temperature'"));
  EXPECT_THAT(problem_at(problems, 15), testing::HasSubstr("one `name: argument` pair"));
  EXPECT_THAT(problem_at(problems, 17), testing::HasSubstr("'title' appears twice"));
  EXPECT_THAT(problem_at(problems, 23), testing::HasSubstr("whole number, got 'first'"));
  EXPECT_EQ(problems.size(), 9u);
  ASSERT_TRUE(result.lesson.has_value());  // what could be read is still there
  // set_kv_type, and generate without the unknown key; the malformed actions are left out.
  EXPECT_EQ(result.lesson->steps.at(0).run.size(), 2u);
}

TEST(LessonLoader, ARootThatIsNotAMappingIsAProblemAtLineOne) {
  const LoadResult result = load_lesson_text("- just\n- a list\n", "list.yaml");
  ASSERT_EQ(result.problems.size(), 1u);
  EXPECT_EQ(result.problems[0].to_string().substr(0, 12), "list.yaml:1:");
}

TEST(LessonLoader, AMissingFileIsAProblemNotAnException) {
  const LoadResult result = load_lesson_file(kLessonData / "no-such-lesson.yaml");
  ASSERT_EQ(result.problems.size(), 1u);
  EXPECT_THAT(result.problems[0].message, testing::HasSubstr("cannot be read"));
}

// A stray Latin-1 byte on line 3: one problem at that line naming the byte, not an abort.
TEST(LessonLoader, InvalidUtf8IsAProblemAtItsLine) {
  const LoadResult result =
      load_lesson_text("id: x\nnumber: 1\ntitle: caf\xe9 au lait\n", "latin1.yaml");
  ASSERT_EQ(result.problems.size(), 1u);
  EXPECT_EQ(result.problems[0].to_string(), "latin1.yaml:3: not valid UTF-8 (byte offset 26)");
  EXPECT_FALSE(result.lesson.has_value());
}

TEST(LessonLoader, AFolderGivenAsALessonIsAProblemNamingIt) {
  const LoadResult result = load_lesson_file(kLessonData / "valid");
  ASSERT_EQ(result.problems.size(), 1u);
  EXPECT_THAT(result.problems[0].message, testing::HasSubstr("is a directory"));
}

TEST(LessonLoader, ListsLessonFilesInNameOrder) {
  const auto files = lesson_files(kLessonData / "valid");
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files.front().filename(), "02-kv-sample.yaml");
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
  EXPECT_THROW(lesson_files(kLessonData / "no-such-folder"), InputError);
}

}  // namespace
}  // namespace servescope::lessons
