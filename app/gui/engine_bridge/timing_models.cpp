#include "app/gui/engine_bridge/timing_models.h"

#include <QDir>
#include <QFileInfo>
#include <filesystem>
#include <system_error>

#include "app/cli/make_model_command.h"
#include "app/gui/window/window_text.h"
#include "engine/core/error.h"
#include "engine/eval/quantize_model.h"

namespace servescope::gui {

std::vector<TimingModel> timing_model_presets() {
  std::vector<TimingModel> models;
  for (const eval::RandomModelPreset& preset : eval::random_model_presets()) {
    for (const char* type : {"f32", "q4_0"}) {
      models.push_back(
          {QString::fromUtf8(preset.name.data(), static_cast<qsizetype>(preset.name.size())),
           preset.shape, type});
    }
  }
  return models;
}

uint64_t timing_model_weight_bytes(const TimingModel& model, int64_t vocab_size) {
  return eval::random_model_weight_bytes(model.shape, vocab_size,
                                         eval::parse_weight_type(model.type.toStdString()));
}

QString timing_model_title(const TimingModel& model, int64_t vocab_size) {
  if (vocab_size <= 0) return QString("%1 %2").arg(model.label, model.type.toUpper());
  return QString("%1 %2 (%3)")
      .arg(model.label, model.type.toUpper(),
           format_bytes(timing_model_weight_bytes(model, vocab_size)));
}

QString timing_models_folder(const QString& cache_folder) {
  return QDir(cache_folder).filePath("timing-models");
}

QString timing_model_path(const QString& folder, const TimingModel& model) {
  return QDir(folder).filePath(
      QString("servescope-random-%1-%2.gguf").arg(model.label, model.type));
}

void write_timing_model(const TimingModel& model, const QString& path,
                        const QString& tokenizer_path) {
  const std::filesystem::path out = path.toStdString();
  std::error_code error;
  std::filesystem::create_directories(out.parent_path(), error);
  if (error) {
    throw InputError("cannot create the folder " + out.parent_path().string() + ": " +
                     error.message());
  }
  eval::RandomModelSpec spec;
  spec.shape = model.shape;
  spec.type = eval::parse_weight_type(model.type.toStdString());
  spec.label = model.label.toStdString();
  eval::validate_shape(spec.shape, spec.type);
  cli::write_random_model(spec, tokenizer_path.toStdString(), out);
}

}  // namespace servescope::gui
