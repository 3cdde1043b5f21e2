// The engine worker's background jobs, off the engine thread so the model in use keeps
// serving: the quantisation lab, re-encoding the weights, writing a timing model. Each runs
// with QtConcurrent::run on the worker's own pool and reports through its QPromise (results,
// progress); a QFutureWatcher on the engine thread turns those into the worker's replies. The
// lab stops at its CancelToken, which the window's client cancels without waiting for this
// thread.
#include <QFileInfo>
#include <QPromise>
#include <QStringList>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "app/cli/commands.h"
#include "app/gui/engine_bridge/engine_worker.h"
#include "app/gui/engine_bridge/worker_engines.h"
#include "app/gui/window/window_text.h"
#include "engine/eval/quantize_model.h"
#include "engine/eval/variant_model.h"

namespace servescope::gui {

namespace {

// The lab's progress as the promise carries it: a share of 1,000, with the stage as its text.
constexpr int kProgressSteps = 1000;

}  // namespace

void EngineWorker::watch_jobs() {
  connect(lab_, &QFutureWatcherBase::resultReadyAt, this,
          [this](int index) { Q_EMIT quant_lab_ready(lab_->resultAt(index)); });
  connect(lab_, &QFutureWatcherBase::progressValueChanged, this, [this](int value) {
    Q_EMIT quant_lab_progress(true, lab_->progressText(),
                              static_cast<double>(value) / kProgressSteps, QString());
  });
  connect(lab_, &QFutureWatcherBase::finished, this, &EngineWorker::finish_quant_lab);
  connect(reencoding_, &QFutureWatcherBase::progressValueChanged, this, [this](int done) {
    Q_EMIT weight_progress(done, reencoding_->progressMaximum(), reencoding_type_);
  });
  connect(reencoding_, &QFutureWatcherBase::finished, this, &EngineWorker::finish_reencoding);
  connect(timing_, &QFutureWatcherBase::finished, this, &EngineWorker::finish_timing_model);
}

void EngineWorker::wait_for_jobs() {
  lab_cancel_.cancel();  // a long comparison stops at its next step instead of holding the exit
  jobs_->waitForDone();
}

void EngineWorker::start_quant_lab(const QString& prompt, const QStringList& types,
                                   CancelToken cancel) {
  if (!model_ || !tokenizer_) {
    Q_EMIT quant_lab_progress(false, QString(), 0.0, QStringLiteral("no model is loaded"));
    return;
  }
  lab_cancel_.cancel();  // one lab at a time: the newest request wins
  lab_->future().waitForFinished();
  lab_cancel_ = cancel;
  std::vector<std::string> chosen;
  for (const QString& type : types) chosen.push_back(type.toStdString());
  Q_EMIT quant_lab_progress(true, QStringLiteral("starting"), 0.0, QString());
  lab_->setFuture(QtConcurrent::run(
      jobs_, [path = model_path_.toStdString(), tokenizer = tokenizer_, text = stories_,
              prompt = prompt.toStdString(), chosen, cancel](QPromise<QuantLabReport>& promise) {
        promise.setProgressRange(0, kProgressSteps);
        QuantLabControl control;
        control.on_quick_parts = [&promise](const QuantLabReport& quick) {
          promise.addResult(quick);
        };
        control.on_stage = [&promise](const eval::ReportProgress& p) {
          const double share =
              p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total) : 0.0;
          promise.setProgressValueAndText(static_cast<int>(std::lround(share * kProgressSteps)),
                                          QString::fromStdString(p.stage));
        };
        control.cancel = cancel.flag();
        QuantLabReport report;
        try {
          report = run_quant_lab(path, *tokenizer, prompt, text, chosen, control);
        } catch (const eval::ReportCancelled&) {
          return;  // no complete report: finish_quant_lab says "cancelled"
        } catch (const std::exception& error) {
          report.model_path = path;
          report.complete = true;
          report.problems.push_back(error.what());
        }
        promise.addResult(report);
      }));
}

// Each finish_* answers the job its watcher holds now: a replaced job's late signal finds
// the new job running and is ignored.
void EngineWorker::finish_quant_lab() {
  if (!lab_->isFinished()) return;
  const QFuture<QuantLabReport> run = lab_->future();
  const int count = run.resultCount();
  if (count == 0 || !run.resultAt(count - 1).complete) {
    Q_EMIT quant_lab_progress(false, QString(), 0.0, QStringLiteral("cancelled"));
    return;
  }
  const QuantLabReport& report = run.resultAt(count - 1);
  Q_EMIT quant_lab_progress(
      false, QString(), 1.0,
      report.problems.empty() ? QString() : QString::fromStdString(report.problems.front()));
}

void EngineWorker::set_weight_type(const QString& type) {
  if (!model_) return refuse_load("No model is loaded yet; open a GGUF model first.");
  if (type == weight_type_) return;
  if (type.isEmpty()) {  // back to the file as it is
    load_model(model_path_, backend_);
    return;
  }
  reencoding_->future().waitForFinished();  // one at a time
  reencoding_type_ = type;
  reencoding_->setFuture(QtConcurrent::run(
      jobs_, [type, path = model_path_.toStdString(),
              backend = to_compute_choice(backend_)](QPromise<ReencodedWeights>& promise) {
        try {
          const gguf::GgufFile source = gguf::GgufFile::open(path);
          const gguf::GgmlType target = eval::parse_weight_type(type.toStdString());
          const gguf::GgufWriter writer = eval::quantize_model(
              source, target, [&promise](int64_t done, int64_t total, const std::string&) {
                promise.setProgressRange(0, static_cast<int>(total));
                promise.setProgressValue(static_cast<int>(done));
              });
          promise.addResult(ReencodedWeights{
              eval::load_model_from_gguf(
                  gguf::GgufFile::from_bytes(writer.to_bytes(),
                                             source.name() + " as " + type.toStdString()),
                  backend),
              QString()});
        } catch (const std::exception& error) {
          promise.addResult(ReencodedWeights{
              nullptr, QString("Could not quantise the weights to %1: %2")
                           .arg(type, failure_text(error, "for the re-encoded weights"))});
        }
      }));
}

void EngineWorker::finish_reencoding() {
  if (!reencoding_->isFinished()) return;
  const QFuture<ReencodedWeights> run = reencoding_->future();
  if (run.resultCount() == 0 || shut_down_) return;
  const ReencodedWeights& weights = run.resultAt(0);
  if (weights.model) {
    adopt_model(weights.model, reencoding_type_);
  } else {
    refuse_load(weights.problem);
  }
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
  timing_path_ = path;
  timing_backend_ = backend;
  timing_total_ = 0;
  const QString tokenizer = QString::fromStdString(cli::default_model_path());
  const QString serving = model_ ? QString("\nStill serving %1.").arg(model_path_) : QString();
  timing_->setFuture(QtConcurrent::run(jobs_, [this, model, path, tokenizer, serving] {
    try {
      const int64_t vocab =
          model::read_model_config(gguf::GgufFile::open(tokenizer.toStdString())).vocab_size;
      timing_total_ = timing_model_weight_bytes(model, vocab);
      write_timing_model(model, path, tokenizer);
      return QString();
    } catch (const std::exception& error) {
      return QString("Could not write the timing model %1 %2 to %3: %4%5")
          .arg(model.label, model.type.toUpper(), path, QString::fromStdString(error.what()),
               serving);
    }
  }));
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

void EngineWorker::finish_timing_model() {
  if (!timing_->isFinished()) return;
  timing_timer_->stop();
  if (QFileInfo::exists(timing_path_)) {
    Q_EMIT timing_model_progress(timing_total_, timing_total_, timing_path_);
  }
  const QString problem = timing_->future().result();
  if (!problem.isEmpty()) return refuse_load(problem);
  if (!shut_down_) load_model(timing_path_, timing_backend_);
}

}  // namespace servescope::gui
