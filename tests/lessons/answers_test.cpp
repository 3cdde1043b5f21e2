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
  const AnswerResult wrong = check_number(272000, 0.02, "bytes", "300000");
  EXPECT_EQ(wrong.score, 0);
  EXPECT_THAT(wrong.feedback, testing::HasSubstr("272,000 bytes (265.6 KiB)"));
  EXPECT_THAT(wrong.feedback, testing::HasSubstr("within 2%"));
  const AnswerResult unreadable = check_number(1.85, 0.05, "ms", "fast");
  EXPECT_FALSE(unreadable.correct);
  EXPECT_THAT(unreadable.feedback, testing::HasSubstr("not a number"));
}

TEST(Answers, EachByteUnitIsReadExactly) {
  EXPECT_DOUBLE_EQ(parse_number_answer("500 B", "bytes").value(), 500);
  EXPECT_DOUBLE_EQ(parse_number_answer("500 kB", "bytes").value(), 500'000);
  EXPECT_DOUBLE_EQ(parse_number_answer("500 KB", "bytes").value(), 500'000);  // KB is kB
  EXPECT_DOUBLE_EQ(parse_number_answer("500 KiB", "bytes").value(), 512'000);
  EXPECT_DOUBLE_EQ(parse_number_answer("5 MB", "bytes").value(), 5'000'000);
  EXPECT_DOUBLE_EQ(parse_number_answer("5 MiB", "bytes").value(), 5'242'880);
  EXPECT_DOUBLE_EQ(parse_number_answer("2 GB", "bytes").value(), 2e9);
  EXPECT_DOUBLE_EQ(parse_number_answer("2 GiB", "bytes").value(), 2'147'483'648);
  EXPECT_DOUBLE_EQ(parse_number_answer("2 gib", "bytes").value(), 2'147'483'648);
  std::string why;
  EXPECT_FALSE(parse_number_answer("2 GiBs", "bytes", &why));
  EXPECT_THAT(why, testing::HasSubstr("'gibs' is not a unit of bytes"));
}

TEST(Answers, ADecimalUnitForABinaryAnswerSaysWhichIsWhich) {
  // 500 KB is 500,000 bytes: 2.3% under 512,000, outside 2%; 500 KiB was meant.
  const AnswerResult kb = check_number(512'000, 0.02, "bytes", "500 KB");
  EXPECT_FALSE(kb.correct);
  EXPECT_EQ(kb.feedback,
            "Not quite: your 500 KB is 500,000 bytes; the answer is 512,000 bytes = 500 KiB: "
            "KB means 1,000 bytes, KiB 1,024.");
  const AnswerResult mb = check_number(5 * 1024 * 1024, 0, "bytes", "5 MB");
  EXPECT_EQ(mb.feedback,
            "Not quite: your 5 MB is 5,000,000 bytes; the answer is 5,242,880 bytes = 5 MiB: "
            "MB means 1,000,000 bytes, MiB 1,048,576.");
  EXPECT_TRUE(check_number(512'000, 0.02, "bytes", "500 KiB").correct);
}

TEST(Answers, ABinaryUnitForADecimalAnswerSaysWhichIsWhich) {
  const AnswerResult kib = check_number(500'000, 0.02, "bytes", "500 KiB");
  EXPECT_EQ(kib.feedback,
            "Not quite: your 500 KiB is 512,000 bytes; the answer is 500,000 bytes = 500 kB: "
            "KiB means 1,024 bytes, kB 1,000.");
  const AnswerResult gib = check_number(2e9, 0.01, "bytes", "2 GiB");
  EXPECT_THAT(gib.feedback, testing::HasSubstr("the answer is 2,000,000,000 bytes = 2 GB"));
}

TEST(Answers, BytesOffBy1024Over1000InTheWorkingSaySo) {
  // 512,000 / 1.024^2: the learner divided by 1000 twice where 1024 belonged, typed as bytes.
  const AnswerResult under = check_number(512'000, 0.01, "bytes", "488281.25");
  EXPECT_THAT(under.feedback, testing::HasSubstr("divided by (1024/1000)^2"));
  EXPECT_THAT(under.feedback, testing::HasSubstr("a 1000 where a 1024 belongs"));
  const AnswerResult over = check_number(500'000, 0.01, "bytes", "512,000 bytes");
  EXPECT_THAT(over.feedback, testing::HasSubstr("times 1024/1000"));
  EXPECT_THAT(over.feedback, testing::HasSubstr("a 1024 where a 1000 belongs"));
}

TEST(Answers, HalfOrTwiceTheAnswerSaysAFactorOf2) {
  const AnswerResult half = check_number(272000, 0.02, "bytes", "136000");
  EXPECT_EQ(half.feedback,
            "Not quite: your 136,000 bytes (132.8 KiB) is half the answer, 272,000 bytes "
            "(265.6 KiB): a factor of 2 is missing.");
  const AnswerResult twice = check_number(1.85, 0.05, "ms", "3.7 ms");
  EXPECT_EQ(twice.feedback,
            "Not quite: your 3.7 ms is twice the answer, 1.85 ms: a factor of 2 too many.");
  // Neither slip: the plain comparison.
  EXPECT_THAT(check_number(1.85, 0.05, "ms", "3 ms").feedback, testing::HasSubstr("against"));
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
