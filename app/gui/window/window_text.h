// How the main window words and labels things: the status bar's sentences, sizes, KV type
// names, the timing models' note and tooltip, and the pickers' headings and roles.
#pragma once

#include <QString>
#include <Qt>
#include <cstdint>
#include <exception>
#include <optional>

#include "app/gui/engine_bridge/engine_types.h"
#include "app/gui/engine_bridge/generation_end.h"
#include "engine/serving/kv_block_pool.h"
#include "widgets/chart_painting.h"

namespace servescope::gui {

// The backend picker's item a first run uses (compute::default_vulkan_device, else the CPU).
inline constexpr int kDefaultBackendRole = Qt::UserRole + 2;
// The heading of the timing models in the model picker and the File menu.
// Marked for lupdate: QCoreApplication::translate("WindowText", kTimingGroup) says it in the
// user's language where the window shows it.
inline constexpr const char* kTimingGroup =
    QT_TRANSLATE_NOOP("WindowText", "Timing models (random weights)");

// Why a generation ended, in words (the worker's signal carries the engine's name for it).
QString finish_sentence(GenerationEnd end);

// What the timing models are for and where they are written.
QString timing_tooltip(const QString& folder);

// model::kRandomWeightsNote as a QString.
QString random_weights_note_text();

// The model's name without the note make-model writes into it ("servescope-random-25M (random
// weights: ...)"): the window shows the note once, in its own place.
QString name_without_note(const QString& name);

// 17.6 MiB, 1.3 KiB: the window's byte sizes go through widgets' one wrapper of
// units::format_bytes.
using widgets::chart::format_bytes;

QString kv_type_label(gguf::GgmlType type);

// File > Model details: the loaded model's shape, tensor types, sizes and where it comes from
// (its general.* keys), as an HTML table of label and value rows.
QString model_details_html(const EngineInfo& info);

// 4.61 M, 1.10 B, 850 k: a count to three significant digits, for the status bar.
QString count_text(int64_t count);

// The status bar's short device label ("Vulkan on llvmpipe", "CPU, F32 activations") and the
// tooltip with everything it leaves out (the device's full name, the driver).
QString device_label(const EngineInfo& info);
// Help > About: ServeScope's version, Qt's (run and built against), the backend with its device
// and driver, and the model; `info` empty before a model has loaded.
QString about_text(const std::optional<EngineInfo>& info);
QString device_tooltip(const EngineInfo& info);

// "continuous batching" or "static batching, wait 200 ms".
QString batching_text(const BatchingChoice& batching);
// The status bar after a staggered load: "Staggered load, static batching, wait 200 ms: 2,512
// tokens/s, first token after 121 ms (median), 104 steps of 15.4 requests on average", or
// how many requests finished before it was stopped.
QString staggered_load_text(const StaggeredLoadResult& result);
// "collecting a batch: 3 of 16, runs in 120 ms" (remaining_ms from the engine's due time), or
// "... runs now" once it is due; empty when nothing is collecting.
QString collecting_text(const BatchCollecting& state, double remaining_ms);

// Why a command failed, in words: "not enough memory <for_what>" for std::bad_alloc, whose own
// text ("std::bad_alloc") names neither the cause nor the size; else the error's message.
QString failure_text(const std::exception& error, const QString& for_what);

}  // namespace servescope::gui
