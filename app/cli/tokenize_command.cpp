// servescope-cli tokenize: the token ids and pieces of a text. Special tokens written in the
// text (e.g. "<|endoftext|>") are plain text unless --parse-special is given.
#include <ostream>

#include "app/cli/command_support.h"

namespace servescope::cli {

using nlohmann::json;

int run_tokenize(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"text"}, {"no-bos", "parse-special"}}));
  if (!options.has("text")) throw UsageError("tokenize needs --text TEXT");
  const auto m = open_model(options);
  const Tokenizer& tokenizer = m->require_tokenizer();
  const std::string text = *options.get("text");
  const SpecialTokens special =
      options.has("parse-special") ? SpecialTokens::kParse : SpecialTokens::kAsText;
  const std::vector<int32_t> ids = options.has("no-bos") ? tokenizer.encode(text, special)
                                                         : tokenizer.encode_with_bos(text, special);
  json pieces = json::array();
  for (const int32_t id : ids) pieces.push_back(tokenizer.piece(id));
  out << json{{"ids", ids}, {"pieces", pieces}}.dump() << "\n";
  return 0;
}

}  // namespace servescope::cli
