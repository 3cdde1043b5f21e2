// Token ids of the golden vocabularies against independent references: SentencePiece's own
// encoder for "llama", a straightforward Python byte-level BPE (regex module) for "gpt2",
// also with llama 3's and qwen2's pre-tokenisers (tokenizer.ggml.pre "llama-bpe", "qwen2").
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/tokenizer/test_vocabularies.h"

namespace servescope {
namespace {

struct GoldenVocabulary {
  const char* name;
  const char* gguf;
  const char* expected;
};

class ReferenceIds : public ::testing::TestWithParam<GoldenVocabulary> {
 protected:
  void SetUp() override {
    tokenizer_ = test::load_golden_tokenizer(GetParam().gguf);
    cases_ = test::load_expected(GetParam().expected);
  }
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<test::ExpectedCase> cases_;
};

TEST_P(ReferenceIds, VocabularyHas512Tokens) { EXPECT_EQ(tokenizer_->size(), 512); }

TEST_P(ReferenceIds, EncodeMatchesTheReference) {
  ASSERT_GE(cases_.size(), 20u);
  for (const test::ExpectedCase& c : cases_) {
    EXPECT_EQ(tokenizer_->encode(c.text), c.ids) << "text: \"" << c.text << "\"";
  }
}

TEST_P(ReferenceIds, DecodeInvertsEncode) {
  for (const test::ExpectedCase& c : cases_) {
    EXPECT_EQ(tokenizer_->decode(c.ids), c.text) << "text: \"" << c.text << "\"";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Golden, ReferenceIds,
    ::testing::Values(
        GoldenVocabulary{"Llama", "llama-spm.gguf", "llama-spm-expected.json"},
        GoldenVocabulary{"Gpt2", "gpt2-bpe.gguf", "gpt2-bpe-expected.json"},
        GoldenVocabulary{"Gpt2PreLlama3", "llama3-bpe.gguf", "llama3-bpe-expected.json"},
        GoldenVocabulary{"Gpt2PreQwen2", "qwen2-bpe.gguf", "qwen2-bpe-expected.json"}),
    [](const ::testing::TestParamInfo<GoldenVocabulary>& param_info) {
      return std::string(param_info.param.name);
    });

TEST(LlamaTokenizer, LoadsMetadataFromGguf) {
  const Vocabulary vocab =
      vocabulary_from_gguf(gguf::GgufFile::open(test::tokenizer_data("llama-spm.gguf")));
  EXPECT_EQ(vocab.model, "llama");
  EXPECT_EQ(vocab.tokens.size(), 512u);
  EXPECT_EQ(vocab.tokens[1], "<s>");
  EXPECT_EQ(vocab.types[1], TokenType::kControl);
  EXPECT_EQ(vocab.types[0], TokenType::kUnknown);
  EXPECT_EQ(vocab.types[3], TokenType::kByte);
  EXPECT_EQ(vocab.bos_id, 1);
  EXPECT_EQ(vocab.eos_id, 2);
  EXPECT_EQ(vocab.unknown_id, 0);
  EXPECT_TRUE(vocab.add_bos);
  EXPECT_TRUE(vocab.add_space_prefix);
  EXPECT_TRUE(vocab.merges.empty());
}

TEST(LlamaTokenizer, EncodeWithBosPrependsBos) {
  const auto tokenizer = test::load_golden_tokenizer("llama-spm.gguf");
  const std::vector<int32_t> ids = tokenizer->encode_with_bos("Hello world");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(std::vector<int32_t>(ids.begin() + 1, ids.end()), tokenizer->encode("Hello world"));
  EXPECT_EQ(tokenizer->decode(ids), "Hello world");  // BOS stands for no text
}

TEST(LlamaTokenizer, PiecesAndTheirBytes) {
  const auto tokenizer = test::load_golden_tokenizer("llama-spm.gguf");
  EXPECT_EQ(tokenizer->piece(1), "<s>");
  EXPECT_EQ(tokenizer->token_bytes(1), "");
  EXPECT_EQ(tokenizer->piece(3 + 0x0A), "<0x0A>");
  EXPECT_EQ(tokenizer->token_bytes(3 + 0x0A), "\n");
  const std::vector<int32_t> the = tokenizer->encode("the");
  ASSERT_EQ(the.size(), 1u);
  EXPECT_EQ(tokenizer->piece(the[0]), "\xE2\x96\x81the");
  EXPECT_EQ(tokenizer->token_bytes(the[0]), " the");
  EXPECT_THROW(tokenizer->token_bytes(512), InputError);
  EXPECT_THROW(tokenizer->token_bytes(-1), InputError);
  EXPECT_THROW(tokenizer->piece(512), InputError);
}

TEST(LlamaTokenizer, CharactersOutsideTheVocabularyFallBackToBytes) {
  const auto tokenizer = test::load_golden_tokenizer("llama-spm.gguf");
  // 日 = E6 97 A5; byte token of byte b is id 3 + b in a SentencePiece byte-fallback model.
  const std::vector<int32_t> ids = tokenizer->encode("\xE6\x97\xA5");
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(tokenizer->piece(ids[0]), "\xE2\x96\x81");
  EXPECT_EQ(std::vector<int32_t>(ids.begin() + 1, ids.end()),
            (std::vector<int32_t>{3 + 0xE6, 3 + 0x97, 3 + 0xA5}));
}

TEST(Gpt2Tokenizer, LoadsMetadataFromGguf) {
  const Vocabulary vocab =
      vocabulary_from_gguf(gguf::GgufFile::open(test::tokenizer_data("gpt2-bpe.gguf")));
  EXPECT_EQ(vocab.model, "gpt2");
  EXPECT_EQ(vocab.tokens.size(), 512u);
  EXPECT_EQ(vocab.merges.size(), 512u - 257u);
  EXPECT_EQ(vocab.tokens[511], "<|endoftext|>");
  EXPECT_EQ(vocab.bos_id, 511);
  EXPECT_EQ(vocab.unknown_id, -1);
  EXPECT_FALSE(vocab.add_bos);
}

TEST(Gpt2Tokenizer, BytesDecodeThroughTheByteMap) {
  const auto tokenizer = test::load_golden_tokenizer("gpt2-bpe.gguf");
  EXPECT_EQ(tokenizer->piece(' '), "\xC4\xA0");  // Ġ
  EXPECT_EQ(tokenizer->token_bytes(' '), " ");
  EXPECT_EQ(tokenizer->piece('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(tokenizer->token_bytes(0xE6), "\xE6");
  EXPECT_EQ(tokenizer->token_bytes(511), "");  // <|endoftext|> is a control token
  EXPECT_EQ(tokenizer->encode_with_bos("hi"), tokenizer->encode("hi"));  // add_bos is off
  // Special tokens written in the text are plain text.
  const std::vector<int32_t> ids = tokenizer->encode("<|endoftext|>");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 511), 0);
  EXPECT_EQ(tokenizer->decode(ids), "<|endoftext|>");
}

TEST(Gpt2Tokenizer, PreTokeniserComesFromTheFile) {
  const auto pre_of = [](const char* name) {
    return vocabulary_from_gguf(gguf::GgufFile::open(test::tokenizer_data(name))).pre;
  };
  EXPECT_EQ(pre_of("gpt2-bpe.gguf"), "");
  EXPECT_EQ(pre_of("llama3-bpe.gguf"), "llama-bpe");
  EXPECT_EQ(pre_of("qwen2-bpe.gguf"), "qwen2");
  // GPT-2 lets a space lead a number (the merge "Ġ 1"); llama 3 keeps digits apart.
  EXPECT_EQ(test::load_golden_tokenizer("gpt2-bpe.gguf")->encode(" 1").size(), 1u);
  EXPECT_EQ(test::load_golden_tokenizer("llama3-bpe.gguf")->encode(" 1"),
            (std::vector<int32_t>{' ', '1'}));
}

// The golden vocabulary's byte tokens plus "abc", which no merge makes.
Vocabulary bytes_and_abc(const std::string& pre) {
  Vocabulary vocab =
      vocabulary_from_gguf(gguf::GgufFile::open(test::tokenizer_data("gpt2-bpe.gguf")));
  vocab.tokens.resize(256);
  vocab.tokens.push_back("abc");
  vocab.scores.assign(vocab.tokens.size(), 0.0f);
  vocab.types.assign(vocab.tokens.size(), TokenType::kNormal);
  vocab.merges.clear();
  vocab.bos_id = vocab.eos_id = -1;
  vocab.pre = pre;
  return vocab;
}

TEST(Gpt2Tokenizer, LlamaBpeTakesAWordThatIsATokenWhole) {
  // llama 3's tokenizer.json has "ignore_merges"; dbrx uses the same expression without it.
  EXPECT_EQ(make_tokenizer(bytes_and_abc("llama-bpe"))->encode("abc"), (std::vector<int32_t>{256}));
  EXPECT_EQ(make_tokenizer(bytes_and_abc("dbrx"))->encode("abc"),
            (std::vector<int32_t>{'a', 'b', 'c'}));
}

TEST(Tokenizers, RejectInvalidUtf8WithTheByteOffset) {
  for (const char* name : {"llama-spm.gguf", "gpt2-bpe.gguf"}) {
    const auto tokenizer = test::load_golden_tokenizer(name);
    try {
      tokenizer->encode("ok \xC3\xA9 \xE6\x97 then");
      ADD_FAILURE() << name << ": no InputError";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("byte offset 6"), std::string::npos) << e.what();
    }
    EXPECT_THROW(tokenizer->encode("\xFF"), InputError);
    EXPECT_THROW(tokenizer->encode("a\xC0\x80"), InputError);  // overlong NUL
  }
}

}  // namespace
}  // namespace servescope
