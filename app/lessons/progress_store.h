// A learner's progress: where they are, their predictions, their answers with scores and times,
// the results of the steps whose experiment completed, their flashcards' Leitner boxes. Kept as JSON (progress.json) in a folder, by default the
// platform's application-data location, written atomically with QSaveFile (a temporary file,
// then a rename), so a crash or kill during a save leaves the previous file whole. A file that
// cannot be read is renamed aside (progress.corrupt-<time>.json) and reported, never silently
// overwritten. Export and import hand the same JSON to and from any path.
#pragma once

#include <QByteArray>
#include <QDateTime>
#include <QString>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/lessons/expectation.h"
#include "app/lessons/leitner.h"
#include "engine/core/error.h"

namespace servescope::lessons {

inline constexpr int kProgressSchemaVersion = 1;

// A progress file that cannot be read, written or understood; the message names the file.
class ProgressError : public Error {
 public:
  using Error::Error;
};

// A progress file from a newer ServeScope (a higher schema version): intact, just not ours to
// read or overwrite.
class NewerProgressError : public ProgressError {
 public:
  using ProgressError::ProgressError;
};

struct PredictionRecord {
  std::string lesson;
  std::string step;
  std::string value;  // the option's index or the number, as the learner gave it
  QDateTime time;

  bool operator==(const PredictionRecord&) const = default;
};

struct AnswerRecord {
  std::string lesson;
  std::string question;
  std::string given;
  bool correct = false;
  double score = 0;  // 0..1
  QDateTime time;

  bool operator==(const AnswerRecord&) const = default;
};

struct ConditionRecord {
  std::string condition;       // as written
  std::optional<bool> passed;  // nullopt: not measured

  bool operator==(const ConditionRecord&) const = default;
};

// A step whose experiment completed: what it measured and how its conditions came out, so the
// step shows its result again (after a restart too) instead of asking for the run once more.
struct StepResultRecord {
  std::string lesson;
  std::string step;
  std::map<std::string, Sample> measures;
  std::vector<ConditionRecord> conditions;
  QDateTime time;

  bool operator==(const StepResultRecord&) const = default;
};

struct Progress {
  std::string lesson;  // position: the lesson and step last open
  std::string step;
  std::vector<PredictionRecord> predictions;
  std::vector<AnswerRecord> answers;
  std::vector<StepResultRecord> results;  // the latest of each completed step

  CardStates cards;

  bool operator==(const Progress&) const = default;

  // The step's result; nullptr when its experiment never completed.
  const StepResultRecord* result(const std::string& lesson_id, const std::string& step_id) const;
  // Keeps `record` as its step's result, replacing an earlier one.
  void keep_result(StepResultRecord record);
};

QByteArray progress_to_json(const Progress& progress);
// ProgressError saying what is wrong (not JSON, a missing or mistyped field, a bad schema
// version); NewerProgressError for a schema version above kProgressSchemaVersion.
Progress progress_from_json(const QByteArray& json);

// QStandardPaths::AppDataLocation (set the application name first).
QString default_progress_folder();

class ProgressStore {
 public:
  using Clock = std::function<QDateTime()>;

  // `clock` names set-aside files; by default the current UTC time.
  explicit ProgressStore(QString folder, Clock clock = {});

  QString path() const;  // folder/progress.json

  struct Loaded {
    Progress progress;  // empty when there was no readable file
    QString notice;     // for the learner: a file was set aside or cannot be used; else empty
  };
  // Never throws. A missing file is a fresh start. An unreadable or corrupt file is renamed to
  // progress.corrupt-<yyyyMMdd-HHmmss>.json and the notice says so; if it cannot be moved (or
  // was written by a newer ServeScope) it is left alone and save() refuses to overwrite it.
  Loaded load();

  // Writes atomically; ProgressError when it cannot, with the previous file untouched.
  void save(const Progress& progress);

  // Atomic writes to, and a checked read from, a file of the learner's choosing.
  static void export_to(const Progress& progress, const QString& path);
  static Progress import_from(const QString& path);

  // Runs after the new contents are written and before they replace the old file: a test
  // ends the process there to show that a crash mid-save leaves the old file whole.
  void set_before_commit(std::function<void()> hook) { before_commit_ = std::move(hook); }

 private:
  QString folder_;
  Clock clock_;
  QString refuse_to_save_;  // why save() must not overwrite the file, when it must not
  std::function<void()> before_commit_;
};

}  // namespace servescope::lessons
