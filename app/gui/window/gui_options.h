// The command line of `servescope`: the interactive window by default, or the scripted demo
// that documentation and checks use:
//   servescope --demo "Once upon a time" --classmates 4 --panel kv --screenshot out.png
//              --after-ms 4000 [--model P] [--backend cpu|vulkan] [--device N]
//              [--theme dark|light] [--overlay] [--sweep] [--reset]
//              [--batching continuous|static] [--batch-wait MS] [--activations f32|q8_0]
//              [--lesson ID [--step N] [--run] [--learn-tab lesson|practice|flashcards]
//               [--question N [--answer TEXT]] [--lecture]]
//              [--quant-types f16,q8_0,...] [--quant-block q4_1]
// or a run recorded, or a recorded run replayed with no engine (the demo's view options apply):
//   servescope --record run.sstrace [--demo ...]
//   servescope --replay run.sstrace [--speed X] [--panel P] [--screenshot OUT.png]
//              [--after-ms MS] [--lesson ID [--step N] [--lecture]] [--theme dark|light]
// or attached to a real serving engine (remote mode; with --demo, the demo runs there):
//   servescope --remote http://127.0.0.1:8080 [--demo ...]
// or, without a window, the lesson files' check for authors:
//   servescope --check-lessons [DIR]
// or every lesson experiment run headless, each step's expect conditions checked:
//   servescope --run-lessons [DIR] [--lesson ID]... [--json]
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/gui/panels/panel_id.h"

namespace servescope::gui {

// Bad command-line input; the message is the one line printed before exiting non-zero.
class GuiUsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ThemeChoice { kLight, kDark };

struct GuiOptions {
  bool help = false;
  bool reset = false;  // forget the remembered window layout, model, device and settings
  std::optional<std::string> demo_prompt;
  int classmates = 0;  // simulated classmates beside the demo's own request
  std::optional<int> samples;  // samples of the demo's prompt (Sampling > Samples)
  std::optional<PanelId> panel;
  std::optional<std::string> screenshot;  // PNG path, written after after_ms
  int after_ms = 4000;
  std::optional<std::string> model;
  std::optional<std::string> backend;  // "cpu" or "vulkan"
  std::optional<int> device;           // Vulkan device index
  std::optional<ThemeChoice> theme;
  std::optional<bool> static_batching;        // --batching continuous|static
  std::optional<int> batch_wait_ms;           // --batch-wait MS (static batching's wait)
  std::optional<bool> quantised_activations;  // --activations f32|q8_0 (CPU backend)
  bool overlay = false;                       // the frame-time overlay (F12) on from the start
  bool here_and_there = false;                // the demo's screenshot is of View > Here and there
  bool sweep = false;  // the demo runs the batch-size sweep before it generates
  // The demo's lesson view (documentation screenshots): a lesson and step (1-based) in the
  // Learn pane, its experiment run (--run), a tab, a question answered (--question N
  // --answer TEXT: the working shows), lecture mode.
  std::optional<std::string> lesson;
  int step = 1;
  bool run_step = false;
  std::optional<std::string> learn_tab;  // lesson, practice or flashcards
  std::optional<int> question;
  std::optional<std::string> answer;
  bool lecture = false;
  // The demo's quantisation lab: the weight types it compares (comma-separated) and the block
  // type its "Inside a block" tab shows in the screenshot.
  std::optional<std::string> quant_types;
  std::optional<std::string> quant_block;
  // --check-lessons [DIR]: validate the lesson files and exit; empty: the data folder's lessons.
  std::optional<std::string> check_lessons;
  // --run-lessons [DIR]: run every step's experiment headless (CPU, offscreen) and check its
  // expect conditions; empty: the data folder's lessons. --lesson ID (repeatable) picks
  // lessons, --json prints the report as JSON.
  std::optional<std::string> run_lessons;
  std::vector<std::string> lesson_ids;  // every --lesson given, in order
  bool json = false;
  // --export-report FILE.html: the learner's lab report from their progress file (and the
  // installed lessons, on the bundled model), as FILE.html and FILE.pdf; no window.
  std::optional<std::string> export_report;
  // --record FILE: the run is written to this trace; --replay FILE: a recorded run is played
  // into the panels with no engine, at --speed X (trace_format.h's bounds).
  std::optional<std::string> record;
  std::optional<std::string> replay;
  double replay_speed = 1.0;
  // --remote URL: remote mode from the start (http or https, a host, no path).
  std::optional<std::string> remote;
};

// args: the arguments after the program name (Qt's own options already removed).
// GuiUsageError naming the option at fault.
GuiOptions parse_gui_options(const std::vector<std::string>& args);

std::string gui_usage();

}  // namespace servescope::gui
