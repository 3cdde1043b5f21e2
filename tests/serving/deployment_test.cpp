// "Here and there": the engine's formulas on published shapes and datasheet devices, checked
// against figures worked out here by hand and against the parameter counts the models'
// publishers state (Llama 3 8B: 8,030,261,248; 70B: 70,553,706,496; Qwen2.5 7B: 7,615,616,512).
#include "engine/serving/deployment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "app/common/deployments_file.h"
#include "engine/core/error.h"

namespace servescope::serving {
namespace {

const std::filesystem::path kShipped =
    std::filesystem::path(SERVESCOPE_SOURCE_DIR) / "assets/deployments/deployments.json";

const app::PublishedModel& model_named(const app::DeploymentData& data, const std::string& name) {
  for (const app::PublishedModel& m : data.models) {
    if (m.name == name) return m;
  }
  throw std::runtime_error("no model " + name);
}

const DeviceSpec& device_named(const app::DeploymentData& data, const std::string& prefix) {
  for (const DeviceSpec& d : data.devices) {
    if (d.name.rfind(prefix, 0) == 0) return d;
  }
  throw std::runtime_error("no device " + prefix);
}

TEST(Deployment, ParameterCountsFromTheShippedShapesAreThePublishedOnes) {
  const app::DeploymentData data = app::read_deployments(kShipped);
  EXPECT_EQ(parameter_count(model_named(data, "Llama 3 8B").shape), 8'030'261'248);
  EXPECT_EQ(parameter_count(model_named(data, "Llama 3 70B").shape), 70'553'706'496);
  EXPECT_EQ(parameter_count(model_named(data, "Qwen2.5 7B").shape), 7'615'616'512);
}

TEST(Deployment, Llama3EightBOnAnH100MatchesTheArithmeticByHand) {
  const app::DeploymentData data = app::read_deployments(kShipped);
  const model::ModelConfig& shape = model_named(data, "Llama 3 8B").shape;
  const DeviceSpec& h100 = device_named(data, "NVIDIA H100");
  const int64_t context = 4096;
  const DeploymentFigures f =
      deployment_figures(shape, gguf::GgmlType::F16, gguf::GgmlType::F16, h100, context);

  const double weights = 8'030'261'248.0 * 2;  // F16: 2 bytes per parameter
  EXPECT_EQ(f.weight_bytes, static_cast<uint64_t>(weights));
  const double kv_per_token = 2.0 * 32 * 8 * 128 * 2;  // K and V, layers, kv heads x head dim
  EXPECT_EQ(f.kv_bytes_per_token, static_cast<uint64_t>(kv_per_token));
  EXPECT_EQ(f.kv_bytes_per_request, static_cast<uint64_t>(kv_per_token * context));

  // One decode step: the weights once, less the embedding table but for the one row gathered;
  // the request's whole cache read (its new token included) and the new token written.
  const double embedding_table = 128256.0 * 4096 * 2;
  const double step_bytes =
      weights - embedding_table + 4096 * 2 + kv_per_token * context + kv_per_token;
  EXPECT_EQ(static_cast<double>(f.decode_bytes), step_bytes);
  EXPECT_NEAR(f.decode_floor_ms, step_bytes / 3350e9 * 1e3, 1e-9);
  EXPECT_FALSE(f.decode_compute_bound);
  EXPECT_NEAR(f.ridge_flop_per_byte, 989e12 / 3350e9, 1e-9);
  // (80 GB - weights) / one request's cache at 4,096 tokens.
  EXPECT_EQ(f.requests_that_fit,
            static_cast<int64_t>(std::floor((80e9 - weights) / (kv_per_token * context))));
  EXPECT_TRUE(f.weights_fit);

  // Every request at 4,096 tokens reads 512 MiB of cache per step for 17 GFLOP: the batch's
  // bytes grow as fast as its FLOPs, and compute never takes over.
  EXPECT_FALSE(f.compute_bound_batch.has_value());
}

// The batch where compute takes over, by the closed form: B x flops per token / peak >
// (weights + B x bytes per token) / bandwidth, so B > (weights / bandwidth) / (flops per token
// / peak - bytes per token / bandwidth).
TEST(Deployment, ComputeTakesOverAtTheBatchTheClosedFormGives) {
  const app::DeploymentData data = app::read_deployments(kShipped);
  const model::ModelConfig& shape = model_named(data, "Llama 3 8B").shape;
  const DeviceSpec& a100 = device_named(data, "NVIDIA A100");
  const int64_t context = 16;
  const DeploymentFigures f =
      deployment_figures(shape, gguf::GgmlType::Q8_0, gguf::GgmlType::F16, a100, context);
  const double kv_per_token = 2.0 * 32 * 8 * 128 * 2;
  const double per_token_bytes = kv_per_token * (context + 1);
  const double matmul =
      2.0 * 32 * (4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 3 * 4096.0 * 14336);
  const double per_token_flops = matmul + 2.0 * 4096 * 128256 + 4.0 * 32 * 128 * 32 * context;
  const double embedding_table = 128256.0 * 4096 * 34 / 32;
  const double shared_bytes = static_cast<double>(f.weight_bytes) - embedding_table;
  // Each request also gathers its own embedding row.
  const double own_bytes = per_token_bytes + 4096.0 * 34 / 32;
  const double batch = (shared_bytes / 2039e9) / (per_token_flops / 312e12 - own_bytes / 2039e9);
  ASSERT_TRUE(f.compute_bound_batch.has_value());
  EXPECT_EQ(*f.compute_bound_batch, static_cast<int64_t>(std::floor(batch)) + 1);
}

TEST(Deployment, WeightsThatDoNotFitLeaveNoRoomForRequests) {
  const app::DeploymentData data = app::read_deployments(kShipped);
  const DeploymentFigures f =
      deployment_figures(model_named(data, "Llama 3 70B").shape, gguf::GgmlType::F16,
                         gguf::GgmlType::F16, device_named(data, "NVIDIA GeForce RTX 4090"), 4096);
  EXPECT_FALSE(f.weights_fit);
  EXPECT_EQ(f.requests_that_fit, 0);
}

TEST(Deployment, ABadFileIsRefusedNamingTheEntryAndTheFigure) {
  const auto refused = [](const std::string& json) {
    try {
      app::parse_deployments(json, "mine.json");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused("{").find("mine.json is not valid JSON"), std::string::npos);
  EXPECT_NE(refused(R"({"devices": [{"name": "X", "memory_gb": -1}]})")
                .find("devices[0] (X): \"memory_gb\" must be a positive number"),
            std::string::npos);
  EXPECT_NE(refused(R"({"models": [{"name": "M", "source": "s", "layers": 2.5}]})")
                .find("\"layers\" must be a whole number"),
            std::string::npos);
  // What the user added round-trips through the same format.
  const app::DeploymentData shipped = app::read_deployments(kShipped);
  const app::DeploymentData again =
      app::parse_deployments(app::deployments_json(shipped), "round trip");
  ASSERT_EQ(again.models.size(), shipped.models.size());
  ASSERT_EQ(again.devices.size(), shipped.devices.size());
  EXPECT_EQ(parameter_count(again.models[2].shape), parameter_count(shipped.models[2].shape));
  EXPECT_EQ(again.devices[0].bandwidth_gb_per_s, shipped.devices[0].bandwidth_gb_per_s);
}

}  // namespace
}  // namespace servescope::serving
