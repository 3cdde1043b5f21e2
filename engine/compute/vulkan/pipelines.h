// One compute pipeline per embedded shader, created on first use. Every pipeline's layout is
// `binding_count` storage buffers in set 0 plus up to 128 bytes of push constants (the shapes).
#pragma once

#include <vulkan/vulkan.h>

#include <map>
#include <memory>
#include <span>
#include <string>

#include "engine/compute/vulkan/vulkan_context.h"

namespace servescope::compute::vulkan {

struct Pipeline {
  std::string name;
  uint32_t binding_count = 0;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
};

constexpr uint32_t kPushConstantBytes = 128;  // the minimum every device guarantees

class Pipelines {
 public:
  explicit Pipelines(std::shared_ptr<VulkanContext> context) : context_(std::move(context)) {}
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  // The pipeline of shader `name` (e.g. "matmul_vec_q4_0"), with specialization constants
  // 0, 1, ... set to `constants`; BackendError if no such shader.
  const Pipeline& get(const std::string& name, uint32_t binding_count,
                      std::span<const uint32_t> constants = {});
  // Pipelines compiled so far: a test that a warmed-up backend compiles nothing more.
  size_t size() const { return pipelines_.size(); }

 private:
  std::shared_ptr<VulkanContext> context_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
};

}  // namespace servescope::compute::vulkan
