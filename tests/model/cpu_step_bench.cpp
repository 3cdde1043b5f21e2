// servescope-cpu-step-bench: whole forward passes of a model on the CPU backend, in one process,
// so that a profiler (perf record) or an A/B of two builds sees the steps and not a process's
// start-up. Not a test (timings live in benchmarks). Per round: a prefill of --prompt tokens
// into an empty cache, then --decode single-token steps; it prints the median and best prefill
// tokens/s and decode step tokens/s over the rounds (the first round untimed, as a warm-up).
//
//   servescope-cpu-step-bench --model M.gguf [--threads N] [--int8 1] [--prompt P]
//                             [--decode D] [--rounds R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/model.h"

namespace {

struct Options {
  std::string model;
  int threads = 0;
  bool int8 = false;
  int64_t prompt = 128;
  int64_t decode = 64;
  int rounds = 20;
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--model") {
      options.model = argv[i + 1];
      continue;
    }
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--threads") options.threads = static_cast<int>(std::max(0L, value));
    if (flag == "--int8") options.int8 = value != 0;
    if (flag == "--prompt") options.prompt = std::max(1L, value);
    if (flag == "--decode") options.decode = std::max(0L, value);
    if (flag == "--rounds") options.rounds = static_cast<int>(std::max(1L, value));
  }
  return options;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  if (options.model.empty()) {
    std::fprintf(stderr,
                 "usage: servescope-cpu-step-bench --model M.gguf [--threads N] [--int8 1] "
                 "[--prompt P] [--decode D] [--rounds R]\n");
    return 2;
  }
  servescope::compute::BackendChoice choice;
  choice.threads = options.threads;
  choice.quantised_activations = options.int8;
  const auto model = servescope::model::load_model(options.model, choice);
  auto& transformer = *model->transformer;
  const auto vocab = static_cast<int32_t>(model->config.vocab_size);

  std::vector<int32_t> prompt(static_cast<size_t>(options.prompt));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((100 + i) % vocab);
  const int64_t capacity = options.prompt + options.decode;

  std::vector<double> prefill_seconds;
  std::vector<double> decode_seconds;  // one entry per round: its decode steps together
  for (int round = 0; round <= options.rounds; ++round) {
    auto cache = transformer.new_cache(capacity);
    const auto prefill_start = std::chrono::steady_clock::now();
    std::vector<float> logits = transformer.forward(prompt, cache);
    const double prefill = seconds_since(prefill_start);
    const auto decode_start = std::chrono::steady_clock::now();
    for (int64_t step = 0; step < options.decode; ++step) {
      const auto next =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      logits = transformer.forward(std::span(&next, 1), cache);
    }
    const double decode = seconds_since(decode_start);
    if (round == 0) continue;  // the warm-up
    prefill_seconds.push_back(prefill);
    decode_seconds.push_back(decode);
  }
  const auto tokens_per_s = [](double tokens, double seconds) { return tokens / seconds; };
  const auto prompt_tokens = static_cast<double>(options.prompt);
  std::printf("prefill %lld tokens: median %.0f, best %.0f tokens/s\n",
              static_cast<long long>(options.prompt),
              tokens_per_s(prompt_tokens, median(prefill_seconds)),
              tokens_per_s(prompt_tokens,
                           *std::min_element(prefill_seconds.begin(), prefill_seconds.end())));
  if (options.decode > 0) {
    const auto steps = static_cast<double>(options.decode);
    std::printf(
        "decode %lld steps: median %.0f, best %.0f tokens/s\n",
        static_cast<long long>(options.decode), tokens_per_s(steps, median(decode_seconds)),
        tokens_per_s(steps, *std::min_element(decode_seconds.begin(), decode_seconds.end())));
  }
  return 0;
}
