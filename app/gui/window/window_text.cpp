#include "app/gui/window/window_text.h"

#include <QCoreApplication>
#include <QList>
#include <QLocale>
#include <array>
#include <cmath>
#include <new>

#include "engine/model/model_config.h"
#include "units/units.h"

namespace servescope::gui {
namespace {

// The translation context of the window's words (lupdate reads WindowText::tr).
struct WindowText {
  Q_DECLARE_TR_FUNCTIONS(WindowText)
};

}  // namespace

QString finish_sentence(GenerationEnd end) {
  switch (end) {
    case GenerationEnd::kMaxTokens:
      return WindowText::tr("it reached the Max tokens limit");
    case GenerationEnd::kStopToken:
      return WindowText::tr("the model wrote its end-of-text token");
    case GenerationEnd::kContextFull:
      return WindowText::tr("the model's context is full");
    case GenerationEnd::kCancelled:
    case GenerationEnd::kStopped:
      return WindowText::tr("stopped");
    case GenerationEnd::kModelChanged:
      return WindowText::tr("the model changed");
    case GenerationEnd::kWeightsChanged:
      return WindowText::tr("the weights changed");
    case GenerationEnd::kKvTypeChanged:
      return WindowText::tr("the KV precision changed");
    case GenerationEnd::kKvCacheSwitchedOn:
      return WindowText::tr("the KV cache was switched on");
    case GenerationEnd::kKvCacheSwitchedOff:
      return WindowText::tr("the KV cache was switched off");
    case GenerationEnd::kKvBudgetChanged:
      return WindowText::tr("the KV budget changed");
    case GenerationEnd::kFailed:
      break;
  }
  return WindowText::tr("a step failed");
}

QString timing_tooltip(const QString& folder) {
  return WindowText::tr(
             "Llama models of 25M to 1B parameters with random weights, for timing only: their "
             "text is meaningless. Every decode step reads all the weights once, so decode time "
             "against weight bytes shows the memory wall once the weights outgrow the caches. "
             "Written once into %1 in the background (the current model keeps serving), then "
             "reused.")
      .arg(folder);
}

QString random_weights_note_text() {
  return QString::fromUtf8(model::kRandomWeightsNote.data(),
                           static_cast<qsizetype>(model::kRandomWeightsNote.size()));
}

QString name_without_note(const QString& name) {
  const QString suffix = QString(" (%1)").arg(random_weights_note_text());
  return name.endsWith(suffix) ? name.chopped(suffix.size()) : name;
}

QString count_text(int64_t count) {
  static constexpr std::array<std::pair<double, const char*>, 3> kUnits = {
      {{1e9, "B"}, {1e6, "M"}, {1e3, "k"}}};
  const double n = static_cast<double>(count);
  for (const auto& [scale, unit] : kUnits) {
    if (std::abs(n) >= scale) {
      const double scaled = n / scale;
      const int decimals = std::abs(scaled) >= 100 ? 0 : std::abs(scaled) >= 10 ? 1 : 2;
      return QString("%1 %2").arg(QLocale::system().toString(scaled, 'f', decimals), unit);
    }
  }
  return QLocale::system().toString(static_cast<qlonglong>(count));
}

QString device_label(const EngineInfo& info) {
  if (info.backend != "vulkan") {
    return WindowText::tr("CPU, %1 activations").arg(info.quantised_activations ? "Q8_0" : "F32");
  }
  // "llvmpipe (LLVM 15.0.6, 256 bits)": the name before the details.
  const qsizetype details = info.device.indexOf(" (");
  return WindowText::tr("Vulkan on %1").arg(details > 0 ? info.device.left(details) : info.device);
}

QString about_text(const std::optional<EngineInfo>& info) {
  QString text = WindowText::tr(
                     "ServeScope %1: how language models are served, measured on this "
                     "machine.\n\nQt %2 (built with %3)\n")
                     .arg(QStringLiteral(SERVESCOPE_VERSION), QString(qVersion()), QT_VERSION_STR);
  if (!info) return text + WindowText::tr("No model loaded yet.");
  text += device_tooltip(*info);
  if (!info->driver.isEmpty()) text += WindowText::tr(", driver %1").arg(info->driver);
  return text + WindowText::tr("\nModel: %1").arg(info->model_name);
}

QString device_tooltip(const EngineInfo& info) {
  if (info.backend != "vulkan") {
    return WindowText::tr("CPU backend (OpenBLAS) on %1, %2 activations")
        .arg(info.device, info.quantised_activations ? WindowText::tr("8-bit (Q8_0)")
                                                     : WindowText::tr("exact float (F32)"));
  }
  return WindowText::tr("Vulkan backend on %1\nDriver: %2").arg(info.device, info.driver);
}

QString model_details_html(const EngineInfo& info) {
  const QLocale locale = QLocale::system();
  const auto number = [&](int64_t n) { return locale.toString(static_cast<qlonglong>(n)); };
  // The exact figure and its size: "18,459,648 bytes (17.6 MiB)".
  const auto bytes = [](uint64_t n) {
    return QString::fromStdString(units::format_bytes_exact(static_cast<double>(n)));
  };
  QList<std::pair<QString, QString>> rows = {
      {WindowText::tr("Name"), name_without_note(info.model_name)},
      {WindowText::tr("File"), info.model_path},
      {WindowText::tr("Architecture"), info.architecture},
      {WindowText::tr("Parameters"), number(info.parameters)},
      {WindowText::tr("Weights"),
       bytes(info.weight_bytes) +
           (info.weight_type.isEmpty()
                ? QString()
                : WindowText::tr(" (re-encoded as %1)").arg(info.weight_type.toUpper()))},
      {WindowText::tr("Tensors per type"), info.tensor_types},
      {WindowText::tr("Layers"), WindowText::tr("%1 (%2 heads, %3 KV heads of %4)")
                                     .arg(number(info.n_layers), number(info.n_heads),
                                          number(info.n_kv_heads), number(info.head_dim))},
      {WindowText::tr("Feed-forward size"), number(info.ffn_dim)},
      {WindowText::tr("Vocabulary"), WindowText::tr("%1 tokens").arg(number(info.vocab_size))},
      {WindowText::tr("Context"), WindowText::tr("%1 tokens").arg(number(info.context_length))},
      {WindowText::tr("KV cache per token"),
       WindowText::tr("%1 as %2").arg(bytes(info.kv_bytes_per_token), kv_type_label(info.kv_type))},
  };
  // "Author: ..." lines, as the file's general.* keys give them.
  for (const QString& line : info.provenance.split('\n', Qt::SkipEmptyParts)) {
    const qsizetype colon = line.indexOf(": ");
    if (colon > 0) rows.push_back({line.left(colon), line.mid(colon + 2)});
  }
  if (info.warm_up_ms > 0.0) {
    rows.push_back({WindowText::tr("Warm-up"),
                    WindowText::tr("kernels run once untimed before the first step (%1 ms)")
                        .arg(info.warm_up_ms, 0, 'f', 0)});
  }
  if (info.random_weights) rows.push_back({WindowText::tr("Note"), random_weights_note_text()});
  QString html = "<table cellspacing='4'>";
  for (const auto& [label, value] : rows) {
    html += QString("<tr><td><b>%1</b></td><td>%2</td></tr>")
                .arg(label.toHtmlEscaped(), value.toHtmlEscaped());
  }
  return html + "</table>";
}

QString kv_type_label(gguf::GgmlType type) {
  return QString::fromUtf8(gguf::type_name(type).data());
}

QString batching_text(const BatchingChoice& batching) {
  return batching.static_batches
             ? WindowText::tr("static batching, wait %1 ms").arg(batching.wait_ms)
             : WindowText::tr("continuous batching");
}

QString staggered_load_text(const StaggeredLoadResult& result) {
  const QString head =
      WindowText::tr("Staggered load, %1").arg(batching_text(result.load.batching));
  const serving::LoadSummary& s = result.summary;
  if (!result.complete()) {
    return WindowText::tr("%1: stopped after %2 of %3 requests")
        .arg(head)
        .arg(s.requests)
        .arg(result.load.clients);
  }
  return WindowText::tr(
             "%1: %2 tokens/s, first token after %3 ms (median), %4 steps of %5 requests "
             "on average")
      .arg(head)
      .arg(QLocale().toString(s.output_tokens_per_s, 'f', 0))
      .arg(s.ttft_ms.p50, 0, 'f', 0)
      .arg(s.steps)
      .arg(result.mean_batch(), 0, 'f', 1);
}

QString collecting_text(const BatchCollecting& state, double remaining_ms) {
  if (state.waiting <= 0) return {};
  const QString when =
      remaining_ms >= 1.0
          ? WindowText::tr("runs in %1 ms").arg(static_cast<int>(remaining_ms + 0.5))
          : WindowText::tr("runs now");
  return WindowText::tr("collecting a batch: %1 of %2, %3")
      .arg(state.waiting)
      .arg(state.batch_size)
      .arg(when);
}

QString failure_text(const std::exception& error, const QString& for_what) {
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) {
    return WindowText::tr("not enough memory %1").arg(for_what);
  }
  return QString::fromStdString(error.what());
}

}  // namespace servescope::gui
