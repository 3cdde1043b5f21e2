#include "engine/compute/vulkan/pipelines.h"

#include <algorithm>
#include <vector>

#include "engine/compute/vulkan/vulkan_check.h"
#include "engine/compute/vulkan/vulkan_functions.h"
#include "engine/core/error.h"
#include "shaders/embedded_shaders.h"

namespace servescope::compute::vulkan {
namespace {

std::span<const uint32_t> find_spirv(const std::string& name) {
  for (const auto& shader : shaders::all_shaders()) {
    if (shader.name == name) return shader.words;
  }
  throw BackendError("Vulkan: no embedded shader named '" + name + "'");
}

}  // namespace

const Pipeline& Pipelines::get(const std::string& name, uint32_t binding_count,
                               std::span<const uint32_t> constants) {
  std::string key = name;
  for (const uint32_t c : constants) key += "/" + std::to_string(c);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return *it->second;
  VkDevice device = context_->device();
  const std::span<const uint32_t> spirv = find_spirv(name);
  auto p = std::make_unique<Pipeline>();
  p->name = name;
  p->binding_count = binding_count;

  std::vector<VkDescriptorSetLayoutBinding> bindings(binding_count);
  for (uint32_t i = 0; i < binding_count; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_info{};
  set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  set_info.bindingCount = binding_count;
  set_info.pBindings = bindings.data();
  check(vkCreateDescriptorSetLayout(device, &set_info, nullptr, &p->set_layout),
        "creating the descriptor layout of " + name);

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  VkPipelineLayoutCreateInfo layout_info{};
  layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &p->set_layout;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &push;
  check(vkCreatePipelineLayout(device, &layout_info, nullptr, &p->layout),
        "creating the pipeline layout of " + name);

  VkShaderModuleCreateInfo module_info{};
  module_info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  module_info.codeSize = spirv.size_bytes();
  module_info.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  check(vkCreateShaderModule(device, &module_info, nullptr, &module), "loading shader " + name);

  VkComputePipelineCreateInfo pipeline_info{};
  pipeline_info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline_info.stage.module = module;
  pipeline_info.stage.pName = "main";
  std::vector<VkSpecializationMapEntry> entries;
  for (uint32_t i = 0; i < constants.size(); ++i) {
    entries.push_back({i, static_cast<uint32_t>(i * sizeof(uint32_t)), sizeof(uint32_t)});
  }
  const VkSpecializationInfo specialization{static_cast<uint32_t>(entries.size()), entries.data(),
                                            constants.size_bytes(), constants.data()};
  if (!constants.empty()) pipeline_info.stage.pSpecializationInfo = &specialization;
  pipeline_info.layout = p->layout;
  const VkResult result =
      vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &p->pipeline);
  vkDestroyShaderModule(device, module, nullptr);
  if (result != VK_SUCCESS) {
    vkDestroyPipelineLayout(device, p->layout, nullptr);
    vkDestroyDescriptorSetLayout(device, p->set_layout, nullptr);
    check(result, "compiling shader " + name);
  }
  return *(pipelines_[key] = std::move(p));
}

Pipelines::~Pipelines() {
  VkDevice device = context_->device();
  for (auto& [name, p] : pipelines_) {
    vkDestroyPipeline(device, p->pipeline, nullptr);
    vkDestroyPipelineLayout(device, p->layout, nullptr);
    vkDestroyDescriptorSetLayout(device, p->set_layout, nullptr);
  }
}

}  // namespace servescope::compute::vulkan
