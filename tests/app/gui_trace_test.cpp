// The recorded run's file (trace_format.h, trace_file.h): every event kind survives a round
// trip field for field; a file cut at any byte, a file that is not a trace, a newer version and
// a bad field are refused with one line naming the file, the line and what is wrong.
#include <gtest/gtest.h>

#include <QTemporaryDir>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>

#include "app/gui/recording/recording_mark.h"
#include "app/gui/recording/trace_file.h"
#include "tests/app/gui_test_support.h"

namespace servescope::gui {
namespace {

using telemetry::KvEvent;
using telemetry::RequestRecord;
using telemetry::StepRecord;
using telemetry::TokenRecord;

StepRecord sample_step() {
  StepRecord s;
  s.step_index = 7;
  s.prefill_tokens = 12;
  s.decode_tokens = 3;
  s.sequences = 4;
  s.max_batch_size = 16;
  s.kernel_times = {1.5, 0.25, 0.125, 0.0625};
  s.weight_bytes_read = 123456789012ull;
  s.kv_bytes_read = 4096;
  s.kv_bytes_written = 2048;
  s.flops = 3.25e9;
  s.kv_blocks_used = 9;
  s.kv_blocks_free = 55;
  s.wall_ms = 4.75;
  s.start_ms = 1000.125;
  s.end_ms = 1004.875;
  s.schedule_ms = 0.1;
  s.forward_ms = 4.5;
  s.sample_ms = 0.15;
  s.cold = true;
  s.kernel_times_measured = true;
  s.spans_measured = true;
  s.spans = {{telemetry::KernelKind::kAttention, 2, 1000.5, 1000.75}};
  s.spans_note = "a note";
  s.batch = {{5, 1, telemetry::SequencePhase::kRecompute, 3, {10, 11, 12}, 42}};
  s.admitted = {5};
  s.preempted = {6};
  s.finished = {8, 9};
  return s;
}

RequestRecord sample_request() {
  RequestRecord r;
  r.request_id = 5;
  r.prompt_tokens = 12;
  r.cached_prompt_tokens = 8;
  r.preemptions = 1;
  r.arrival_ms = 990.0;
  r.first_scheduled_ms = 1000.125;
  r.token_times_ms = {1004.875, 1009.5};
  r.finish_reason = telemetry::FinishReason::kStopToken;
  r.output_ids = {42, 2};
  r.finished_ms = 1010.0;
  return r;
}

KvEvent sample_kv() {
  KvEvent e;
  e.kind = telemetry::KvEventKind::kWrite;
  e.sequence = 5;
  e.blocks = {3, 4};
  e.tokens = 6;
  e.blocks_used_after = 9;
  e.position = 14;
  e.offset = 2;
  e.step_index = 7;
  e.time_ms = 1002.5;
  return e;
}

TokenRecord sample_token() {
  TokenRecord t;
  t.request_id = 5;
  t.step_index = 7;
  t.position = 15;
  t.output_index = 0;
  t.id = 42;
  t.prob = 0.625;
  t.sampling_prob = 0.75;
  t.top = {{42, 0.625}, {43, 0.125}};
  t.time_ms = 1004.875;
  return t;
}

EngineInfo sample_info() {
  EngineInfo info;
  info.model_path = "/models/story.gguf";
  info.model_name = "story ünïcode";
  info.weight_type = "q8_0";
  info.backend = "vulkan";
  info.device = "Test GPU";
  info.driver = "1.2.3";
  info.vulkan_device = 1;
  info.random_weights = true;
  info.parameters = 15000000;
  info.weight_bytes = 60000000;
  info.n_layers = 6;
  info.n_heads = 6;
  info.kv_type = gguf::GgmlType::Q8_0;
  info.kv_blocks = 64;
  info.block_size = 16;
  info.kv_bytes_per_block = 4096;
  info.max_batch_size = 16;
  info.batching = {true, 200};
  info.keep_kv = false;
  info.roofs.memory_gb_per_s = 20.5;
  info.roofs.compute_raised = true;
  info.roofs.compute_raised_by = "step 7";
  info.warm_up_ms = std::numeric_limits<double>::infinity();
  return info;
}

BatchSweepPoint sample_point() {
  BatchSweepPoint p;
  p.max_batch = 4;
  p.decode = {10, 40, 25.5};
  p.fastest_step_ms = 2.25;
  p.slowest_step_ms = 2.75;
  return p;
}

std::vector<TraceEvent> every_kind() {
  return {
      {10.0, trace::Engine{sample_info()}},
      {20.5, trace::Telemetry{{sample_step(), sample_request(), sample_kv(), sample_token(),
                               telemetry::RequestArrival{7, 12, 1500.25}}}},
      {21.0, trace::Memory{1, 2, 3}},
      {22.0, trace::SweepPoint{sample_point()}},
      {23.0, trace::SweepDone{{sample_point(), sample_point()}}},
      {24.0, trace::Batching{{true, 150}}},
      {25.0, trace::Collecting{{3, 16, 120.5}}},
      {25.5, trace::PromptPrefill{4}},
      {26.0, trace::GenerationStarted{5, 12}},
      {27.0, trace::GenerationFinished{GenerationEnd::kMaxTokens}},
      {28.0, trace::LessonShown{"batching", "classmates"}},
  };
}

std::string write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The message read_trace gives, or "" when it reads the file.
std::string read_error(const std::filesystem::path& path) {
  try {
    read_trace(path);
    return "";
  } catch (const TraceError& error) {
    return error.what();
  }
}

class TraceFile : public ::testing::Test {
 protected:
  std::filesystem::path file(const std::string& name) const {
    return std::filesystem::path(dir_.path().toStdString()) / name;
  }
  std::filesystem::path write_every_kind(const std::string& name) const {
    const std::filesystem::path path = file(name);
    TraceWriter writer(path, TraceHeader{kTraceVersion, "2026-12-06T16:20:00Z"});
    for (const TraceEvent& event : every_kind()) writer.write(event);
    writer.finish();
    return path;
  }
  QTemporaryDir dir_;
};

TEST_F(TraceFile, EveryEventKindSurvivesARoundTrip) {
  const Trace trace = read_trace(write_every_kind("run.sstrace"));
  EXPECT_EQ(trace.header.recorded_at, "2026-12-06T16:20:00Z");
  const std::vector<TraceEvent> written = every_kind();
  ASSERT_EQ(trace.events.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(trace.events[i].ms, written[i].ms);
    EXPECT_EQ(trace.events[i].body.index(), written[i].body.index());
    EXPECT_EQ(encode_event(trace.events[i]), encode_event(written[i])) << "event " << i;
  }
  // Field by field where a lossy encoding would show: names, large and non-finite numbers.
  const EngineInfo& info = std::get<trace::Engine>(trace.events[0].body).info;
  EXPECT_EQ(info.model_name, QString("story ünïcode"));
  EXPECT_EQ(info.kv_type, gguf::GgmlType::Q8_0);
  EXPECT_TRUE(std::isinf(info.warm_up_ms));
  EXPECT_EQ(info.roofs.compute_raised_by, "step 7");
  EXPECT_FALSE(info.telemetry);
  const auto& items = std::get<trace::Telemetry>(trace.events[1].body).items;
  ASSERT_EQ(items.size(), 5u);
  const StepRecord& step = std::get<StepRecord>(items[0]);
  EXPECT_EQ(step.weight_bytes_read, 123456789012ull);
  EXPECT_EQ(step.start_ms, 1000.125);
  EXPECT_EQ(step.batch.at(0).phase, telemetry::SequencePhase::kRecompute);
  EXPECT_EQ(step.batch.at(0).tokens, (std::vector<int32_t>{10, 11, 12}));
  EXPECT_EQ(step.spans.at(0).kind, telemetry::KernelKind::kAttention);
  EXPECT_EQ(step.finished, (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(std::get<RequestRecord>(items[1]).finish_reason, telemetry::FinishReason::kStopToken);
  EXPECT_EQ(std::get<KvEvent>(items[2]).kind, telemetry::KvEventKind::kWrite);
  EXPECT_EQ(std::get<TokenRecord>(items[3]).top.at(1).prob, 0.125);
  EXPECT_EQ(std::get<telemetry::RequestArrival>(items[4]).arrival_ms, 1500.25);
  EXPECT_EQ(std::get<trace::SweepDone>(trace.events[4].body).points.size(), 2);
  EXPECT_EQ(std::get<trace::Collecting>(trace.events[6].body).state.due_in_ms, 120.5);
  EXPECT_EQ(std::get<trace::PromptPrefill>(trace.events[7].body).request, 4);
  EXPECT_EQ(std::get<trace::GenerationFinished>(trace.events[9].body).end, GenerationEnd::kMaxTokens);
  EXPECT_EQ(std::get<trace::LessonShown>(trace.events[10].body).step, "classmates");
}

TEST(TraceFormat, EveryValueOfEveryEnumIsWrittenByNameAndReadBack) {
  for (int kind = 0; kind <= static_cast<int>(telemetry::KvEventKind::kIndex); ++kind) {
    KvEvent event = sample_kv();
    event.kind = static_cast<telemetry::KvEventKind>(kind);
    const TraceEvent back = decode_event(encode_event({1.0, trace::Telemetry{{event}}}));
    const auto& items = std::get<trace::Telemetry>(back.body).items;
    EXPECT_EQ(std::get<KvEvent>(items.at(0)).kind, event.kind) << kind;
  }
  for (int phase = 0; phase <= static_cast<int>(telemetry::SequencePhase::kRecompute); ++phase) {
    StepRecord step = sample_step();
    step.batch[0].phase = static_cast<telemetry::SequencePhase>(phase);
    const TraceEvent back = decode_event(encode_event({1.0, trace::Telemetry{{step}}}));
    const auto& read = std::get<StepRecord>(std::get<trace::Telemetry>(back.body).items.at(0));
    EXPECT_EQ(read.batch[0].phase, step.batch[0].phase) << phase;
  }
  for (int kind = 0; kind <= static_cast<int>(telemetry::KernelKind::kOther); ++kind) {
    StepRecord step = sample_step();
    step.spans[0].kind = static_cast<telemetry::KernelKind>(kind);
    const TraceEvent back = decode_event(encode_event({1.0, trace::Telemetry{{step}}}));
    const auto& read = std::get<StepRecord>(std::get<trace::Telemetry>(back.body).items.at(0));
    EXPECT_EQ(read.spans[0].kind, step.spans[0].kind) << kind;
  }
  for (int reason = 0; reason <= static_cast<int>(telemetry::FinishReason::kCancelled); ++reason) {
    RequestRecord request = sample_request();
    request.finish_reason = static_cast<telemetry::FinishReason>(reason);
    const TraceEvent back = decode_event(encode_event({1.0, trace::Telemetry{{request}}}));
    EXPECT_EQ(std::get<RequestRecord>(std::get<trace::Telemetry>(back.body).items.at(0))
                  .finish_reason,
              request.finish_reason)
        << reason;
  }
  for (const gguf::GgmlType type : {gguf::GgmlType::F32, gguf::GgmlType::F16, gguf::GgmlType::Q8_0,
                                    gguf::GgmlType::Q4_0, gguf::GgmlType::Q6_K}) {
    EngineInfo info = sample_info();
    info.kv_type = type;
    const TraceEvent back = decode_event(encode_event({1.0, trace::Engine{info}}));
    EXPECT_EQ(std::get<trace::Engine>(back.body).info.kv_type, type);
  }
}

TEST_F(TraceFile, AFileCutAtAnyByteIsRefusedAndNeverCrashes) {
  const std::string bytes = read_bytes(write_every_kind("whole.sstrace"));
  ASSERT_EQ(read_error(file("whole.sstrace")), "");
  for (size_t size = 0; size < bytes.size(); ++size) {
    std::string error;
    try {
      parse_trace(bytes.substr(0, size), "cut.sstrace");
    } catch (const TraceError& refused) {
      error = refused.what();
    }
    EXPECT_NE(error, "") << "cut at byte " << size;
    EXPECT_TRUE(error.starts_with("cut.sstrace: ")) << error;
    // Past the header, the reason is the cut, not the half line's JSON.
    if (size > bytes.find('\n')) {
      EXPECT_NE(error.find("cut short"), std::string::npos) << error;
    }
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  // And from a file: cut inside its last line, and at the end of a line before it.
  const std::filesystem::path cut = file("cut.sstrace");
  write_file(cut, bytes.substr(0, bytes.size() - 1));
  EXPECT_NE(read_error(cut).find("line 13 (byte"), std::string::npos) << read_error(cut);
  EXPECT_NE(read_error(cut).find("cut short"), std::string::npos) << read_error(cut);
  write_file(cut, bytes.substr(0, bytes.rfind('\n', bytes.size() - 2) + 1));
  EXPECT_EQ(read_error(cut), cut.string() +
                                 ": cut short after line 12 (no end line: the recording did not "
                                 "finish)");
}

TEST_F(TraceFile, NotATraceANewerVersionAndAMissingFileAreSaidPlainly) {
  EXPECT_EQ(read_error(file("absent.sstrace")), file("absent.sstrace").string() + ": no such file");
  write_file(file("png.sstrace"), "\x89PNG\r\n\x1a\n binary");
  EXPECT_EQ(read_error(file("png.sstrace")),
            file("png.sstrace").string() +
                ": line 1 (byte 0): not a ServeScope trace (its first line is not "
                "{\"format\":\"servescope-trace\",...})");
  write_file(file("json.sstrace"), "{\"format\":\"other\"}\n");
  EXPECT_NE(read_error(file("json.sstrace")).find("not a ServeScope trace"), std::string::npos);
  write_file(file("newer.sstrace"),
             "{\"format\":\"servescope-trace\",\"version\":5,\"recorded_at\":\"x\"}\n"
             "{\"end\":true,\"events\":0}\n");
  EXPECT_EQ(read_error(file("newer.sstrace")),
            file("newer.sstrace").string() +
                ": line 1 (byte 0): format version 5 is not one this ServeScope reads (version 1 "
                "to 4; it was written by a newer one)");
}

TEST_F(TraceFile, AVersionOneRecordingStillReads) {
  // Version 2 added the prompt_prefill kind; a version 1 file has none and reads as it was.
  std::string bytes = read_bytes(write_every_kind("v1.sstrace"));
  bytes.replace(bytes.find("\"version\":4"), 11, "\"version\":1");
  const size_t prefill = bytes.find("{\"ms\":25.5");
  ASSERT_NE(prefill, std::string::npos);
  bytes.erase(prefill, bytes.find('\n', prefill) + 1 - prefill);
  bytes.replace(bytes.find("\"events\":11"), 11, "\"events\":10");
  write_file(file("v1.sstrace"), bytes);
  EXPECT_EQ(read_error(file("v1.sstrace")), "");
}

TEST_F(TraceFile, ABadFieldIsNamedWithItsLineAndByte) {
  std::string bytes = read_bytes(write_every_kind("run.sstrace"));
  const size_t at = bytes.find("\"recompute\"");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 11, "\"sideways\"");
  write_file(file("bad.sstrace"), bytes);
  const size_t line_start = bytes.rfind('\n', at) + 1;
  EXPECT_EQ(read_error(file("bad.sstrace")),
            file("bad.sstrace").string() + ": line 3 (byte " + std::to_string(line_start) +
                "): telemetry.items[0].step.batch[0].phase: \"sideways\" is not one of prefill, "
                "decode, recompute");
  // A count that cannot be negative, and events out of time order.
  bytes = read_bytes(file("run.sstrace"));
  const size_t weights = bytes.find("\"weights\":1");
  bytes.replace(weights, 11, "\"weights\":-1");
  write_file(file("negative.sstrace"), bytes);
  EXPECT_NE(read_error(file("negative.sstrace")).find("memory.weights: expected a whole number from 0"),
            std::string::npos)
      << read_error(file("negative.sstrace"));
}

TEST_F(TraceFile, AnEngineComesBeforeItsReportsAndTheEndLineCountsTheEvents) {
  const std::filesystem::path path = file("no-engine.sstrace");
  {
    TraceWriter writer(path, TraceHeader{kTraceVersion, "t"});
    writer.write({1.0, trace::Memory{1, 2, 3}});
  }
  EXPECT_NE(read_error(path).find("line 2 (byte"), std::string::npos) << read_error(path);
  EXPECT_NE(read_error(path).find("an engine's report before any engine event"),
            std::string::npos);
  // The Learn pane may show a lesson step before a model loads: that may come first.
  {
    TraceWriter writer(file("lesson-first.sstrace"), TraceHeader{kTraceVersion, "t"});
    writer.write({1.0, trace::LessonShown{"batching", "sweep"}});
    writer.write({2.0, trace::Engine{sample_info()}});
  }
  EXPECT_EQ(read_error(file("lesson-first.sstrace")), "");
  {
    TraceWriter writer(file("lesson-only.sstrace"), TraceHeader{kTraceVersion, "t"});
    writer.write({1.0, trace::LessonShown{"batching", "sweep"}});
  }
  EXPECT_EQ(read_error(file("lesson-only.sstrace")),
            file("lesson-only.sstrace").string() +
                ": holds no run (no model was loaded while recording)");
  std::string bytes = read_bytes(write_every_kind("run.sstrace"));
  bytes.replace(bytes.find("\"events\":11"), 11, "\"events\":9");
  write_file(file("miscounted.sstrace"), bytes);
  EXPECT_EQ(read_error(file("miscounted.sstrace")),
            file("miscounted.sstrace").string() +
                ": the end line counts 9 events, the file holds 11");
}

TEST_F(TraceFile, AFileThatCannotBeWrittenIsSaidAtOnce) {
  EXPECT_THROW(TraceWriter(file("no-folder") / "run.sstrace", TraceHeader{}), TraceError);
}

// The mark a recording shows: the file and the bytes written so far (all flushed), then, when
// the recording could not go on, why.
TEST_F(TraceFile, TheRecordingMarkSaysTheFileItsSizeAndWhenItStopped) {
  testing::app();
  auto writer = std::make_shared<TraceWriter>(file("class.sstrace"), TraceHeader{kTraceVersion, "t"});
  EXPECT_EQ(writer->bytes_written(), std::filesystem::file_size(file("class.sstrace")));
  RecordingMark mark(writer);
  EXPECT_EQ(mark.text(), recording_text("class.sstrace", writer->bytes_written()));
  EXPECT_TRUE(mark.text().startsWith("Recording to class.sstrace, ")) << mark.text().toStdString();
  EXPECT_GT(mark.sizeHint().width(), mark.fontMetrics().horizontalAdvance(mark.text()));
  const QString why = "Recording stopped: class.sstrace: cannot be written (is the disk full?)";
  mark.stop(why);
  EXPECT_EQ(mark.text(), why);  // the writer's reason, as it said it
}

}  // namespace
}  // namespace servescope::gui
