// servescope-cli probe: the roofs of the chosen backend's device: the best it did (cached per
// device, thread count and activations; measured again while the cached ones were measured busy).
#include <ostream>

#include "app/cli/command_support.h"
#include "engine/compute/roofs.h"
#include "engine/eval/quantize_model.h"

namespace servescope::cli {

using nlohmann::json;

int run_probe(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, {{"backend", "device", "threads", "activations"}, {"fresh"}});
  const compute::BackendChoice choice = backend_choice(options);
  const std::unique_ptr<compute::Backend> backend = compute::make_backend(choice);
  const compute::CachedRoofs probed = compute::probe_device_roofs(*backend, options.has("fresh"));
  const compute::Roofs& r = probed.roofs;
  json matmul = json::object();
  for (const compute::MatmulRoof& m : r.matmul) {
    matmul[eval::weight_type_label(m.type)] = m.gflop_per_s;
  }
  json raised = json::array();  // the roofs a measured step beat, which hold its figure
  if (r.in_cache.raised_by_step) raised.push_back("in_cache");
  if (r.memory.raised_by_step) raised.push_back("beyond_cache");
  for (const compute::MatmulRoof& m : r.matmul) {
    if (m.raised_by_step) raised.push_back("matmul_" + eval::weight_type_label(m.type));
  }
  const auto bandwidth = [](const compute::BandwidthRoof& b) {
    return json{{"working_set_bytes", b.working_set_bytes}, {"gb_per_s", b.gb_per_s}};
  };
  out << json{{"backend", r.backend},
              {"device", r.device},
              {"activations", choice.quantised_activations ? "q8_0" : "f32"},
              {"from_cache", probed.from_cache},
              {"measured_busy", r.measured_busy},
              {"raised_by_steps", raised},
              {"cache_file", probed.cache_file.string()},
              {"last_level_cache_bytes", r.last_level_cache_bytes},
              {"read_bandwidth",
               {{"in_cache", bandwidth(r.in_cache)}, {"beyond_cache", bandwidth(r.memory)}}},
              {"matmul_gflop_per_s", matmul},
              {"matmul_shape",
               {{"tokens", r.matmul_tokens}, {"rows", r.matmul_rows}, {"cols", r.matmul_cols}}}}
             .dump(2)
      << "\n";
  return 0;
}

}  // namespace servescope::cli
