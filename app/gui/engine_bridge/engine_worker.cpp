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

// The serving engine as the window runs it: the user's request and up to app::kMaxClassmates
// classmates share 16 batch slots, so a full class queues and the KV cache fills.
constexpr int64_t kMaxBatch = 16;
// The automatic KV budget: 128 blocks (2,048 tokens, eight full contexts of the bundled model),
// at most the engine's default budget.
constexpr int64_t kKvBlocks = 128;
constexpr int64_t kAlternatives = 5;  // top alternatives reported with each generated token

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

// What the engine is given: a device only for Vulkan (the CPU has one), 8-bit activations only
// on the CPU (Vulkan ignores them).
compute::BackendChoice to_compute_choice(const BackendChoice& backend) {
  compute::BackendChoice choice = backend;
  if (backend.kind != compute::BackendKind::kVulkan) choice.device.reset();
  choice.quantised_activations =
      backend.kind == compute::BackendKind::kCpu && backend.quantised_activations;
  return choice;
}

serving::BatchingPolicy policy_of(const BatchingChoice& choice) {
  return choice.static_batches ? serving::BatchingPolicy::kStatic
                               : serving::BatchingPolicy::kContinuous;
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
    : EngineReplies(parent), tick_timer_(new QTimer(this)), timing_timer_(new QTimer(this)) {
  connect(tick_timer_, &QTimer::timeout, this, &EngineWorker::tick);
  timing_timer_->setInterval(250);
  connect(timing_timer_, &QTimer::timeout, this, &EngineWorker::report_timing_progress);
}

EngineWorker::~EngineWorker() {
  lab_cancel_.cancel();  // a long comparison stops at its next step instead of holding the exit
  if (lab_thread_.joinable()) lab_thread_.join();
  if (quantise_thread_.joinable()) quantise_thread_.join();
  if (timing_thread_.joinable()) timing_thread_.join();
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
  keep_raised_roofs();
  engine_.reset();
  user_request_.reset();
  live_requests_.clear();
  classmate_requests_.clear();
  last_prefill_ids_.clear();
  tick_timer_->stop();
  wait_for_batch();  // a batch that was collecting is no more
  set_running(false);
}

void EngineWorker::run_batch_sweep(CancelToken cancel) {
  if (!model_) {
    Q_EMIT batch_sweep_ready({});  // the window is waiting for an answer
    return;
  }
  QVector<BatchSweepPoint> points;
  try {
    // Untimed first: the first run after loading pays for cold caches and page faults, which
    // made batch 1 look slower than batch 4.
    bool stopped = !run_sweep_size(1, cancel);
    // runs[size]: each repeat's decode totals. Passes alternate up and down so a slow spell
    // of a shared machine does not land on the large sizes only.
    std::vector<std::vector<telemetry::StepTotals>> runs(kBatchSweepSizes);
    for (int pass = 0; pass < kBatchSweepRepeats && !stopped; ++pass) {
      for (int i = 0; i < kBatchSweepSizes && !stopped; ++i) {
        const int size = pass % 2 == 0 ? i : kBatchSweepSizes - 1 - i;
        const int64_t batch = int64_t{1} << size;
        const std::optional<telemetry::StepTotals> totals = run_sweep_size(batch, cancel);
        stopped = !totals;  // the size interrupted is dropped; those measured stand
        if (stopped) break;
        runs[static_cast<size_t>(size)].push_back(*totals);
        if (pass + 1 < kBatchSweepRepeats) continue;
        points.push_back(*median_sweep_point(batch, runs[static_cast<size_t>(size)]));
        Q_EMIT batch_sweep_point(points.back());
      }
    }
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("Batch sweep: %1").arg(failure_text(error, "for the sweep's engines")));
  }
  Q_EMIT batch_sweep_ready(points);
}

void EngineWorker::run_staggered_load(StaggeredLoad load, CancelToken cancel) {
  StaggeredLoadResult result{load, kMaxBatch, {}};
  if (!model_) {
    Q_EMIT staggered_load_ready(result);  // the window is waiting for an answer
    return;
  }
  serving::EngineConfig config;
  config.max_batch_size = kMaxBatch;  // the window's engine's slots
  config.batching = policy_of(load.batching);
  config.batch_wait_ms = load.batching.static_batches ? load.batching.wait_ms : 0;
  // Short prompts and long answers, as `servescope-cli bench --prompt-tokens 16
  // --output-tokens 100`: decode steps dominate, so a batch's size is what sets its pace.
  serving::WorkloadSpec spec;
  spec.clients = load.clients;
  spec.rate_per_s = load.rate_per_s;
  spec.prompt_tokens = {16, 16};
  spec.output_tokens = {100, 100};
  spec.seed = 7;
  int64_t reported = -1;
  const serving::LoadProgress progress = [this, &reported](int64_t finished, int64_t total) {
    if (finished == std::exchange(reported, finished)) return;  // once per finished request
    Q_EMIT staggered_load_progress(finished, total);
  };
  try {
    result.summary =
        run_own_load(config, spec, progress, [&cancel] { return cancel.cancelled(); }).summary;
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("Staggered load: %1").arg(failure_text(error, "for its engine")));
  }
  Q_EMIT staggered_load_ready(result);
}

serving::LoadResult EngineWorker::run_own_load(serving::EngineConfig config,
                                               serving::WorkloadSpec spec,
                                               const serving::LoadProgress& progress,
                                               const std::function<bool()>& should_stop) {
  config.kv_type = kv_type_;
  spec.text_ids = classmate_text_ids_;
  spec.vocab_size = static_cast<int32_t>(model_->config.vocab_size);
  model_->transformer->set_attention_capture(std::nullopt);  // measure serving alone
  struct CaptureAgain {  // however the run ends, the user's request is captured again
    EngineWorker* worker;
    ~CaptureAgain() { worker->capture_user_attention(); }
  } capture_again{this};
  return serving::run_load(*model_->transformer, weight_bytes_, config,
                           serving::make_workload(spec), progress, should_stop);
}

std::optional<telemetry::StepTotals> EngineWorker::run_sweep_size(int64_t batch,
                                                                  const CancelToken& cancel) {
  serving::EngineConfig config;
  config.max_batch_size = batch;
  const serving::WorkloadSpec spec = batch_sweep_workload(
      batch, classmate_text_ids_, static_cast<int32_t>(model_->config.vocab_size));
  const serving::LoadResult run =
      run_own_load(config, spec, {}, [&cancel] { return cancel.cancelled(); });
  if (cancel.cancelled()) return std::nullopt;  // a run cut short measures nothing
  return telemetry::decode_step_totals(run.steps);
}

void EngineWorker::start_quant_lab(const QString& prompt, const QStringList& types,
                                   CancelToken cancel) {
  if (!model_ || !tokenizer_) {
    Q_EMIT quant_lab_progress(false, QString(), 0.0, QStringLiteral("no model is loaded"));
    return;
  }
  lab_cancel_.cancel();  // one lab at a time: the newest request wins
  if (lab_thread_.joinable()) lab_thread_.join();
  lab_cancel_ = cancel;
  std::vector<std::string> chosen;
  for (const QString& type : types) chosen.push_back(type.toStdString());
  Q_EMIT quant_lab_progress(true, QStringLiteral("starting"), 0.0, QString());
  lab_thread_ = std::thread([this, path = model_path_.toStdString(), tokenizer = tokenizer_,
                             text = stories_, prompt = prompt.toStdString(), chosen, cancel] {
    QuantLabControl control;
    control.on_quick_parts = [this](const QuantLabReport& quick) { Q_EMIT quant_lab_ready(quick); };
    control.on_stage = [this](const eval::ReportProgress& p) {
      Q_EMIT quant_lab_progress(
          true, QString::fromStdString(p.stage),
          p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total) : 0.0,
          QString());
    };
    control.cancel = cancel.flag();
    QuantLabReport report;
    try {
      report = run_quant_lab(path, *tokenizer, prompt, text, chosen, control);
    } catch (const eval::ReportCancelled&) {
      Q_EMIT quant_lab_progress(false, QString(), 0.0, QStringLiteral("cancelled"));
      return;
    } catch (const std::exception& error) {
      report.model_path = path;
      report.complete = true;
      report.problems.push_back(error.what());
    }
    Q_EMIT quant_lab_ready(report);  // queued to the GUI thread
    Q_EMIT quant_lab_progress(
        false, QString(), 1.0,
        report.problems.empty() ? QString() : QString::fromStdString(report.problems.front()));
  });
}

void EngineWorker::simulate_device_loss_after(int steps) {
  if (auto* vk =
          dynamic_cast<compute::vulkan::VulkanBackend*>(model_ ? model_->backend.get() : nullptr)) {
    vk->simulate_device_lost_after(static_cast<uint32_t>(steps));
  }
}

void EngineWorker::set_weight_type(const QString& type) {
  if (!model_) return refuse_load("No model is loaded yet; open a GGUF model first.");
  if (type == weight_type_) return;
  if (type.isEmpty()) {  // back to the file as it is
    load_model(model_path_, backend_);
    return;
  }
  if (quantise_thread_.joinable()) quantise_thread_.join();  // one at a time
  quantise_thread_ = std::thread([this, type, path = model_path_.toStdString(),
                                  backend = to_compute_choice(backend_)] {
    try {
      const gguf::GgufFile source = gguf::GgufFile::open(path);
      const gguf::GgmlType target = eval::parse_weight_type(type.toStdString());
      const gguf::GgufWriter writer = eval::quantize_model(
          source, target, [&](int64_t done, int64_t total, const std::string&) {
            Q_EMIT weight_progress(static_cast<int>(done), static_cast<int>(total), type);
          });
      std::shared_ptr<model::Model> quantised = eval::load_model_from_gguf(
          gguf::GgufFile::from_bytes(writer.to_bytes(),
                                     source.name() + " as " + type.toStdString()),
          backend);
      QMetaObject::invokeMethod(this, [this, quantised, type] { adopt_model(quantised, type); });
    } catch (const std::exception& error) {
      const QString message = QString("Could not quantise the weights to %1: %2")
                                  .arg(type, failure_text(error, "for the re-encoded weights"));
      QMetaObject::invokeMethod(this, [this, message] { refuse_load(message); });
    }
  });
}

void EngineWorker::adopt_model(std::shared_ptr<model::Model> model, const QString& weight_type) {
  const bool was_generating = user_request_.has_value();
  drop_engine();
  if (was_generating) Q_EMIT generation_finished(GenerationEnd::kWeightsChanged);
  // The Model is owned here from now on; the shared_ptr only carried it across threads.
  model_ = std::make_unique<model::Model>(std::move(*model));
  weight_type_ = weight_type;
  weight_bytes_ = model::summarize_weights(model_->file).bytes;
  rebuild_engine();
}

void EngineWorker::open_timing_model(const TimingModel& model, const QString& path,
                                     BackendChoice backend) {
  if (QFileInfo::exists(path)) {  // written before: reused
    load_model(path, backend);
    return;
  }
  if (timing_timer_->isActive()) {
    refuse_load(QString("A timing model is being written (%1); choose again when it is ready.")
                    .arg(timing_path_));
    return;
  }
  if (timing_thread_.joinable()) timing_thread_.join();
  timing_path_ = path;
  timing_total_ = 0;
  const QString tokenizer = QString::fromStdString(cli::default_model_path());
  const QString serving = model_ ? QString("\nStill serving %1.").arg(model_path_) : QString();
  timing_thread_ = std::thread([this, model, path, backend, tokenizer, serving] {
    try {
      const int64_t vocab =
          model::read_model_config(gguf::GgufFile::open(tokenizer.toStdString())).vocab_size;
      timing_total_ = timing_model_weight_bytes(model, vocab);
      write_timing_model(model, path, tokenizer);
      QMetaObject::invokeMethod(this, [this, path, backend] {
        finish_timing_write();
        if (!shut_down_) load_model(path, backend);
      });
    } catch (const std::exception& error) {
      const QString message = QString("Could not write the timing model %1 %2 to %3: %4%5")
                                  .arg(model.label, model.type.toUpper(), path,
                                       QString::fromStdString(error.what()), serving);
      QMetaObject::invokeMethod(this, [this, message] {
        finish_timing_write();
        refuse_load(message);
      });
    }
  });
  timing_timer_->start();
  report_timing_progress();
}

void EngineWorker::report_timing_progress() {
  std::error_code error;
  const std::filesystem::path partial = (timing_path_ + ".partial").toStdString();
  const uint64_t written = std::filesystem::file_size(partial, error);
  const uint64_t total = timing_total_;
  // The file also holds metadata, so the partial file ends a little above the weight bytes.
  Q_EMIT timing_model_progress(error ? 0 : std::min(written, total), total, timing_path_);
}

void EngineWorker::finish_timing_write() {
  timing_timer_->stop();
  if (timing_thread_.joinable()) timing_thread_.join();
  if (QFileInfo::exists(timing_path_)) {
    Q_EMIT timing_model_progress(timing_total_, timing_total_, timing_path_);
  }
}

void EngineWorker::shutdown() {
  shut_down_ = true;
  lab_cancel_.cancel();  // a long comparison stops at its next step instead of holding the exit
  if (lab_thread_.joinable()) lab_thread_.join();
  if (quantise_thread_.joinable()) quantise_thread_.join();
  if (timing_thread_.joinable()) timing_thread_.join();
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

std::vector<int32_t> EngineWorker::tokenize(const QString& prompt) const {
  return tokenizer_->encode_with_bos(prompt.toStdString());
}

void EngineWorker::prefill(const QString& prompt) {
  if (!engine_ || user_request_ || prompt.isEmpty()) return;
  try {
    const std::vector<int32_t> ids = tokenize(prompt);
    if (ids == last_prefill_ids_) return;
    serving::EngineRequest request;
    request.prompt_ids = ids;
    request.max_tokens = 1;  // only the prompt's keys and values matter
    const serving::SequenceId id = engine_->submit(request);
    live_requests_.insert(id);
    ++requests_submitted_;
    last_prefill_ids_ = ids;
    Q_EMIT prompt_prefill_started(id);
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("Prompt: %1").arg(error.what()));
    return;
  }
  update_timer();
}

void EngineWorker::forget_cached_prefixes() {
  if (!engine_) return;
  engine_->forget_cached_prefixes();
  last_prefill_ids_.clear();  // the typed prompt's prefill is gone with them
}

void EngineWorker::generate(const QString& prompt) {
  if (!engine_) {
    Q_EMIT generation_refused("No model is loaded yet; open a GGUF model first.");
    return;
  }
  if (user_request_) return;  // one generation at a time: its generation_finished answers
  try {
    serving::EngineRequest request;
    request.prompt_ids = tokenize(prompt);
    request.max_tokens = max_tokens_;
    request.sampling = sampling_;
    request.stop_token = tokenizer_->vocabulary().eos_id;
    request.top_k_alternatives = kAlternatives;
    const auto context = engine_->scheduler().config().context_length;
    if (static_cast<int64_t>(request.prompt_ids.size()) >= context) {
      throw InputError("the prompt is " + std::to_string(request.prompt_ids.size()) +
                       " tokens but the model's context holds " + std::to_string(context) +
                       "; shorten it so there is room to generate");
    }
    user_request_ = engine_->submit(request);
    live_requests_.insert(*user_request_);
    ++requests_submitted_;
    generated_once_ = true;
    attention_sample_ = {};
    Q_EMIT generation_started(*user_request_, static_cast<int>(request.prompt_ids.size()));
  } catch (const std::exception& error) {
    Q_EMIT generation_refused(QString("Cannot generate: %1").arg(error.what()));
    return;
  }
  top_up_classmates();
  update_timer();
}

void EngineWorker::stop() {
  if (!user_request_) return;
  cancel_all();
  user_request_.reset();
  Q_EMIT generation_finished(GenerationEnd::kStopped);
  update_timer();
}

void EngineWorker::cancel_all() {
  // The user's request and every classmate end now; their blocks are freed at once.
  for (const serving::SequenceId id : std::set<serving::SequenceId>(live_requests_)) {
    engine_->cancel(id);
  }
  retire_finished_requests();
}

void EngineWorker::cancel_classmates() {
  for (const serving::SequenceId id : std::set<serving::SequenceId>(classmate_requests_)) {
    engine_->cancel(id);
  }
  retire_finished_requests();
}

void EngineWorker::set_attention_head(int layer, int head) {
  attention_layer_ = layer;
  attention_head_ = head;
  attention_sample_ = {};
  capture_user_attention();
}

void EngineWorker::capture_user_attention() {
  if (!model_) return;
  try {
    model_->transformer->set_attention_capture(
        model::AttentionCapture{attention_layer_, attention_head_});
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("Attention: %1").arg(error.what()));
  }
}

void EngineWorker::step_once() {
  if (!engine_ || !engine_->has_unfinished()) return;
  run_one_step();
  update_timer();
}

void EngineWorker::tick() {
  if (!engine_ || !engine_->has_unfinished()) {
    update_timer();
    return;
  }
  run_one_step();
  update_timer();
}

bool EngineWorker::run_one_step() {
  try {
    if (!engine_->step()) return false;  // a static batch is still collecting
    if (engine_->steps_run() == 1) report_memory();
    capture_attention();
    check_user_request();
    retire_finished_requests();
    top_up_classmates();
  } catch (const std::exception& error) {
    recover_from_step_failure(error);
    return false;
  }
  return true;
}

void EngineWorker::recover_from_step_failure(const std::exception& error) {
  const bool was_generating = user_request_.has_value();
  const QString reason = QString::fromStdString(error.what());
  drop_engine();
  if (was_generating) Q_EMIT generation_finished(GenerationEnd::kFailed);
  if (backend_.kind == compute::BackendKind::kVulkan) {
    // The engine cannot continue after a backend failure; rebuild the model on the CPU.
    model_.reset();
    load_model(model_path_, BackendChoice(compute::BackendKind::kCpu));
    Q_EMIT notice(QString("The Vulkan device failed (%1). ServeScope now runs on the CPU backend; "
                          "choose Vulkan again in the toolbar to retry.")
                      .arg(reason));
  } else {
    rebuild_engine();
    Q_EMIT failed(QString("A step failed: %1. The engine was rebuilt.").arg(reason));
  }
}

void EngineWorker::check_user_request() {
  if (!user_request_ || !engine_->is_finished(*user_request_)) return;
  const serving::Sequence& sequence = engine_->sequence(*user_request_);
  user_request_.reset();
  Q_EMIT generation_finished(generation_end_of(sequence.finish_reason));
}

void EngineWorker::capture_attention() {
  if (!user_request_) return;
  const std::vector<model::AttentionWeights>& captured = model_->transformer->captured_attention();
  if (captured.empty()) return;
  // The pass's query rows are its batch's tokens, entry after entry.
  size_t row = 0;
  for (const telemetry::BatchEntry& entry : tap_.last_batch()) {
    if (entry.sequence != *user_request_) {
      row += entry.tokens.size();
      continue;
    }
    const model::AttentionWeights& weights = captured.front();
    AttentionSample& sample = attention_sample_;
    for (size_t i = 0; i < entry.tokens.size() && row + i < weights.rows.size(); ++i) {
      const int64_t position = weights.positions[row + i];
      const bool continues =
          !sample.rows.empty() &&
          position == sample.first_query_position + static_cast<int64_t>(sample.rows.size());
      if (!continues) {  // the first rows, or a recompute after a preemption
        sample.rows.clear();
        sample.first_query_position = position;
      }
      sample.rows.push_back(weights.rows[row + i]);
    }
    sample.layer = weights.layer;
    sample.head = weights.head;
    sample.request = entry.sequence;
    const std::vector<int32_t>& tokens = engine_->sequence(entry.sequence).tokens;
    const auto keys = static_cast<size_t>(sample.first_query_position) + sample.rows.size();
    sample.key_ids.assign(tokens.begin(), tokens.begin() + std::min(keys, tokens.size()));
    attention_->put(sample);
    return;
  }
}

void EngineWorker::retire_finished_requests() {
  for (auto it = live_requests_.begin(); it != live_requests_.end();) {
    if (engine_->is_finished(*it)) {
      classmate_requests_.erase(*it);
      ++requests_finished_;
      it = live_requests_.erase(it);
    } else {
      ++it;
    }
  }
}

void EngineWorker::top_up_classmates() {
  // Classmates come while the user generates (or always, for the demo once it started).
  if (!engine_ || !(user_request_ || (continuous_classmates_ && generated_once_))) return;
  while (static_cast<int>(classmate_requests_.size()) < classmates_) submit_classmate();
}

void EngineWorker::submit_classmate() {
  if (classmate_queue_.empty()) {
    serving::WorkloadSpec spec;
    spec.clients = app::kMaxClassmates;
    spec.prompt_tokens = {8, 40};
    spec.output_tokens = {24, 96};
    spec.seed = classmate_seed_++;
    spec.text_ids = classmate_text_ids_;
    spec.vocab_size = static_cast<int32_t>(model_->config.vocab_size);
    for (serving::SimulatedRequest& r : serving::make_workload(spec)) {
      classmate_queue_.push_back(std::move(r));
    }
  }
  serving::SimulatedRequest next = std::move(classmate_queue_.front());
  classmate_queue_.pop_front();
  serving::EngineRequest request;
  next.prompt_ids.insert(next.prompt_ids.begin(), tokenizer_->vocabulary().bos_id);
  request.prompt_ids = std::move(next.prompt_ids);
  request.max_tokens = next.max_tokens;
  request.sampling.greedy = false;
  request.sampling.temperature = 0.8f;
  request.sampling.seed = classmate_seed_ * 7919 + classmate_queue_.size();
  const serving::SequenceId id = engine_->submit(request);
  classmate_requests_.insert(id);
  live_requests_.insert(id);
  ++requests_submitted_;
}

void EngineWorker::update_timer() {
  const bool work = engine_ && engine_->has_unfinished();
  set_running(work);
  if (wait_for_batch()) return;  // a batch's wait is serving time: the clock runs
  // Slow motion's and single step's wait for the next step is for the eye, not serving: the
  // engine's clock stands still through it (the next step() resumes it), so the records'
  // TTFT and TPOT are the same work's at full speed.
  if (work && speed_ != Speed::kRealTime) engine_->hold_clock();
  if (!work || speed_ == Speed::kSingleStep) {
    tick_timer_->stop();
    return;
  }
  const int interval = speed_ == Speed::kSlowMotion ? kSlowMotionMs : 0;
  if (!tick_timer_->isActive() || tick_timer_->interval() != interval) {
    tick_timer_->start(interval);
  }
}

bool EngineWorker::wait_for_batch() {
  const std::optional<double> due = engine_ ? engine_->batch_due_ms() : std::nullopt;
  if (!due || !engine_->waiting_for_batch()) {
    if (collecting_) {
      collecting_ = false;
      Q_EMIT batch_collecting({});
    }
    return false;
  }
  // One tick when the batch falls due (at least 1 ms ahead, so an early wake-up re-arms
  // instead of spinning); a newcomer that fills the batch re-arms through update_timer().
  // The wait is serving time: a clock held since the last step runs again.
  engine_->resume_clock();
  const double due_in_ms = *due - engine_->now_ms();
  const int delay = std::max(1, static_cast<int>(std::ceil(due_in_ms)));
  if (speed_ == Speed::kSingleStep) {
    tick_timer_->stop();  // Step runs the batch once it is due
  } else {
    tick_timer_->setTimerType(Qt::PreciseTimer);
    tick_timer_->start(delay);
  }
  collecting_ = true;
  const auto& config = engine_->scheduler().config();
  Q_EMIT batch_collecting({static_cast<int>(engine_->scheduler().waiting().size()),
                           static_cast<int>(config.max_batch_size), std::max(0.0, due_in_ms)});
  return true;
}

void EngineWorker::report_memory() {
  if (const auto* cpu = dynamic_cast<const compute::CpuBackend*>(model_->backend.get())) {
    // Only working memory is counted apart: the weights and the pool are the model's and the
    // engine's sizes, which the window has (0 here leaves them to it).
    Q_EMIT memory_measured(0, 0, cpu->working_bytes());
    return;
  }
  const auto* vk = dynamic_cast<const compute::vulkan::VulkanBackend*>(model_->backend.get());
  if (vk == nullptr) return;
  const auto memory = vk->memory_usage().bytes_in_use;
  using compute::BufferPurpose;
  Q_EMIT memory_measured(memory[static_cast<size_t>(BufferPurpose::kWeights)],
                         memory[static_cast<size_t>(BufferPurpose::kKvCache)],
                         memory[static_cast<size_t>(BufferPurpose::kActivations)] +
                             memory[static_cast<size_t>(BufferPurpose::kScratch)]);
}

EngineCounters EngineWorker::counters() const {
  const serving::KvUsage usage = engine_->kv_usage();
  return EngineCounters{engine_->steps_run(), requests_submitted_, requests_finished_,
                        usage.blocks_used,    usage.blocks_total,  engine_->kv_snapshot()};
}

void EngineWorker::set_running(bool running) {
  if (running == running_) return;
  running_ = running;
  Q_EMIT running_changed(running);
  if (!running && engine_) {
    keep_raised_roofs();
    report_memory();
    Q_EMIT idle(counters());
  }
}

}  // namespace servescope::gui
