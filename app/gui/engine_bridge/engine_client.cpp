#include "app/gui/engine_bridge/engine_client.h"

#include "app/gui/engine_bridge/engine_worker.h"

namespace servescope::gui {

EngineClient::EngineClient(QObject* parent) : EngineReplies(parent) {
  EngineWorker::register_types();
  thread_ = std::make_unique<QThread>();
  thread_->setObjectName("engine");
  worker_ = new EngineWorker;
  worker_->moveToThread(thread_.get());
  connect(thread_.get(), &QThread::finished, worker_, &QObject::deleteLater);
  mirror_replies();  // first: the state is current before anyone else hears a reply
  forward_replies();
  thread_->start();
}

EngineClient::~EngineClient() {
  sweep_token_.cancel();
  lab_token_.cancel();
  QMetaObject::invokeMethod(worker_, &EngineWorker::shutdown, Qt::BlockingQueuedConnection);
  thread_->quit();
  thread_->wait();
}

template <typename Call>
void EngineClient::send(Call call) {
  QMetaObject::invokeMethod(worker_, [w = worker_, call = std::move(call)] { call(*w); });
}

void EngineClient::forward_replies() {
  using R = EngineReplies;
  relay(worker_, this, &R::engine_ready, &R::load_failed, &R::generation_refused, &R::failed,
        &R::notice, &R::prompt_prefill_started, &R::generation_started, &R::sample_started,
        &R::generation_finished,
        &R::running_changed, &R::idle, &R::quant_lab_ready, &R::quant_lab_progress,
        &R::weight_progress, &R::load_stage, &R::timing_model_progress, &R::memory_measured,
        &R::batch_sweep_point, &R::batch_sweep_ready, &R::staggered_load_progress,
        &R::staggered_load_ready, &R::batching_changed, &R::batch_collecting);
}

void EngineClient::mirror_replies() {
  EngineState& s = state_;
  connect(this, &EngineReplies::engine_ready, this, [&s](const EngineInfo& info) {
    s.info = info;
    s.memory = {info.memory_weights_bytes, info.memory_kv_bytes, info.memory_working_bytes};
    s.batching = info.batching;
    s.loading = false;
    s.user_request = -1;  // a new engine numbers its requests from 0 again
    s.collecting = {};
    s.batch_sweep.clear();  // measured on the engine replaced
    s.staggered_load.reset();
    ++s.info_revision;
    ++s.sweep_revision;
    ++s.collecting_revision;
  });
  connect(this, &EngineReplies::load_failed, this, [&s](const QString&, bool serving) {
    s.loading = false;
    if (serving) return;
    s.info.reset();
    s.generating = false;  // the worker ended the generation with its engine
    ++s.info_revision;
  });
  connect(this, &EngineReplies::generation_started, this, [&s](qint64 request, int) {
    s.generating = true;
    s.user_request = request;
    s.user_samples.clear();
  });
  connect(this, &EngineReplies::sample_started, this,
          [&s](qint64 request) { s.user_samples.push_back(request); });
  connect(this, &EngineReplies::generation_refused, this,
          [&s](const QString&) { s.generating = false; });
  connect(this, &EngineReplies::generation_finished, this,
          [&s](GenerationEnd) { s.generating = false; });
  connect(this, &EngineReplies::running_changed, this, [&s](bool running) { s.running = running; });
  connect(this, &EngineReplies::memory_measured, this,
          [&s](quint64 weights, quint64 kv_cache, quint64 working) {
            if (!s.info) return;
            s.memory = {weights, kv_cache, working};
            ++s.info_revision;
          });
  connect(this, &EngineReplies::batching_changed, this, [&s](const BatchingChoice& batching) {
    if (!s.info) return;
    s.batching = batching;
    ++s.info_revision;
    ++s.collecting_revision;
  });
  connect(this, &EngineReplies::batch_collecting, this, [&s](const BatchCollecting& collecting) {
    s.collecting = collecting;
    ++s.collecting_revision;
  });
  connect(this, &EngineReplies::batch_sweep_point, this, [&s](const BatchSweepPoint& point) {
    s.batch_sweep.push_back(point);
    ++s.sweep_revision;
  });
  connect(this, &EngineReplies::batch_sweep_ready, this,
          [&s](const QVector<BatchSweepPoint>& points) {
            s.batch_sweep = points;
            s.sweeping = false;
            ++s.sweep_revision;
          });
  connect(this, &EngineReplies::staggered_load_ready, this,
          [&s](const StaggeredLoadResult& result) {
            s.staggered_load = result;
            s.sweeping = false;
            ++s.sweep_revision;
          });
}

// --- commands ------------------------------------------------------------------------------

void EngineClient::load_model(const QString& path, const BackendChoice& backend) {
  state_.loading = true;
  state_.loading_path = path;
  send([path, backend](EngineWorker& w) { w.load_model(path, backend); });
}

void EngineClient::open_timing_model(const TimingModel& model, const QString& path,
                                     const BackendChoice& backend) {
  state_.loading = true;
  state_.loading_path = path;
  send([model, path, backend](EngineWorker& w) { w.open_timing_model(model, path, backend); });
}

void EngineClient::set_kv_type(gguf::GgmlType type) {
  send([type](EngineWorker& w) { w.set_kv_type(type); });
}

void EngineClient::set_keep_kv(bool keep) {
  send([keep](EngineWorker& w) { w.set_keep_kv(keep); });
}

void EngineClient::set_kv_budget_mib(int mib) {
  send([mib](EngineWorker& w) { w.set_kv_budget_mib(mib); });
}

void EngineClient::set_batching(const BatchingChoice& batching) {
  send([batching](EngineWorker& w) { w.set_batching(batching); });
}

void EngineClient::set_weight_type(const QString& type) {
  send([type](EngineWorker& w) { w.set_weight_type(type); });
}

void EngineClient::set_classmates(int count) {
  send([count](EngineWorker& w) { w.set_classmates(count); });
}

void EngineClient::set_speed(Speed speed) {
  send([speed](EngineWorker& w) { w.set_speed(speed); });
}

void EngineClient::set_sampling(const serving::SamplingParams& sampling) {
  send([sampling](EngineWorker& w) { w.set_sampling(sampling); });
}

void EngineClient::set_samples(int samples) {
  send([samples](EngineWorker& w) { w.set_samples(samples); });
}

void EngineClient::set_max_tokens(int count) {
  send([count](EngineWorker& w) { w.set_max_tokens(count); });
}

void EngineClient::set_continuous_classmates(bool continuous) {
  send([continuous](EngineWorker& w) { w.set_continuous_classmates(continuous); });
}

void EngineClient::set_attention_head(int layer, int head) {
  send([layer, head](EngineWorker& w) { w.set_attention_head(layer, head); });
}

void EngineClient::prefill(const QString& prompt) {
  send([prompt](EngineWorker& w) { w.prefill(prompt); });
}

void EngineClient::forget_cached_prefixes() {
  send([](EngineWorker& w) { w.forget_cached_prefixes(); });
}

void EngineClient::generate(const QString& prompt) {
  state_.user_request = -1;  // until the worker names the new request
  state_.generating = true;  // until the worker says otherwise
  send([prompt](EngineWorker& w) { w.generate(prompt); });
}

void EngineClient::stop() {
  send([](EngineWorker& w) { w.stop(); });
}

void EngineClient::step_once() {
  send([](EngineWorker& w) { w.step_once(); });
}

void EngineClient::run_batch_sweep() {
  if (state_.sweeping) return;
  state_.sweeping = true;
  state_.batch_sweep.clear();  // points arrive one batch size at a time
  ++state_.sweep_revision;
  sweep_token_ = CancelToken();
  send([token = sweep_token_](EngineWorker& w) { w.run_batch_sweep(token); });
}

void EngineClient::run_staggered_load(const StaggeredLoad& load) {
  if (state_.sweeping) return;
  state_.sweeping = true;
  state_.staggered_load.reset();
  ++state_.sweep_revision;
  sweep_token_ = CancelToken();
  send([load, token = sweep_token_](EngineWorker& w) { w.run_staggered_load(load, token); });
}

void EngineClient::stop_sweep() { sweep_token_.cancel(); }

void EngineClient::start_quant_lab(const QString& prompt, const QStringList& types) {
  lab_token_.cancel();  // one lab at a time: the newest wins
  lab_token_ = CancelToken();
  send([prompt, types, token = lab_token_](EngineWorker& w) {
    w.start_quant_lab(prompt, types, token);
  });
}

void EngineClient::cancel_quant_lab() { lab_token_.cancel(); }

void EngineClient::simulate_device_loss_after(int steps) {
  send([steps](EngineWorker& w) { w.simulate_device_loss_after(steps); });
}

}  // namespace servescope::gui
