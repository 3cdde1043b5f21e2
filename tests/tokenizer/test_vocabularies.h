// Shared helpers: the golden GGUF vocabularies and their expected ids (tests/data/tokenizer,
// made by tools/golden/make_tokenizer_data.py).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace servescope::test {

inline std::filesystem::path tokenizer_data(const std::string& name) {
  return std::filesystem::path(SERVESCOPE_TEST_DATA_DIR) / "tokenizer" / name;
}

inline std::unique_ptr<Tokenizer> load_golden_tokenizer(const std::string& gguf_name) {
  return load_tokenizer(gguf::GgufFile::open(tokenizer_data(gguf_name)));
}

struct ExpectedCase {
  std::string text;
  std::vector<int32_t> ids;
};

inline std::vector<ExpectedCase> load_expected(const std::string& json_name) {
  std::ifstream in(tokenizer_data(json_name));
  const nlohmann::json body = nlohmann::json::parse(in);
  std::vector<ExpectedCase> cases;
  for (const auto& item : body.at("cases")) {
    cases.push_back({item.at("text").get<std::string>(), item.at("ids").get<std::vector<int32_t>>()});
  }
  return cases;
}

}  // namespace servescope::test
