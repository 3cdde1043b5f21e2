// The command-line contract of the inspection subcommands (attention, devices, probe,
// kv-error), by running the real binary against independent references.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/cli_runner.h"

namespace {

using nlohmann::json;
using servescope::testing_support::CliRun;
using servescope::testing_support::expect_one_line_refusals;
using servescope::testing_support::run_cli;

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

std::string model(const std::string& name) { return " --model " + kModels + name + ".gguf"; }

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string id_list(const json& ids) {
  std::string text;
  for (const auto& id : ids) text += (text.empty() ? "" : ",") + std::to_string(id.get<int>());
  return text;
}

// One head of one layer, as PyTorch computed it (tools/golden/make_attention_golden.py).
TEST(AttentionCli, PrintsTheWeightsPyTorchComputes) {
  for (const std::string name : {"llama-f32", "gpt2-f32"}) {
    const json golden = read_json(kModels + name + ".attention.json");
    for (const auto& [kv, layer, head] : {std::tuple{"f32", 1, 3}, std::tuple{"q8_0", 0, 2}}) {
      const CliRun run = run_cli(
          "attention" + model(name) + " --ids " + id_list(golden["prompt_ids"]) + " --layer " +
          std::to_string(layer) + " --head " + std::to_string(head) + " --kv-type " + kv);
      ASSERT_EQ(run.exit_code, 0) << run.err;
      const json doc = json::parse(run.out);
      EXPECT_EQ(doc["layer"], layer);
      EXPECT_EQ(doc["head"], head);
      EXPECT_EQ(doc["ids"], golden["prompt_ids"]);
      EXPECT_EQ(doc["pieces"].size(), golden["prompt_ids"].size());
      const json& expected = golden["kv_types"][kv][layer][head];
      ASSERT_EQ(doc["weights"].size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(doc["weights"][i].size(), i + 1);
        for (size_t t = 0; t <= i; ++t) {
          EXPECT_NEAR(doc["weights"][i][t].get<double>(), expected[i][t].get<double>(), 5e-4)
              << name << " " << kv << " row " << i;
        }
      }
    }
  }
}

TEST(AttentionCli, BadInputIsAOneLineReason) {
  const std::string llama = model("llama-f32");
  expect_one_line_refusals({
      {"attention" + llama + " --ids 1,2 --head 0", "needs --layer"},
      {"attention" + llama + " --ids 1,2 --layer 0", "needs --head"},
      {"attention" + llama + " --ids 1,2 --layer 2 --head 0", "--layer 2 is outside the model"},
      {"attention" + llama + " --ids 1,2 --layer 0 --head -1", "--head -1 is below the limit of 0"},
      {"attention" + llama + " --ids 1,2 --prompt 'a' --layer 0 --head 0", "exactly one of"},
      {"attention" + llama + " --ids 1,2 --layer 0 --head 0 --kv-type q4_0", "q4_0"},
      {"attention" + llama + " --ids 1,2 --layer 0 --head 0 --device 1", "one device"},
  });
}

// `vulkaninfo --summary` as an independent account of the Vulkan devices, where installed:
// for each device, its name, driver name and driver info.
std::vector<std::map<std::string, std::string>> vulkaninfo_devices() {
  FILE* pipe = popen("vulkaninfo --summary 2>/dev/null", "r");
  std::string text;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) text.append(buffer.data(), n);
  pclose(pipe);
  std::vector<std::map<std::string, std::string>> devices;
  std::istringstream lines(text.substr(std::min(text.find("Devices:"), text.size())));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("GPU", 0) == 0) devices.emplace_back();
    const size_t equals = line.find(" = ");
    if (devices.empty() || equals == std::string::npos) continue;
    const size_t key_start = line.find_first_not_of(" \t");
    const std::string key = line.substr(key_start, line.find(' ', key_start) - key_start);
    devices.back()[key] = line.substr(equals + 3);
  }
  return devices;
}

TEST(DevicesCli, ListsTheCpuAndTheVulkanDevicesVulkaninfoSees) {
  const CliRun run = run_cli("devices");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["cpu"]["cores"], sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string info{std::istreambuf_iterator<char>(cpuinfo), {}};
  EXPECT_NE(info.find(doc["cpu"]["model_name"].get<std::string>()), std::string::npos);

  if (std::system("command -v vulkaninfo >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "vulkaninfo is not installed: no independent account of the devices";
  }
  const auto expected = vulkaninfo_devices();
  ASSERT_EQ(doc["vulkan"].size(), expected.size());
  int defaults = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const json& d = doc["vulkan"][i];
    EXPECT_EQ(d["name"], expected[i].at("deviceName"));
    EXPECT_EQ(d["driver_name"], expected[i].at("driverName"));
    EXPECT_EQ(d["driver_info"], expected[i].at("driverInfo"));
    EXPECT_EQ(d["api_version"], expected[i].at("apiVersion"));
    EXPECT_GT(d["memory_heaps"].size(), 0u);
    EXPECT_GT(d["subgroup_size"].get<int>(), 0);
    defaults += d["default"].get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(defaults, expected.empty() ? 0 : 1);
}

TEST(DevicesCli, BadInputIsAOneLineReason) {
  expect_one_line_refusals({
      {"devices --model x.gguf", "unknown option --model"},
      {"info" + model("llama-f32") + " --backend vulkan --device 99", "--device 99 does not exist"},
      {"info" + model("llama-f32") + " --device -1", "--device -1 is below the limit of 0"},
  });
}

// The layers of the model, layer 0 holding the rounding alone, F16 far above Q8_0 in SQNR,
// and the same figures on the Vulkan backend as on the CPU (to float32 rounding).
TEST(KvErrorCli, ReportsEveryLayerOnBothBackends) {
  const std::string args = "kv-error" + model("llama-f32") + " --prompt 'Once upon a time'";
  const CliRun f16 = run_cli(args + " --kv-type f16");
  const CliRun q8 = run_cli(args + " --kv-type q8_0");
  const CliRun q8_vulkan = run_cli(args + " --kv-type q8_0 --backend vulkan");
  ASSERT_EQ(f16.exit_code, 0) << f16.err;
  ASSERT_EQ(q8.exit_code, 0) << q8.err;
  const json a = json::parse(f16.out), b = json::parse(q8.out);
  const json info = json::parse(run_cli("info" + model("llama-f32")).out);
  ASSERT_EQ(b["layers"].size(), info["layers"].get<size_t>());
  EXPECT_EQ(b["kv_type"], "q8_0");
  EXPECT_EQ(b["tokens"], b["text_tokens"]);
  EXPECT_EQ(b["layers"][0]["keys"], b["layers"][0]["keys_rounding_only"]);
  for (size_t l = 0; l < b["layers"].size(); ++l) {
    for (const char* side : {"keys", "values"}) {
      EXPECT_GT(a["layers"][l][side]["sqnr_db"].get<double>(),
                b["layers"][l][side]["sqnr_db"].get<double>() + 15.0);
    }
  }
  if (q8_vulkan.exit_code == 0) {
    const json c = json::parse(q8_vulkan.out);
    for (size_t l = 0; l < b["layers"].size(); ++l) {
      EXPECT_NEAR(c["layers"][l]["keys"]["sqnr_db"].get<double>(),
                  b["layers"][l]["keys"]["sqnr_db"].get<double>(), 0.5);
    }
  }
}

TEST(KvErrorCli, BadInputIsAOneLineReason) {
  const std::string llama = model("llama-f32");
  expect_one_line_refusals({
      {"kv-error" + llama + " --prompt 'a'", "needs --kv-type"},
      {"kv-error" + llama + " --prompt 'a' --kv-type f32", "f32 is the reference"},
      {"kv-error" + llama + " --prompt 'a' --kv-type q4_0", "q4_0"},
      {"kv-error" + llama + " --kv-type f16", "exactly one of --prompt"},
      {"kv-error" + llama + " --kv-type f16 --text-file /nonexistent.txt", "/nonexistent.txt"},
  });
}

// Measured, then read from the per-device cache, then measured again with --fresh (the cache
// keeping the higher figures); the working sets sit on either side of the last-level cache that
// `devices` reports.
TEST(ProbeCli, MeasuresCachesAndRemeasures) {
  const std::string dir = testing::TempDir() + "/probe_cli_cache_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  const CliRun first = run_cli("probe");
  const CliRun second = run_cli("probe --backend cpu");
  const CliRun fresh = run_cli("probe --fresh");
  unsetenv("XDG_CACHE_HOME");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const json a = json::parse(first.out), b = json::parse(second.out), c = json::parse(fresh.out);
  EXPECT_FALSE(a["from_cache"].get<bool>());
  // Read from the cache, unless the first probe ran while the machine was busy and it is quiet
  // now: then measured again, keeping the higher figures.
  EXPECT_TRUE(b["from_cache"].get<bool>() || a["measured_busy"].get<bool>());
  EXPECT_FALSE(c["from_cache"].get<bool>());
  for (const char* set : {"in_cache", "beyond_cache"}) {
    EXPECT_GE(b["read_bandwidth"][set]["gb_per_s"].get<double>(),
              a["read_bandwidth"][set]["gb_per_s"].get<double>());
    EXPECT_GE(c["read_bandwidth"][set]["gb_per_s"].get<double>(),
              b["read_bandwidth"][set]["gb_per_s"].get<double>());  // cached roofs only go up
  }
  for (const char* type : {"f32", "f16", "q8_0", "q4_0"}) {
    EXPECT_GE(b["matmul_gflop_per_s"][type].get<double>(),
              a["matmul_gflop_per_s"][type].get<double>());
    EXPECT_GE(c["matmul_gflop_per_s"][type].get<double>(),
              b["matmul_gflop_per_s"][type].get<double>());
  }
  if (b["from_cache"].get<bool>()) {
    EXPECT_EQ(a["read_bandwidth"], b["read_bandwidth"]);
  }
  EXPECT_TRUE(c["raised_by_steps"].is_array());
  EXPECT_EQ(a["cache_file"].get<std::string>().rfind(dir, 0), 0u);
  for (const char* type : {"f32", "f16", "q8_0", "q4_0"}) {
    EXPECT_GT(a["matmul_gflop_per_s"][type].get<double>(), 0.0) << type;
  }
  const json devices = json::parse(run_cli("devices").out);
  const auto llc = devices["cpu"]["last_level_cache_bytes"].get<uint64_t>();
  EXPECT_EQ(a["last_level_cache_bytes"].get<uint64_t>(), llc);
  if (llc > 0) {
    EXPECT_LT(a["read_bandwidth"]["in_cache"]["working_set_bytes"].get<uint64_t>(), llc);
    EXPECT_GT(a["read_bandwidth"]["beyond_cache"]["working_set_bytes"].get<uint64_t>(), llc);
  }
}

TEST(ProbeCli, BadInputIsAOneLineReason) {
  expect_one_line_refusals({
      {"probe --backend tpu", "cpu, vulkan"},
      {"probe --model x.gguf", "unknown option --model"},
      {"probe --device 3", "one device"},
  });
}

}  // namespace
