#include "app/common/deployments_file.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/common/data_files.h"
#include "engine/core/error.h"

namespace servescope::app {

using nlohmann::json;

std::filesystem::path bundled_deployments_path() {
  return data_directory() / "deployments" / "deployments.json";
}

namespace {

// A figure of one entry, refused unless it is a positive number.
double positive(const json& entry, const char* key, const std::string& where) {
  const auto it = entry.find(key);
  if (it == entry.end() || !it->is_number() || !(it->get<double>() > 0.0)) {
    throw InputError(where + ": \"" + key + "\" must be a positive number");
  }
  return it->get<double>();
}

int64_t positive_integer(const json& entry, const char* key, const std::string& where) {
  const double value = positive(entry, key, where);
  if (value != static_cast<double>(static_cast<int64_t>(value))) {
    throw InputError(where + ": \"" + key + "\" must be a whole number");
  }
  return static_cast<int64_t>(value);
}

std::string text(const json& entry, const char* key, const std::string& where) {
  const auto it = entry.find(key);
  if (it == entry.end() || !it->is_string() || it->get<std::string>().empty()) {
    throw InputError(where + ": \"" + key + "\" must be a non-empty string");
  }
  return it->get<std::string>();
}

bool flag(const json& entry, const char* key) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_boolean() && it->get<bool>();
}

PublishedModel read_model(const json& entry, const std::string& where) {
  PublishedModel m;
  m.name = text(entry, "name", where);
  const std::string named = where + " (" + m.name + ")";
  m.source = text(entry, "source", named);
  model::ModelConfig& s = m.shape;
  s.name = m.name;
  s.n_layers = positive_integer(entry, "layers", named);
  s.dim = positive_integer(entry, "dim", named);
  s.n_heads = positive_integer(entry, "heads", named);
  s.n_kv_heads = positive_integer(entry, "kv_heads", named);
  s.head_dim = positive_integer(entry, "head_dim", named);
  s.ffn_dim = positive_integer(entry, "ffn_dim", named);
  s.vocab_size = positive_integer(entry, "vocab", named);
  s.context_length = positive_integer(entry, "context", named);
  s.tied_output = flag(entry, "tied_output");
  s.qkv_bias = flag(entry, "qkv_bias");
  if (s.n_heads % s.n_kv_heads != 0) {
    throw InputError(named + ": \"heads\" must be a multiple of \"kv_heads\"");
  }
  return m;
}

serving::DeviceSpec read_device(const json& entry, const std::string& where) {
  serving::DeviceSpec d;
  d.name = text(entry, "name", where);
  const std::string named = where + " (" + d.name + ")";
  d.memory_gb = positive(entry, "memory_gb", named);
  d.bandwidth_gb_per_s = positive(entry, "bandwidth_gb_per_s", named);
  d.peak_tflop_per_s = positive(entry, "peak_tflop_per_s", named);
  d.source = text(entry, "source", named);
  return d;
}

}  // namespace

DeploymentData parse_deployments(const std::string& json_text, const std::string& where) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& error) {
    throw InputError(where + " is not valid JSON: " + error.what());
  }
  if (!root.is_object()) throw InputError(where + " must hold a JSON object");
  DeploymentData data;
  const auto list = [&](const char* key) {
    const auto it = root.find(key);
    if (it == root.end()) return json::array();
    if (!it->is_array()) throw InputError(where + ": \"" + key + "\" must be an array");
    return *it;
  };
  const json models = list("models");
  for (size_t i = 0; i < models.size(); ++i) {
    data.models.push_back(read_model(models[i], where + ", models[" + std::to_string(i) + "]"));
  }
  const json devices = list("devices");
  for (size_t i = 0; i < devices.size(); ++i) {
    data.devices.push_back(read_device(devices[i], where + ", devices[" + std::to_string(i) + "]"));
  }
  return data;
}

DeploymentData read_deployments(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(missing_data_file_message("the deployments file", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse_deployments(text.str(), path.string());
}

std::string deployments_json(const DeploymentData& data) {
  json root = {{"models", json::array()}, {"devices", json::array()}};
  for (const PublishedModel& m : data.models) {
    const model::ModelConfig& s = m.shape;
    root["models"].push_back({{"name", m.name},
                              {"source", m.source},
                              {"layers", s.n_layers},
                              {"dim", s.dim},
                              {"heads", s.n_heads},
                              {"kv_heads", s.n_kv_heads},
                              {"head_dim", s.head_dim},
                              {"ffn_dim", s.ffn_dim},
                              {"vocab", s.vocab_size},
                              {"context", s.context_length},
                              {"tied_output", s.tied_output},
                              {"qkv_bias", s.qkv_bias}});
  }
  for (const serving::DeviceSpec& d : data.devices) {
    root["devices"].push_back({{"name", d.name},
                               {"memory_gb", d.memory_gb},
                               {"bandwidth_gb_per_s", d.bandwidth_gb_per_s},
                               {"peak_tflop_per_s", d.peak_tflop_per_s},
                               {"source", d.source}});
  }
  return root.dump(2) + "\n";
}

}  // namespace servescope::app
