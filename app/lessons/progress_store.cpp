#include "app/lessons/progress_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <QStandardPaths>

namespace servescope::lessons {
namespace {

const QString kFileName = QStringLiteral("progress.json");

QString q(const std::string& s) { return QString::fromStdString(s); }

QString iso(const QDateTime& time) { return time.toString(Qt::ISODateWithMs); }

// Reads fields of one JSON object, naming the object in errors: "answers[2].score".
class Fields {
 public:
  Fields(const QJsonValue& value, QString where) : where_(std::move(where)) {
    if (!value.isObject()) fail("is not an object");
    object_ = value.toObject();
  }

  std::string text(const char* key) const {
    const QJsonValue v = object_.value(key);
    if (!v.isString()) fail(QString(".%1 is missing or not text").arg(key));
    return v.toString().toStdString();
  }
  double number(const char* key) const {
    const QJsonValue v = object_.value(key);
    if (!v.isDouble()) fail(QString(".%1 is missing or not a number").arg(key));
    return v.toDouble();
  }
  bool flag(const char* key) const {
    const QJsonValue v = object_.value(key);
    if (!v.isBool()) fail(QString(".%1 is missing or not true/false").arg(key));
    return v.toBool();
  }
  QDateTime time(const char* key) const {
    const QDateTime t = QDateTime::fromString(q(text(key)), Qt::ISODateWithMs);
    if (!t.isValid()) fail(QString(".%1 is not an ISO 8601 time").arg(key));
    return t;
  }
  QJsonArray array(const char* key) const {
    const QJsonValue v = object_.value(key);
    if (!v.isArray()) fail(QString(".%1 is missing or not a list").arg(key));
    return v.toArray();
  }
  const QJsonObject& object() const { return object_; }

  [[noreturn]] void fail(const QString& what) const {
    throw ProgressError((where_ + (what.startsWith('.') ? "" : " ") + what).toStdString());
  }

 private:
  QString where_;
  QJsonObject object_;
};

QString element(const char* list, qsizetype i) { return QString("%1[%2]").arg(list).arg(i); }

StepResultRecord result_from_json(const QJsonValue& value, const QString& where) {
  const Fields r(value, where);
  StepResultRecord record{r.text("lesson"), r.text("step"), {}, {}, r.time("time")};
  const Fields measures(r.object().value("measures"), where + ".measures");
  for (auto it = measures.object().begin(); it != measures.object().end(); ++it) {
    const Fields m(it.value(), where + ".measures." + it.key());
    const double runs = m.number("runs");
    if (runs < 1 || runs != static_cast<int>(runs)) m.fail(".runs is not a whole number from 1");
    record.measures[it.key().toStdString()] =
        Sample{m.number("median"), m.number("low"), m.number("high"), static_cast<int>(runs)};
  }
  const QJsonArray conditions = r.array("conditions");
  for (qsizetype i = 0; i < conditions.size(); ++i) {
    const Fields c(conditions[i], where + "." + element("conditions", i));
    const QJsonValue passed = c.object().value("passed");
    if (!passed.isBool() && !passed.isNull()) c.fail(".passed is not true, false or null");
    record.conditions.push_back(
        {c.text("condition"), passed.isBool() ? std::optional<bool>(passed.toBool()) : std::nullopt});
  }
  return record;
}

// QSaveFile: the new contents go to a temporary file that replaces `path` only on commit().
void write_atomically(const QString& path, const QByteArray& bytes,
                      const std::function<void()>& before_commit) {
  const QFileInfo info(path);
  if (!QDir().mkpath(info.absolutePath())) {
    throw ProgressError("cannot create the folder " + info.absolutePath().toStdString());
  }
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) {
    throw ProgressError("cannot write " + path.toStdString() + ": " +
                        file.errorString().toStdString());
  }
  if (file.write(bytes) != bytes.size()) {
    file.cancelWriting();
    throw ProgressError("cannot write " + path.toStdString() + ": " +
                        file.errorString().toStdString());
  }
  if (before_commit) before_commit();
  if (!file.commit()) {
    throw ProgressError("cannot save " + path.toStdString() + ": " +
                        file.errorString().toStdString());
  }
}

QByteArray read_all(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    throw ProgressError("cannot read " + path.toStdString() + ": " +
                        file.errorString().toStdString());
  }
  return file.readAll();
}

}  // namespace

QByteArray progress_to_json(const Progress& p) {
  QJsonObject root;
  root["schema_version"] = kProgressSchemaVersion;
  root["position"] = QJsonObject{{"lesson", q(p.lesson)}, {"step", q(p.step)}};
  QJsonArray predictions;
  for (const PredictionRecord& r : p.predictions) {
    predictions.append(QJsonObject{{"lesson", q(r.lesson)},
                                   {"step", q(r.step)},
                                   {"value", q(r.value)},
                                   {"time", iso(r.time)}});
  }
  root["predictions"] = predictions;
  QJsonArray answers;
  for (const AnswerRecord& r : p.answers) {
    answers.append(QJsonObject{{"lesson", q(r.lesson)},
                               {"question", q(r.question)},
                               {"given", q(r.given)},
                               {"correct", r.correct},
                               {"score", r.score},
                               {"time", iso(r.time)}});
  }
  root["answers"] = answers;
  QJsonArray results;
  for (const StepResultRecord& r : p.results) {
    QJsonObject measures;
    for (const auto& [name, s] : r.measures) {
      measures[q(name)] = QJsonObject{
          {"median", s.median}, {"low", s.low}, {"high", s.high}, {"runs", s.runs}};
    }
    QJsonArray conditions;
    for (const ConditionRecord& c : r.conditions) {
      conditions.append(QJsonObject{
          {"condition", q(c.condition)},
          {"passed", c.passed ? QJsonValue(*c.passed) : QJsonValue(QJsonValue::Null)}});
    }
    results.append(QJsonObject{{"lesson", q(r.lesson)},
                               {"step", q(r.step)},
                               {"measures", measures},
                               {"conditions", conditions},
                               {"time", iso(r.time)}});
  }
  root["results"] = results;
  QJsonObject cards;
  for (const auto& [id, state] : p.cards) {
    cards[q(id)] = QJsonObject{{"box", state.box},
                               {"due", state.due.isValid() ? state.due.toString(Qt::ISODate) : ""}};
  }
  root["flashcards"] = cards;
  return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

Progress progress_from_json(const QByteArray& json) {
  QJsonParseError error{};
  const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
  if (error.error != QJsonParseError::NoError) {
    throw ProgressError("not JSON: " + error.errorString().toStdString() + " at byte " +
                        std::to_string(error.offset));
  }
  const Fields root(doc.object(), "the progress file");
  if (!doc.isObject()) root.fail("is not a JSON object");
  const double version = root.number("schema_version");
  if (version > kProgressSchemaVersion && version == static_cast<int>(version)) {
    throw NewerProgressError("the progress file has schema_version " +
                             std::to_string(static_cast<int>(version)) +
                             ", from a newer ServeScope; this one reads version " +
                             std::to_string(kProgressSchemaVersion));
  }
  if (version != kProgressSchemaVersion) root.fail(".schema_version is not 1");
  Progress p;
  const Fields position(root.object().value("position"), "position");
  p.lesson = position.text("lesson");
  p.step = position.text("step");
  const QJsonArray predictions = root.array("predictions");
  for (qsizetype i = 0; i < predictions.size(); ++i) {
    const Fields r(predictions[i], element("predictions", i));
    p.predictions.push_back({r.text("lesson"), r.text("step"), r.text("value"), r.time("time")});
  }
  const QJsonArray answers = root.array("answers");
  for (qsizetype i = 0; i < answers.size(); ++i) {
    const Fields r(answers[i], element("answers", i));
    const double score = r.number("score");
    if (score < 0 || score > 1) r.fail(".score is outside 0..1");
    p.answers.push_back({r.text("lesson"), r.text("question"), r.text("given"), r.flag("correct"),
                         score, r.time("time")});
  }
  // Files from before step results were kept have none.
  const QJsonArray results = root.object().value("results").toArray();
  for (qsizetype i = 0; i < results.size(); ++i) {
    p.results.push_back(result_from_json(results[i], element("results", i)));
  }
  const Fields cards(root.object().value("flashcards"), "flashcards");
  for (auto it = cards.object().begin(); it != cards.object().end(); ++it) {
    const Fields card(it.value(), "flashcards." + it.key());
    const double box = card.number("box");
    if (box != static_cast<int>(box) || box < 1 || box > kLeitnerBoxes) {
      card.fail(".box is not a whole number from 1 to 5");
    }
    CardState state;
    state.box = static_cast<int>(box);
    const std::string due = card.text("due");
    if (!due.empty()) {
      state.due = QDate::fromString(q(due), Qt::ISODate);
      if (!state.due.isValid()) card.fail(".due is not a date (YYYY-MM-DD)");
    }
    p.cards[it.key().toStdString()] = state;
  }
  return p;
}

const StepResultRecord* Progress::result(const std::string& lesson_id,
                                         const std::string& step_id) const {
  for (const StepResultRecord& r : results) {
    if (r.lesson == lesson_id && r.step == step_id) return &r;
  }
  return nullptr;
}

void Progress::keep_result(StepResultRecord record) {
  std::erase_if(results, [&](const StepResultRecord& r) {
    return r.lesson == record.lesson && r.step == record.step;
  });
  results.push_back(std::move(record));
}

QString default_progress_folder() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
}

ProgressStore::ProgressStore(QString folder, Clock clock)
    : folder_(std::move(folder)), clock_(std::move(clock)) {
  if (!clock_) clock_ = [] { return QDateTime::currentDateTimeUtc(); };
}

QString ProgressStore::path() const { return QDir(folder_).filePath(kFileName); }

ProgressStore::Loaded ProgressStore::load() {
  Loaded loaded;
  refuse_to_save_.clear();
  if (!QFileInfo::exists(path())) return loaded;
  QString reason;
  try {
    loaded.progress = progress_from_json(read_all(path()));
    return loaded;
  } catch (const NewerProgressError& error) {
    refuse_to_save_ = path() + ": " + QString::fromStdString(error.what()) +
                      "; it is kept as it is and progress is not saved";
    loaded.notice = refuse_to_save_;
    return loaded;
  } catch (const ProgressError& error) {
    reason = QString::fromStdString(error.what());
  }
  const QString stamp = clock_().toUTC().toString("yyyyMMdd-HHmmss");
  QString aside = QDir(folder_).filePath("progress.corrupt-" + stamp + ".json");
  for (int n = 2; QFileInfo::exists(aside); ++n) {
    aside = QDir(folder_).filePath(QString("progress.corrupt-%1-%2.json").arg(stamp).arg(n));
  }
  if (QFile::rename(path(), aside)) {
    loaded.notice = "Your progress file could not be read (" + reason + "). It was set aside as " +
                    aside + " and a new one is started.";
  } else {
    refuse_to_save_ = "progress file " + path() + " could not be read (" + reason +
                      ") nor set aside; move it away to save progress again";
    loaded.notice = refuse_to_save_;
  }
  return loaded;
}

void ProgressStore::save(const Progress& progress) {
  if (!refuse_to_save_.isEmpty()) throw ProgressError(refuse_to_save_.toStdString());
  write_atomically(path(), progress_to_json(progress), before_commit_);
}

void ProgressStore::export_to(const Progress& progress, const QString& path) {
  write_atomically(path, progress_to_json(progress), {});
}

Progress ProgressStore::import_from(const QString& path) {
  try {
    return progress_from_json(read_all(path));
  } catch (const ProgressError& error) {
    throw ProgressError(path.toStdString() + " cannot be imported: " + error.what());
  }
}

}  // namespace servescope::lessons
