#include "app/lessons/lesson_validator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "app/lessons/lesson_loader.h"
#include "app/lessons/lesson_set.h"
#include "app/lessons/vocabulary.h"

namespace servescope::lessons {
namespace {

const std::filesystem::path kLessonData =
    std::filesystem::path(SERVESCOPE_TEST_DATA_DIR) / "lessons";

const ModelFacts& bundled() {
  static const ModelFacts facts = model_facts(std::filesystem::path(SERVESCOPE_BUNDLED_MODEL));
  return facts;
}

Lesson load(const std::filesystem::path& path) {
  LoadResult result = load_lesson_file(path);
  EXPECT_TRUE(result.problems.empty());
  return std::move(*result.lesson);
}

std::vector<std::string> all_lines(const std::vector<Problem>& problems) {
  std::vector<std::string> lines;
  for (const Problem& p : problems) lines.push_back(p.to_string());
  return lines;
}

// The problems reported at `line`, joined.
std::string at_line(const std::vector<Problem>& problems, int line) {
  std::string joined;
  for (const Problem& p : problems) {
    if (p.line == line) joined += p.message + "\n";
  }
  return joined;
}

TEST(LessonValidator, TheValidFixtureHasNoProblemWithOrWithoutAModel) {
  const Lesson lesson = load(kLessonData / "valid" / "02-kv-sample.yaml");
  EXPECT_THAT(all_lines(validate_lesson(lesson)), testing::IsEmpty());
  EXPECT_THAT(all_lines(validate_lesson(lesson, &bundled())), testing::IsEmpty());
}

TEST(LessonValidator, EachProblemOfTheSemanticsFixtureNamesItsLine) {
  const Lesson lesson = load(kLessonData / "invalid" / "semantics.yaml");
  const std::vector<Problem> problems = validate_lesson(lesson, &bundled());
  SCOPED_TRACE(testing::PrintToString(all_lines(problems)));
  using testing::HasSubstr;
  EXPECT_THAT(at_line(problems, 1), HasSubstr("id 'Semantics' may use only a-z"));
  EXPECT_THAT(at_line(problems, 4), HasSubstr("objective 'd' is not one of a, b or c"));
  EXPECT_THAT(at_line(problems, 6), HasSubstr("{{model.layer}} is not a model placeholder"));
  EXPECT_THAT(at_line(problems, 11), HasSubstr("observes before any step has run something"));
  EXPECT_THAT(at_line(problems, 14), HasSubstr("step id 's1' is used twice"));
  EXPECT_THAT(at_line(problems, 18), HasSubstr("needs 2 or more options"));
  EXPECT_THAT(at_line(problems, 22),
              HasSubstr("set_kv_type 'q4_0' is not one of f32, f16 or q8_0"));
  EXPECT_THAT(at_line(problems, 23), HasSubstr("set_classmates 40 is outside 0..32"));
  EXPECT_THAT(at_line(problems, 24), HasSubstr("load_model 'timing:7B' is not one of bundled"));
  EXPECT_THAT(at_line(problems, 25), HasSubstr("roofline panel has no element 'retained-bytes'"));
  EXPECT_THAT(at_line(problems, 26), HasSubstr("'3M' is not one of 25M, 100M, 400M or 1B"));
  EXPECT_THAT(at_line(problems, 27), HasSubstr("highlight needs element"));
  EXPECT_THAT(at_line(problems, 29), HasSubstr("'kv_megabytes' is not a measure"));
  EXPECT_THAT(at_line(problems, 33), HasSubstr("{{param.tokens}} belongs in a generated question"));
  EXPECT_THAT(at_line(problems, 33), HasSubstr("{{measure.nope}} names no measure"));
  EXPECT_THAT(at_line(problems, 39), HasSubstr("answer 2 is not an option's index (0 to 1)"));
  EXPECT_THAT(at_line(problems, 41), HasSubstr("'no-working': working"));
  EXPECT_THAT(at_line(problems, 51), HasSubstr("tolerance must be above 0 and at most 0.5"));
  EXPECT_THAT(at_line(problems, 56), HasSubstr("unknown generator 'kv_megabytes'"));
  EXPECT_THAT(at_line(problems, 65), HasSubstr("kv_type 'q4_0' is not one of f32, f16 or q8_0"));
  EXPECT_THAT(at_line(problems, 68), HasSubstr("{{calc.blocks}} is not a value kv_bytes offers"));
  EXPECT_THAT(at_line(problems, 74), HasSubstr("unit must be ms"));
  EXPECT_THAT(at_line(problems, 78), HasSubstr("confirm measure kv_bytes is in bytes"));
  EXPECT_THAT(at_line(problems, 80), HasSubstr("needs a self_check list"));
  EXPECT_THAT(at_line(problems, 87), HasSubstr("{{answer}} belongs in a question's working"));
  EXPECT_THAT(at_line(problems, 92), HasSubstr("back is missing or empty"));
  EXPECT_THAT(at_line(problems, 95), HasSubstr("flashcard id 'fc-one' is used twice"));
  EXPECT_EQ(problems.size(), 27u);  // one each, 33 has two; nothing reported twice
}

// A minimal valid lesson with the given steps / questions appended.
std::string lesson_text(const std::string& steps, const std::string& questions = {}) {
  return "id: mini\nnumber: 1\ntitle: Mini\nobjectives: [a]\nsummary: S\nsteps:\n"
         "  - id: s\n    title: T\n    text: X\n" +
         steps + (questions.empty() ? "" : "questions:\n" + questions);
}

std::vector<Problem> problems_of(const std::string& text, const ModelFacts* model = nullptr) {
  LoadResult loaded = load_lesson_text(text, "01-mini.yaml");
  EXPECT_THAT(all_lines(loaded.problems), testing::IsEmpty());
  if (!loaded.lesson) return {};
  return validate_lesson(*loaded.lesson, model);
}

TEST(LessonValidator, EveryActionsDocumentedExampleIsValid) {
  for (const ActionSpec& action : action_specs()) {
    const std::string text = lesson_text("    run:\n      - " + std::string(action.example) + "\n");
    EXPECT_THAT(all_lines(problems_of(text)), testing::IsEmpty()) << action.example;
  }
}

TEST(LessonValidator, TheFileNameMustBeNumberAndId) {
  LoadResult loaded = load_lesson_text(lesson_text(""), "lessons/1-mini.yaml");
  const std::vector<Problem> problems = validate_lesson(*loaded.lesson);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].to_string(),
            "lessons/1-mini.yaml:1: the file of lesson 1 'mini' must be named 01-mini.yaml");
}

TEST(LessonValidator, GeneratedQuestionsAreComputedOnTheModel) {
  const std::string question =
      "  - id: fits\n    kind: number\n    prompt: How many?\n    generator: max_batch\n"
      "    params: {memory_mib: 4, context: 256, kv_type: f16}\n    unit: requests\n"
      "    tolerance: 0.01\n    working: '{{calc.free_bytes}} free: {{answer}}'\n";
  const std::string text = lesson_text("", question);
  EXPECT_THAT(all_lines(problems_of(text)), testing::IsEmpty());  // parameters are valid
  const std::vector<Problem> on_model = problems_of(text, &bundled());
  ASSERT_EQ(on_model.size(), 1u);
  EXPECT_EQ(on_model[0].line, 15);
  EXPECT_THAT(on_model[0].message, testing::HasSubstr("does not even hold the weights"));
}

TEST(LessonValidator, AMeasuredParameterIsCheckedButNotComputed) {
  const std::string question =
      "  - id: floor\n    kind: number\n    prompt: At {{param.bandwidth_gbs}} GB/s?\n"
      "    generator: decode_floor_ms\n    params: {bandwidth_gbs: measured}\n    unit: ms\n"
      "    tolerance: 0.05\n    working: '{{calc.weight_bytes}} bytes: {{answer}}'\n";
  EXPECT_THAT(all_lines(problems_of(lesson_text("", question), &bundled())), testing::IsEmpty());
}

TEST(LessonValidator, MeasuresInExplainNeedARunInThisOrAnEarlierStep) {
  const std::string early = "    explain: '{{measure.kv_bytes}}'\n";
  EXPECT_THAT(at_line(problems_of(lesson_text(early)), 10), testing::HasSubstr("after a run"));
  const std::string ran = "    run: [{generate: {}}]\n" + early;
  EXPECT_THAT(all_lines(problems_of(lesson_text(ran))), testing::IsEmpty());
}

// A lecturer read "200 steps steps of 8 requests requests": a measure is filled with its unit.
TEST(LessonValidator, AMeasuresUnitIsNotWrittenAgainAfterIt) {
  const std::string run = "    run: [{generate: {}}]\n";
  const std::string twice = run + "    explain: 'ran **{{measure.kv_tokens}}** tokens'\n";
  EXPECT_THAT(at_line(problems_of(lesson_text(twice)), 11),
              testing::HasSubstr("is filled with its unit (tokens)"));
  const std::string once = run + "    explain: 'ran **{{measure.kv_tokens}}** in all'\n";
  EXPECT_THAT(all_lines(problems_of(lesson_text(once))), testing::IsEmpty());
}

TEST(LessonValidator, CollectionsRefuseRepeatedIdsNumbersAndFlashcards) {
  const std::string cards = "flashcards:\n  - {id: fc-a, front: F, back: B}\n";
  LoadResult one = load_lesson_text(lesson_text("") + cards, "01-mini.yaml");
  LoadResult two = load_lesson_text(lesson_text("") + cards, "other/01-mini.yaml");
  const std::vector<Problem> problems = validate_collection({*one.lesson, *two.lesson});
  ASSERT_EQ(problems.size(), 3u) << testing::PrintToString(all_lines(problems));
  EXPECT_THAT(
      problems[0].to_string(),
      testing::HasSubstr("other/01-mini.yaml:1: lesson id 'mini' is also used by 01-mini.yaml"));
  EXPECT_THAT(problems[1].message, testing::HasSubstr("lesson number 1 is also used"));
  EXPECT_THAT(problems[2].message, testing::HasSubstr("flashcard id 'fc-a' is also used"));
}

TEST(LessonSet, CountsTheValidFolderAndReportsNoErrors) {
  const LessonSet set = load_lesson_set(kLessonData / "valid", &bundled());
  EXPECT_THAT(all_lines(set.problems), testing::IsEmpty());
  EXPECT_EQ(lesson_set_json(set),
            R"({"lessons":1,"experiments":1,"questions":4,"generated_questions":1,)"
            R"("flashcards":2,"errors":[]})");
  EXPECT_EQ(set.usable().size(), 1u);
}

TEST(LessonSet, CheckLessonsPrintsOneLinePerProblemAndExitsOne) {
  std::ostringstream out;
  std::ostringstream err;
  const int status = check_lessons(kLessonData / "invalid", &bundled(), out, err);
  EXPECT_EQ(status, 1);
  const nlohmann::json json = nlohmann::json::parse(out.str());
  EXPECT_EQ(json["lessons"], 2);  // structure.yaml and semantics.yaml parse; syntax.yaml does not
  std::vector<std::string> lines;
  std::istringstream in(err.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  EXPECT_EQ(lines.size(), json["errors"].size());
  const std::string semantics = (kLessonData / "invalid" / "semantics.yaml").string();
  EXPECT_THAT(lines, testing::Contains(semantics + ":23: set_classmates 40 is outside 0..32"));
  EXPECT_THAT(lines, testing::Contains(testing::HasSubstr("syntax.yaml:")));
}

TEST(LessonSet, AnEmptyFolderHasNoLessonsAndNoErrors) {
  const std::filesystem::path empty = std::filesystem::path(testing::TempDir()) / "no-lessons";
  std::filesystem::create_directories(empty);
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(check_lessons(empty, nullptr, out, err), 0);
  EXPECT_EQ(out.str(),
            "{\"lessons\":0,\"experiments\":0,\"questions\":0,\"generated_questions\":0,"
            "\"flashcards\":0,\"errors\":[]}\n");
  EXPECT_EQ(err.str(), "");
}

// A lesson with a Latin-1 byte, in a file whose name has one too: the report is a problem at
// the byte's line and a JSON line with U+FFFD for the name's byte (it aborted with nlohmann's
// type_error.316 before, exit 134).
TEST(LessonSet, BytesThatAreNotUtf8AreReportedNotAborted) {
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / ("latin1-lessons-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "caf\xe9.yaml";
  {
    std::ofstream out(file, std::ios::binary);
    out << "id: latin\nnumber: 1\ntitle: caf\xe9\n";
  }
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(check_lessons(dir, nullptr, out, err), 1);
  EXPECT_EQ(err.str(), file.string() + ":3: not valid UTF-8 (byte offset 30)\n");
  const nlohmann::json json = nlohmann::json::parse(out.str());
  EXPECT_THAT(json["errors"][0].get<std::string>(), testing::HasSubstr("caf\uFFFD.yaml:3:"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace servescope::lessons
