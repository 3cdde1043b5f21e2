// The "Here and there" data: published model shapes and datasheet devices, read from
// data_directory()/deployments/deployments.json (assets/deployments in the source tree) and
// from a file of the user's own (the same format) holding what they added.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/serving/deployment.h"

namespace servescope::app {

struct PublishedModel {
  std::string name;
  std::string source;
  model::ModelConfig shape;  // a llama-family transformer
};

struct DeploymentData {
  std::vector<PublishedModel> models;
  std::vector<serving::DeviceSpec> devices;
};

// data_directory()/deployments/deployments.json.
std::filesystem::path bundled_deployments_path();

// InputError naming the file and the entry when it is not valid JSON of that format or a figure
// is missing, not a number, or not positive.
DeploymentData read_deployments(const std::filesystem::path& path);
DeploymentData parse_deployments(const std::string& json_text, const std::string& where);
// The same format, for the user's own file ("models" and "devices" arrays).
std::string deployments_json(const DeploymentData& data);

}  // namespace servescope::app
