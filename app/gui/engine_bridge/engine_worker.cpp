#include "app/gui/engine_bridge/engine_worker.h"

#include <QDate>
#include <QEvent>
#include <QFileInfo>
#include <QStringList>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "app/cli/commands.h"
#include "app/common/data_files.h"
#include "app/common/limits.h"
#include "app/gui/engine_bridge/worker_engines.h"
#include "app/gui/window/window_text.h"
#include "engine/compute/cpu_backend.h"
#include "engine/compute/roofs.h"
#include "engine/compute/vulkan/vulkan_backend.h"
#include "engine/core/error.h"
#include "engine/eval/quantize_model.h"
#include "engine/eval/variant_model.h"
#include "engine/model/model_provenance.h"
#include "engine/serving/kv_budget.h"
#include "engine/serving/warm_up.h"

namespace servescope::gui {
namespace {

// The automatic KV budget: 128 blocks (2,048 tokens, eight full contexts of the bundled model),
// at most the engine's default budget.
constexpr int64_t kKvBlocks = 128;

// Classmates' prompts are windows of the bundled stories (the load generator draws them at
// random offsets), so their requests read like the user's; this text stands in when the
// stories file is not installed.
constexpr const char* kFallbackStories =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends. One day, she saw a big red ball under a tree. She ran to the ball "
    "and kicked it high into the sky. Her friend Tom laughed and clapped his hands. Then the "
    "sun went down and it was time to go home. Lily's mom made soup for dinner, and Lily told "
    "her about the ball. Tim had a small dog called Max. Max liked to run and jump in the "
    "garden. One morning Max found a shiny stone and brought it to Tim. Tim was very happy and "
    "gave Max a big hug. They played together all day until the stars came out.";

// "llvmpipe, Mesa 22.3.6 (LLVM 15.0.6)", or the numeric version where the driver has no name.
QString driver_text(const compute::vulkan::DeviceDescription& d) {
  if (!d.driver_name.empty()) {
    return QString::fromStdString(d.driver_name +
                                  (d.driver_info.empty() ? "" : ", " + d.driver_info));
  }
  return QString("%1.%2.%3")
      .arg(VK_API_VERSION_MAJOR(d.driver_version))
      .arg(VK_API_VERSION_MINOR(d.driver_version))
      .arg(VK_API_VERSION_PATCH(d.driver_version));
}

// The window shows every token as text, so the tokenizer must name every row of the
// embedding (llama.cpp refuses a mismatch as well); the command line reports it at generate.
void check_tokenizer(const model::Model& m, const QString& path) {
  if (!m.tokenizer) {
    throw InputError(path.toStdString() +
                     " has no tokenizer metadata (tokenizer.ggml.*), so ServeScope cannot "
                     "turn a typed prompt into tokens; choose a model with a tokenizer");
  }
  const int64_t listed = m.tokenizer->size();
  if (listed != m.config.vocab_size) {
    throw InputError(path.toStdString() + ": its tokenizer lists " + std::to_string(listed) +
                     " tokens but its embedding has " + std::to_string(m.config.vocab_size) +
                     " rows; tokenizer.ggml.tokens must name one token per row");
  }
}

QString to_load(const QString& path) {
  std::error_code error;
  const uint64_t bytes = std::filesystem::file_size(path.toStdString(), error);
  return error ? QString("to load it")
               : QString("to load it (its file holds %1, more once unpacked)")
                     .arg(format_bytes(bytes));
}

// A FIFO, a device or a folder as model is refused by the GGUF open before it blocks
// (engine/core/regular_file.h), so this thread and the application's exit never hang on one.
std::unique_ptr<model::Model> open_model(const QString& path, const BackendChoice& backend) {
  return model::load_model(path.toStdString(), to_compute_choice(backend));
}

std::string bundled_stories() {
  std::ifstream in(app::bundled_eval_text_path(), std::ios::binary);
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return text.empty() ? kFallbackStories : text;
}

}  // namespace

void EngineWorker::register_types() {
  qRegisterMetaType<BackendChoice>();
  qRegisterMetaType<BatchingChoice>();
  qRegisterMetaType<BatchCollecting>();
  qRegisterMetaType<Speed>();
  qRegisterMetaType<EngineInfo>();
  qRegisterMetaType<GeneratedToken>();
  qRegisterMetaType<QVector<GeneratedToken>>();
  qRegisterMetaType<EngineCounters>();
  qRegisterMetaType<serving::SamplingParams>();
  qRegisterMetaType<gguf::GgmlType>();
  qRegisterMetaType<QuantLabReport>();
  qRegisterMetaType<BatchSweepPoint>();
  qRegisterMetaType<QVector<BatchSweepPoint>>();
  qRegisterMetaType<StaggeredLoad>();
  qRegisterMetaType<StaggeredLoadResult>();
  qRegisterMetaType<GenerationEnd>();
}

EngineWorker::EngineWorker(QObject* parent)
    : EngineReplies(parent),
      tick_timer_(new QTimer(this)),
      own_load_timer_(new QTimer(this)),
      jobs_(new QThreadPool(this)),
      lab_(new QFutureWatcher<QuantLabReport>(this)),
      reencoding_(new QFutureWatcher<ReencodedWeights>(this)),
      timing_(new QFutureWatcher<QString>(this)),
      timing_timer_(new QTimer(this)) {
  connect(tick_timer_, &QTimer::timeout, this, &EngineWorker::tick);
  own_load_timer_->setSingleShot(true);
  own_load_timer_->setTimerType(Qt::PreciseTimer);  // arrivals and batch waits on time
  connect(own_load_timer_, &QTimer::timeout, this, &EngineWorker::advance_own_load);
  timing_timer_->setInterval(250);
  connect(timing_timer_, &QTimer::timeout, this, &EngineWorker::report_timing_progress);
  jobs_->setMaxThreadCount(3);  // the lab, re-encoding and a timing model may all run at once
  watch_jobs();
}

EngineWorker::~EngineWorker() {
  wait_for_jobs();
  drop_engine();
}

bool EngineWorker::event(QEvent* event) {
  // Every command reaches this thread as an event: one that throws past its own handling (a
  // defect, memory running out) is reported and the engine rebuilt, never an abort.
  try {
    return QObject::event(event);
  } catch (const std::exception& error) {
    recover_from_step_failure(error);
    return true;
  }
}

void EngineWorker::drop_engine() {
  end_own_load(true);  // measured on this model and KV type, it would not be the new engine's
  keep_raised_roofs();
  engine_.reset();
  user_request_.reset();
  user_samples_.clear();
  live_requests_.clear();
  classmate_requests_.clear();
  last_prefill_ids_.clear();
  tick_timer_->stop();
  wait_for_batch();  // a batch that was collecting is no more
  set_running(false);
}

void EngineWorker::simulate_device_loss_after(int steps) {
  if (auto* vk =
          dynamic_cast<compute::vulkan::VulkanBackend*>(model_ ? model_->backend.get() : nullptr)) {
    vk->simulate_device_lost_after(static_cast<uint32_t>(steps));
  }
}

void EngineWorker::shutdown() {
  shut_down_ = true;
  wait_for_jobs();
  timing_timer_->stop();
  drop_engine();
  model_.reset();
  queue_.reset();
}

void EngineWorker::load_model(const QString& path, BackendChoice backend) {
  // Everything that can fail comes before the engine in use is dropped.
  std::unique_ptr<model::Model> loaded;
  std::shared_ptr<const Tokenizer> tokenizer;
  try {
    loaded = open_model(path, backend);
    check_tokenizer(*loaded, path);
    tokenizer = std::shared_ptr<const Tokenizer>(load_tokenizer(loaded->file));
  } catch (const std::exception& error) {
    if (!model_ && backend.kind == compute::BackendKind::kVulkan) {
      // Nothing is running yet: the CPU backend is the next best start.
      Q_EMIT notice(QString("Vulkan is not available here (%1); running on the CPU backend.")
                        .arg(error.what()));
      load_model(path, BackendChoice(compute::BackendKind::kCpu));
      return;
    }
    refuse_load(QString("Could not load %1: %2%3")
                    .arg(path, failure_text(error, to_load(path)),
                         engine_ ? QString("\nStill serving %1.").arg(model_path_) : QString()));
    return;
  }
  const bool was_generating = user_request_.has_value();
  drop_engine();
  if (was_generating) Q_EMIT generation_finished(GenerationEnd::kModelChanged);
  model_ = std::move(loaded);
  model_path_ = path;
  weight_type_.clear();
  backend_ = backend;
  weight_bytes_ = model::summarize_weights(model_->file).bytes;
  tokenizer_ = std::move(tokenizer);
  stories_ = bundled_stories();
  classmate_text_ids_.clear();  // a tokenizer that cannot spell the stories: random prompts
  try {
    classmate_text_ids_ = tokenizer_->encode(stories_);
  } catch (const InputError&) {
  }
  roofs_ = {};
  Q_EMIT load_stage("measuring the device's roofs");  // cached after the first time
  try {
    roofs_ = compute::probe_device_roofs(*model_->backend, false).roofs;  // cached per device
  } catch (const std::exception& error) {
    Q_EMIT notice(QString("The roofline's roofs could not be measured: %1").arg(error.what()));
  }
  rebuild_engine();
}

void EngineWorker::rebuild_engine() {
  if (!model_) return;
  drop_engine();
  serving::EngineConfig config;
  config.max_batch_size = kMaxBatch;
  config.kv_type = kv_type_;
  config.kv_budget_setting = "the KV budget (Serving toolbar)";
  config.batching = policy_of(batching_);
  config.batch_wait_ms = batching_.wait_ms;
  config.keep_kv = keep_kv_;
  queue_ = std::make_shared<telemetry::TelemetryQueue>(1 << 16);
  attention_ = std::make_shared<AttentionMailbox>();
  attention_sample_ = {};
  tap_.set_queue(queue_.get());
  requests_submitted_ = 0;
  requests_finished_ = 0;
  EngineInfo info;
  try {
    config.kv_bytes = kv_budget_bytes();
    // Kernels run once untimed first, so the first step anyone sees is a warm one.
    Q_EMIT load_stage("warming up the kernels");
    warm_up_ms_ = serving::warm_up(*model_->transformer, weight_bytes_, config).wall_ms;
    config.warmed_up = true;
    engine_ = std::make_unique<serving::Engine>(*model_->transformer, weight_bytes_, config, &tap_);
    model_->transformer->set_attention_capture(
        model::AttentionCapture{attention_layer_, attention_head_});
    tap_.set_roofs(compute::step_roofs(roofs_, main_weight_type()));
    info = engine_info();
  } catch (const std::exception& error) {
    engine_.reset();
    refuse_load(QString("Could not build the serving engine for %1: %2")
                    .arg(model_path_, failure_text(error, "for its KV cache and buffers")));
    return;
  }
  Q_EMIT engine_ready(info);
}

void EngineWorker::refuse_load(const QString& message) {
  Q_EMIT load_failed(message, engine_ != nullptr);
}

namespace {

// The file's provenance keys as tooltip lines; keys it lacks are left out.
QString provenance_text(const model::ModelProvenance& p) {
  QStringList lines;
  const auto add = [&](const char* label, const std::string& value) {
    if (!value.empty()) lines << QString("%1: %2").arg(label, QString::fromStdString(value));
  };
  add("Author", p.author);
  add("Licence", p.license);
  add("URL", p.url);
  add("Source", p.source_url);
  if (p.quantization_version) {
    lines << QString("Quantisation version: %1").arg(*p.quantization_version);
  }
  lines << (p.has_chat_template ? QString("Chat template: included")
                                : QString("Chat template: none"));
  return lines.join('\n');
}

}  // namespace

std::optional<gguf::GgmlType> EngineWorker::main_weight_type() const {
  return compute::main_probed_type(roofs_, model::summarize_weights(model_->file).tensor_types);
}

void EngineWorker::keep_raised_roofs() {
  if (!model_ || !tap_.take_raised()) return;
  // Kept for every later model on this device: say which model's step it was, and when.
  const QString raised_by =
      QString("a step of %1 on %2")
          .arg(QFileInfo(model_path_).fileName(), QDate::currentDate().toString(Qt::ISODate));
  compute::apply_raised_roofs(roofs_, tap_.roofs(), main_weight_type(), raised_by.toStdString());
  compute::persist_raised_roofs(*model_->backend, roofs_);
}

EngineInfo EngineWorker::engine_info() const {
  EngineInfo info;
  const model::ModelConfig& c = model_->config;
  const model::WeightSummary weights = model::summarize_weights(model_->file);
  info.model_path = model_path_;
  info.warm_up_ms = warm_up_ms_;
  info.weight_type = weight_type_;
  info.model_name = QString::fromStdString(c.name.empty() ? model_->file.name() : c.name);
  info.architecture = QString::fromUtf8(model::architecture_name(c.architecture).data());
  info.provenance = provenance_text(model::read_provenance(model_->file));
  info.backend = QString::fromStdString(model_->backend->name());
  if (const auto* vk = dynamic_cast<const compute::vulkan::VulkanBackend*>(model_->backend.get())) {
    info.device = QString::fromStdString(vk->device().name);
    info.driver = driver_text(vk->device());
    info.vulkan_device = static_cast<int>(vk->device().index);
    const auto memory = vk->memory_usage().bytes_in_use;
    using compute::BufferPurpose;
    info.memory_weights_bytes = memory[static_cast<size_t>(BufferPurpose::kWeights)];
    info.memory_kv_bytes = memory[static_cast<size_t>(BufferPurpose::kKvCache)];
    info.memory_working_bytes = memory[static_cast<size_t>(BufferPurpose::kActivations)] +
                                memory[static_cast<size_t>(BufferPurpose::kScratch)];
  } else {
    info.device = roofs_.device.empty() ? QString("CPU") : QString::fromStdString(roofs_.device);
  }
  if (const auto* cpu = dynamic_cast<const compute::CpuBackend*>(model_->backend.get())) {
    info.quantised_activations = cpu->quantised_activations();
    info.memory_working_bytes = cpu->working_bytes();
  }
  info.roofs = compute::step_roofs(roofs_, main_weight_type());
  info.random_weights = c.random_weights;
  info.parameters = weights.parameters;
  info.weight_bytes = weights.bytes;
  info.context_length = c.context_length;
  info.n_layers = c.n_layers;
  info.n_heads = c.n_heads;
  info.n_kv_heads = c.n_kv_heads;
  info.head_dim = c.head_dim;
  info.vocab_size = c.vocab_size;
  info.ffn_dim = c.ffn_dim;
  QStringList per_type;  // "F32 11, Q4_K 29"
  for (const auto& [type, count] : weights.tensor_types) {
    per_type << QString("%1 %2").arg(QString::fromStdString(type)).arg(count);
  }
  info.tensor_types = per_type.join(", ");
  const serving::KvUsage usage = engine_->kv_usage();
  info.kv_type = usage.type;
  info.kv_blocks = usage.blocks_total;
  info.block_size = usage.block_size;
  info.kv_bytes_per_block = usage.bytes_per_block;
  info.kv_bytes_per_token = usage.bytes_per_token;
  info.kv_bytes_total = usage.bytes_total;
  info.max_batch_size = engine_->scheduler().config().max_batch_size;
  info.batching = engine_batching();
  info.keep_kv = keep_kv_;
  info.bos_id = tokenizer_->vocabulary().bos_id;
  info.eos_id = tokenizer_->vocabulary().eos_id;
  info.tokenizer = tokenizer_;
  info.telemetry = queue_;
  info.attention = attention_;
  return info;
}

void EngineWorker::set_kv_type(gguf::GgmlType type) {
  if (type == kv_type_) return;
  kv_type_ = type;
  const bool was_generating = user_request_.has_value();
  rebuild_engine();
  if (was_generating) Q_EMIT generation_finished(GenerationEnd::kKvTypeChanged);
}

void EngineWorker::set_keep_kv(bool keep) {
  if (keep == keep_kv_) return;
  keep_kv_ = keep;
  const bool was_generating = user_request_.has_value();
  rebuild_engine();
  if (was_generating)
    Q_EMIT generation_finished(keep ? GenerationEnd::kKvCacheSwitchedOn
                                    : GenerationEnd::kKvCacheSwitchedOff);
}

void EngineWorker::set_kv_budget_mib(int mib) {
  if (mib == kv_budget_mib_) return;
  kv_budget_mib_ = std::max(0, mib);
  const bool was_generating = user_request_.has_value();
  rebuild_engine();
  if (was_generating) Q_EMIT generation_finished(GenerationEnd::kKvBudgetChanged);
}

uint64_t EngineWorker::kv_budget_bytes() const {
  if (kv_budget_mib_ > 0) return static_cast<uint64_t>(kv_budget_mib_) * serving::kMiB;
  const serving::KvLayout layout =
      serving::kv_layout(model_->config, kv_type_, serving::EngineConfig{}.block_size);
  return std::min(static_cast<uint64_t>(kKvBlocks) * serving::kv_bytes_per_block(layout),
                  serving::default_kv_budget_bytes());
}

void EngineWorker::set_batching(BatchingChoice choice) {
  choice.wait_ms = std::max(0, choice.wait_ms);
  batching_ = choice;
  if (!engine_) return;
  try {
    engine_->set_batching(policy_of(choice), choice.wait_ms);
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("Batching: %1").arg(error.what()));
    return;
  }
  Q_EMIT batching_changed(engine_batching());
  update_timer();
}

BatchingChoice EngineWorker::engine_batching() const {
  const serving::SchedulerConfig& config = engine_->scheduler().config();
  return BatchingChoice{config.policy == serving::BatchingPolicy::kStatic,
                        static_cast<int>(std::lround(config.batch_wait_ms))};
}

void EngineWorker::set_classmates(int count) {
  classmates_ = std::clamp(count, 0, app::kMaxClassmates);
  if (user_request_) {
    top_up_classmates();
  } else if (classmates_ == 0 && engine_) {
    cancel_classmates();  // sent home: the next request is alone, not queued behind the class
  }
  update_timer();
}

void EngineWorker::set_speed(Speed speed) {
  speed_ = speed;
  update_timer();
}

void EngineWorker::set_samples(int samples) {
  samples_ = std::clamp(samples, 1, app::kMaxSamples);
}

void EngineWorker::set_sampling(serving::SamplingParams sampling) {
  try {
    serving::validate(sampling);
    sampling_ = sampling;
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("Sampling settings: %1").arg(error.what()));
  }
}

void EngineWorker::set_continuous_classmates(bool continuous) {
  continuous_classmates_ = continuous;
  update_timer();
}

void EngineWorker::set_max_tokens(int max_tokens) { max_tokens_ = std::max(1, max_tokens); }

}  // namespace servescope::gui
