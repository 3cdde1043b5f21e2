// The lessons the application ships (lessons/ in the source tree), checked on the bundled
// model: they validate, they meet issue 14's minimums, every objective is taught by an
// experiment and practised by questions, and each generated question's confirm run would
// retain the tokens its answer assumes (prompt tokens from the real tokenizer, a greedy run
// that does not stop early), with answers equal to the KV formula written out by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "app/lessons/generators.h"
#include "app/lessons/lesson_set.h"
#include "app/lessons/model_facts.h"
#include "engine/compute/backend.h"
#include "engine/eval/quantize_model.h"
#include "engine/model/model.h"
#include "engine/serving/generator.h"

namespace servescope::lessons {
namespace {

const std::filesystem::path kShippedLessons(SERVESCOPE_SHIPPED_LESSONS);
const std::filesystem::path kBundledModel(SERVESCOPE_BUNDLED_MODEL);

const ModelFacts& bundled_facts() {
  static const ModelFacts facts = model_facts(kBundledModel);
  return facts;
}

const LessonSet& shipped() {
  static const LessonSet set = load_lesson_set(kShippedLessons, &bundled_facts());
  return set;
}

std::vector<std::string> problem_lines(const LessonSet& set) {
  std::vector<std::string> lines;
  for (const Problem& p : set.problems) lines.push_back(p.to_string());
  return lines;
}

std::vector<const Question*> all_questions() {
  std::vector<const Question*> questions;
  for (const Lesson& lesson : shipped().lessons) {
    for (const Question& q : lesson.questions) questions.push_back(&q);
  }
  return questions;
}

// Bytes of one number in the cache, as the GGML row layouts store them.
double bytes_per_element(const std::string& kv_type) {
  if (kv_type == "f32") return 4.0;
  if (kv_type == "f16") return 2.0;
  if (kv_type == "q8_0") return 34.0 / 32.0;  // 32 int8 values and one fp16 scale per block
  ADD_FAILURE() << "unexpected KV type " << kv_type;
  return 0.0;
}

// 2 (key and value) x layers x kv_heads x head_dim x bytes per number, from the GGUF's own
// metadata rather than the engine's kv_bytes_per_token.
double kv_bytes_by_hand(const model::ModelConfig& c, double tokens, const std::string& kv_type) {
  return tokens * 2.0 * static_cast<double>(c.n_layers) * static_cast<double>(c.n_kv_heads) *
         static_cast<double>(c.head_dim) * bytes_per_element(kv_type);
}

TEST(ShippedLessons, ValidateOnTheBundledModelWithoutAProblem) {
  EXPECT_THAT(problem_lines(shipped()), testing::IsEmpty());
  EXPECT_EQ(shipped().usable().size(), shipped().lessons.size());
}

TEST(ShippedLessons, MeetTheIssuesMinimums) {
  const LessonSet& set = shipped();
  ASSERT_GE(set.lessons.size(), 6u);
  std::set<int64_t> numbers;
  for (const Lesson& lesson : set.lessons) numbers.insert(lesson.number);
  for (int64_t n = 0; n <= 5; ++n) EXPECT_TRUE(numbers.count(n)) << "no lesson " << n;

  std::map<QuestionKind, int> kinds;
  int generated_and_confirmed = 0;
  for (const Question* q : all_questions()) {
    ++kinds[q->kind];
    if (q->generated() && q->confirm) ++generated_and_confirmed;
  }
  EXPECT_GE(all_questions().size(), 16u);
  EXPECT_GE(kinds[QuestionKind::kChoice], 1);
  EXPECT_GE(kinds[QuestionKind::kNumber], 1);
  EXPECT_GE(kinds[QuestionKind::kExplain], 1);
  EXPECT_GE(generated_and_confirmed, 4);

  size_t flashcards = 0;
  for (const Lesson& lesson : set.lessons) flashcards += lesson.flashcards.size();
  EXPECT_GE(flashcards, 30u);
}

TEST(ShippedLessons, EveryObjectiveHasAnExperimentAndTwoQuestions) {
  for (const std::string objective : {"a", "b", "c"}) {
    int experiments = 0;
    int questions = 0;
    for (const Lesson& lesson : shipped().lessons) {
      const auto& o = lesson.objectives;
      if (std::find(o.begin(), o.end(), objective) == o.end()) continue;
      for (const Step& step : lesson.steps) experiments += step.run.empty() ? 0 : 1;
      questions += static_cast<int>(lesson.questions.size());
    }
    EXPECT_GE(experiments, 1) << "objective " << objective;
    EXPECT_GE(questions, 2) << "objective " << objective;
  }
}

// The prompt and token count a confirm run generates with (its last set_prompt and generate).
struct ConfirmRun {
  std::string prompt;
  int64_t max_tokens = 0;
  std::string kv_type;
};

ConfirmRun confirm_run(const Question& q) {
  ConfirmRun run;
  for (const Action& a : q.confirm->run) {
    if (a.name == "set_prompt") run.prompt = a.value.text;
    if (a.name == "set_kv_type") run.kv_type = a.value.text;
    if (a.name == "generate") run.max_tokens = a.field_integer("max_tokens", 0);
  }
  return run;
}

TEST(ShippedLessons, KvQuestionsRetainTheTokensTheirAnswersAssume) {
  const auto m =
      model::load_model(kBundledModel, compute::BackendChoice(compute::BackendKind::kCpu));
  int checked = 0;
  for (const Question* q : all_questions()) {
    if (q->generator != "kv_bytes" && q->generator != "kv_allocated_bytes") continue;
    SCOPED_TRACE(q->id);
    ASSERT_TRUE(q->confirm.has_value());
    const ConfirmRun run = confirm_run(*q);
    ASSERT_FALSE(run.prompt.empty());
    ASSERT_GT(run.max_tokens, 0);
    EXPECT_EQ(run.kv_type, q->params.at("kv_type"));

    // Greedy, stopping at the end-of-story token as the window does: the run must last.
    m->transformer->set_kv_type(eval::parse_kv_type(run.kv_type));
    serving::EngineRequest request;
    request.prompt_ids = m->require_tokenizer().encode_with_bos(run.prompt);
    request.max_tokens = run.max_tokens;
    request.sampling.greedy = true;
    request.stop_token = m->require_tokenizer().vocabulary().eos_id;
    const serving::GenerationResult result = serving::generate(*m->transformer, request);
    ASSERT_EQ(static_cast<int64_t>(result.generated_ids.size()), run.max_tokens)
        << "the story ends before the confirm run's token count";

    // Retained: the prompt and every generated token but the last, which is never fed back.
    const auto retained = static_cast<int64_t>(request.prompt_ids.size()) + run.max_tokens - 1;
    const int64_t tokens = std::stoll(q->params.at("tokens"));
    EXPECT_EQ(retained, tokens);

    const GeneratedAnswer answer = generate_answer(*q, bundled_facts());
    if (q->generator == "kv_bytes") {
      EXPECT_DOUBLE_EQ(answer.value,
                       kv_bytes_by_hand(m->config, static_cast<double>(tokens), run.kv_type));
    } else {
      const double blocks = std::ceil(static_cast<double>(tokens) / 16.0);
      EXPECT_DOUBLE_EQ(answer.value, kv_bytes_by_hand(m->config, blocks * 16.0, run.kv_type));
      // One token more or fewer (whether the last token is counted) is still the same blocks.
      EXPECT_EQ(std::ceil(static_cast<double>(tokens + 1) / 16.0), blocks);
      EXPECT_EQ(std::ceil(static_cast<double>(tokens - 1) / 16.0), blocks);
    }
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

}  // namespace
}  // namespace servescope::lessons
