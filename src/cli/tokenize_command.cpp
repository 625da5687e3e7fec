// dcuserve tokenize: encode text to token ids (or decode ids to text) with a model's tokenizer.json,
// as JSON, for checking prompts against other implementations.
//   --text TEXT            prints the ids of TEXT:                 [9707, 0]
//   (no --text)            reads ["a", "b"] from stdin, prints     [[64], [65]]
//   --decode --text IDS    prints the text of a JSON id array:     "Hello!"
//   --decode (no --text)   reads [[1, 2], [3]] from stdin, prints  ["..", ".."]

#include <cstdio>
#include <iostream>
#include <iterator>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "text/tokenizer.h"

namespace dcu {
namespace {

struct TokenizeArgs {
  std::string tokenizer;
  std::optional<std::string> text;
  bool decode = false;
};

nlohmann::json parse_json(const std::string& text, const char* what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("{} is not valid JSON: {}", what, e.what());
  }
}

std::vector<int32_t> parse_ids(const nlohmann::json& value) {
  if (!value.is_array()) fail("expected a JSON array of token ids, got {}", value.dump());
  std::vector<int32_t> ids;
  for (const auto& id : value) {
    if (!id.is_number_integer()) fail("token ids must be integers, got {}", id.dump());
    ids.push_back(id.get<int32_t>());
  }
  return ids;
}

nlohmann::json transform(const text::Tokenizer& tokenizer, const nlohmann::json& input, bool decode) {
  if (decode) return tokenizer.decode(parse_ids(input), false);
  if (!input.is_string()) fail("expected a JSON string to encode, got {}", input.dump());
  return tokenizer.encode(input.get_ref<const std::string&>());
}

void run_tokenize(const TokenizeArgs& args) {
  const text::Tokenizer tokenizer = text::Tokenizer::load(args.tokenizer);
  nlohmann::json output;
  if (args.text) {
    output = transform(tokenizer, args.decode ? parse_json(*args.text, "--text") : nlohmann::json(*args.text),
                       args.decode);
  } else {
    const std::string stdin_text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    const nlohmann::json inputs = parse_json(stdin_text, "standard input");
    if (!inputs.is_array()) fail("standard input must be a JSON array");
    output = nlohmann::json::array();
    for (const auto& input : inputs) output.push_back(transform(tokenizer, input, args.decode));
  }
  std::printf("%s\n", output.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* command = app.add_subcommand("tokenize", "Encode text to token ids, or decode ids, as JSON");
  command->add_option("--tokenizer", args->tokenizer, "tokenizer.json, or a model folder holding one")->required();
  command->add_option("--text", args->text, "text to encode (a JSON id array with --decode); default: stdin");
  command->add_flag("--decode", args->decode, "decode token ids to text instead of encoding");
  command->callback([args] { run_tokenize(*args); });
}

}  // namespace dcu
