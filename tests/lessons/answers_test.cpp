#include "app/lessons/answers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace servescope::lessons {
namespace {

TEST(Answers, NumbersAreReadWithSeparatorsAndConvertedFromTheirUnit) {
  EXPECT_DOUBLE_EQ(parse_number_answer("272,000", "bytes").value(), 272000);
  EXPECT_DOUBLE_EQ(parse_number_answer(" 272000 bytes ", "bytes").value(), 272000);
  EXPECT_DOUBLE_EQ(parse_number_answer("265.625 KiB", "bytes").value(), 272000);
  EXPECT_DOUBLE_EQ(parse_number_answer("0.272 MB", "bytes").value(), 272000);
  EXPECT_DOUBLE_EQ(parse_number_answer("2.72e5", "bytes").value(), 272000);
  EXPECT_DOUBLE_EQ(parse_number_answer("1.85ms", "ms").value(), 1.85);
  EXPECT_DOUBLE_EQ(parse_number_answer("0.002 s", "ms").value(), 2);
  EXPECT_DOUBLE_EQ(parse_number_answer("2x", "x").value(), 2);
  EXPECT_DOUBLE_EQ(parse_number_answer("-3", "x").value(), -3);
  EXPECT_DOUBLE_EQ(parse_number_answer("74 requests", "requests").value(), 74);
}

TEST(Answers, SayWhyATypedAnswerIsNotANumberInTheUnit) {
  std::string why;
  EXPECT_FALSE(parse_number_answer("lots", "bytes", &why));
  EXPECT_THAT(why, testing::HasSubstr("'lots' is not a number"));
  EXPECT_FALSE(parse_number_answer("3 ms", "bytes", &why));
  EXPECT_THAT(why, testing::HasSubstr("'ms' is not a unit of bytes"));
  EXPECT_FALSE(parse_number_answer("", "x", &why));
}

TEST(Answers, NumbersCountWithinTheRelativeTolerance) {
  // 2% of 272,000 is 5,440.
  EXPECT_TRUE(check_number(272000, 0.02, "bytes", "277440").correct);
  EXPECT_FALSE(check_number(272000, 0.02, "bytes", "277441").correct);
  EXPECT_TRUE(check_number(272000, 0.02, "bytes", "266560 bytes").correct);
  EXPECT_FALSE(check_number(272000, 0.02, "bytes", "266559").correct);
  EXPECT_TRUE(check_number(272000, 0.02, "bytes", "265.6 KiB").correct);
  const AnswerResult wrong = check_number(272000, 0.02, "bytes", "136000");
  EXPECT_EQ(wrong.score, 0);
  EXPECT_THAT(wrong.feedback, testing::HasSubstr("272,000 bytes (265.6 KiB)"));
  EXPECT_THAT(wrong.feedback, testing::HasSubstr("within 2%"));
  const AnswerResult unreadable = check_number(1.85, 0.05, "ms", "fast");
  EXPECT_FALSE(unreadable.correct);
  EXPECT_THAT(unreadable.feedback, testing::HasSubstr("not a number"));
}

TEST(Answers, GeneratedQuestionsAreMarkedAgainstTheGeneratedValue) {
  Question q;
  q.kind = QuestionKind::kNumber;
  q.generator = "kv_bytes";
  q.unit = "bytes";
  q.tolerance = 0.01;
  GeneratedAnswer generated;
  generated.value = 272000;
  generated.unit = "bytes";
  EXPECT_TRUE(check_number(q, &generated, "272000").correct);
  EXPECT_FALSE(check_number(q, &generated, "300000").correct);
  EXPECT_FALSE(check_number(q, nullptr, "272000").correct);
  q.generator.clear();
  q.number_answer = 2.0;
  q.unit = "x";
  q.tolerance = 0.05;
  EXPECT_TRUE(check_number(q, nullptr, "2.09").correct);
  EXPECT_FALSE(check_number(q, nullptr, "2.11").correct);
}

TEST(Answers, ChoicesAndSelfMarkedExplanations) {
  Question choice;
  choice.options = {"The weights", "The KV cache"};
  choice.choice_answer = 1;
  EXPECT_TRUE(check_choice(choice, 1).correct);
  const AnswerResult wrong = check_choice(choice, 0);
  EXPECT_FALSE(wrong.correct);
  EXPECT_THAT(wrong.feedback, testing::HasSubstr("The KV cache"));

  Question explain;
  explain.self_check = {"keys and values", "reuse", "per layer"};
  EXPECT_DOUBLE_EQ(self_marked(explain, {true, false, true}).score, 2.0 / 3);
  EXPECT_FALSE(self_marked(explain, {true, false, true}).correct);
  EXPECT_TRUE(self_marked(explain, {true, true, true}).correct);
}

}  // namespace
}  // namespace servescope::lessons
