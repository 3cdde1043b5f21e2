// servescope-cli tokenize: the token ids and pieces of a text.
#include <ostream>

#include "app/cli/command_support.h"

namespace servescope::cli {

using nlohmann::json;

int run_tokenize(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"text"}, {"no-bos"}}));
  if (!options.has("text")) throw UsageError("tokenize needs --text TEXT");
  const auto m = open_model(options);
  const Tokenizer& tokenizer = m->require_tokenizer();
  const std::string text = *options.get("text");
  const std::vector<int32_t> ids =
      options.has("no-bos") ? tokenizer.encode(text) : tokenizer.encode_with_bos(text);
  json pieces = json::array();
  for (const int32_t id : ids) pieces.push_back(tokenizer.piece(id));
  out << json{{"ids", ids}, {"pieces", pieces}}.dump() << "\n";
  return 0;
}

}  // namespace servescope::cli
