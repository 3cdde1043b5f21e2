#include "app/lessons/progress_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <csignal>
#include <stdexcept>

namespace servescope::lessons {
namespace {

const QDateTime kNoon(QDate(2026, 3, 2), QTime(12, 0), Qt::UTC);

Progress sample_progress() {
  Progress p;
  p.lesson = "kv-cache";
  p.step = "predict-double";
  p.predictions.push_back({"kv-cache", "predict-double", "0", kNoon});
  p.answers.push_back({"kv-cache", "kv-bytes-200", "272000", true, 1.0, kNoon.addSecs(60)});
  p.answers.push_back({"kv-cache", "why-cache", "", false, 0.5, kNoon.addSecs(120)});
  p.results.push_back({"kv-cache",
                       "measure-f32",
                       {{"kv_bytes", {272000, 272000, 272000, 1}}, {"tpot_ms", {4.5, 4.1, 5.25, 3}}},
                       {{"kv_bytes == 272000", true}, {"tpot_ms < 1", false}, {"x > 1", std::nullopt}},
                       kNoon.addSecs(30)});
  p.cards["fc-kv-what"] = {3, QDate(2026, 3, 5)};
  p.cards["fc-new"] = {1, QDate()};
  return p;
}

QByteArray read(const QString& path) {
  QFile file(path);
  EXPECT_TRUE(file.open(QIODevice::ReadOnly)) << path.toStdString();
  return file.readAll();
}

void write(const QString& path, const QByteArray& bytes) {
  QFile file(path);
  ASSERT_TRUE(file.open(QIODevice::WriteOnly));
  file.write(bytes);
}

QStringList files_in(const QString& folder) {
  return QDir(folder).entryList(QDir::Files | QDir::Hidden, QDir::Name);
}

TEST(ProgressStore, SavesAndLoadsEveryField) {
  QTemporaryDir dir;
  ProgressStore store(dir.path());
  EXPECT_EQ(store.load().progress, Progress{});  // no file: a fresh start
  store.save(sample_progress());
  const ProgressStore::Loaded loaded = ProgressStore(dir.path()).load();
  EXPECT_TRUE(loaded.notice.isEmpty());
  EXPECT_EQ(loaded.progress, sample_progress());
  EXPECT_THAT(read(store.path()).toStdString(), testing::HasSubstr("\"schema_version\": 1"));
  EXPECT_EQ(files_in(dir.path()), QStringList{"progress.json"});  // no temporary left
}

TEST(ProgressStore, AFileFromBeforeStepResultsWereKeptLoadsWithNone) {
  QByteArray json = progress_to_json(sample_progress());
  QJsonObject root = QJsonDocument::fromJson(json).object();
  root.remove("results");
  Progress expected = sample_progress();
  expected.results.clear();
  EXPECT_EQ(progress_from_json(QJsonDocument(root).toJson()), expected);
}

TEST(ProgressStore, AStepsNewResultReplacesItsOldOne) {
  Progress p = sample_progress();
  StepResultRecord again = p.results.front();
  again.measures["kv_bytes"].median = 1;
  p.keep_result(again);
  ASSERT_EQ(p.results.size(), 1u);
  EXPECT_EQ(p.result("kv-cache", "measure-f32")->measures.at("kv_bytes").median, 1);
  EXPECT_EQ(p.result("kv-cache", "other"), nullptr);
}

TEST(ProgressStore, AFailureBetweenWritingAndCommittingLeavesTheOldFileWhole) {
  QTemporaryDir dir;
  ProgressStore store(dir.path());
  store.save(sample_progress());
  const QByteArray before = read(store.path());
  Progress changed = sample_progress();
  changed.lesson = "batching";
  store.set_before_commit([] { throw std::runtime_error("power cut"); });
  EXPECT_THROW(store.save(changed), std::runtime_error);
  EXPECT_EQ(read(store.path()), before);
  EXPECT_EQ(files_in(dir.path()), QStringList{"progress.json"});
}

TEST(ProgressStoreDeathTest, AKillMidSaveLeavesTheOldFileWhole) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  QTemporaryDir dir;
  ProgressStore(dir.path()).save(sample_progress());
  const QByteArray before = read(QDir(dir.path()).filePath("progress.json"));
  EXPECT_EXIT(
      {
        ProgressStore store(dir.path());
        Progress changed = sample_progress();
        changed.answers.clear();
        store.set_before_commit([] { std::raise(SIGKILL); });
        store.save(changed);
      },
      testing::KilledBySignal(SIGKILL), "");
  const ProgressStore::Loaded after = ProgressStore(dir.path()).load();
  EXPECT_TRUE(after.notice.isEmpty());
  EXPECT_EQ(after.progress, sample_progress());
  EXPECT_EQ(read(QDir(dir.path()).filePath("progress.json")), before);
}

TEST(ProgressStore, ACorruptFileIsSetAsideWithANoticeAndNotOverwritten) {
  QTemporaryDir dir;
  ProgressStore store(dir.path(), [] { return kNoon; });
  const QByteArray garbage = "{\"schema_version\": 1, \"answers\": [tru";
  write(store.path(), garbage);
  const ProgressStore::Loaded loaded = store.load();
  EXPECT_EQ(loaded.progress, Progress{});
  EXPECT_THAT(loaded.notice.toStdString(), testing::HasSubstr("could not be read (not JSON"));
  EXPECT_THAT(loaded.notice.toStdString(),
              testing::HasSubstr("progress.corrupt-20260302-120000.json"));
  const QString aside = QDir(dir.path()).filePath("progress.corrupt-20260302-120000.json");
  EXPECT_EQ(read(aside), garbage);
  EXPECT_FALSE(QFile::exists(store.path()));
  store.save(sample_progress());  // a new file beside the one set aside
  EXPECT_EQ(read(aside), garbage);
  // A second corrupt file the same second gets its own name.
  write(store.path(), "[]");
  EXPECT_THAT(store.load().notice.toStdString(),
              testing::HasSubstr("progress.corrupt-20260302-120000-2.json"));
  EXPECT_EQ(read(aside), garbage);
}

TEST(ProgressStore, WrongFieldsAreCorruptionNamedByPlace) {
  Progress p = sample_progress();
  QByteArray json = progress_to_json(p);
  json.replace("\"score\": 0.5", "\"score\": \"half\"");
  EXPECT_THAT([&] { progress_from_json(json); },
              testing::ThrowsMessage<ProgressError>(testing::HasSubstr("answers[1].score")));
  QByteArray box = progress_to_json(p);
  box.replace("\"box\": 3", "\"box\": 9");
  EXPECT_THAT(
      [&] { progress_from_json(box); },
      testing::ThrowsMessage<ProgressError>(testing::HasSubstr("flashcards.fc-kv-what.box")));
}

TEST(ProgressStore, AFileFromANewerVersionIsKeptAndNeverOverwritten) {
  QTemporaryDir dir;
  ProgressStore store(dir.path());
  QByteArray newer = progress_to_json(sample_progress());
  newer.replace("\"schema_version\": 1", "\"schema_version\": 2");
  write(store.path(), newer);
  const ProgressStore::Loaded loaded = store.load();
  EXPECT_THAT(loaded.notice.toStdString(), testing::HasSubstr("newer ServeScope"));
  EXPECT_THROW(store.save(sample_progress()), ProgressError);
  EXPECT_EQ(read(store.path()), newer);
  EXPECT_EQ(files_in(dir.path()), QStringList{"progress.json"});
}

TEST(ProgressStore, ExportAndImportRoundTrip) {
  QTemporaryDir dir;
  const QString handed_in = QDir(dir.path()).filePath("hand-in/alice-progress.json");
  ProgressStore::export_to(sample_progress(), handed_in);
  EXPECT_EQ(ProgressStore::import_from(handed_in), sample_progress());
  write(QDir(dir.path()).filePath("bad.json"), "not json");
  EXPECT_THAT([&] { ProgressStore::import_from(QDir(dir.path()).filePath("bad.json")); },
              testing::ThrowsMessage<ProgressError>(testing::HasSubstr("cannot be imported")));
  EXPECT_THROW(ProgressStore::import_from(QDir(dir.path()).filePath("missing.json")),
               ProgressError);
}

}  // namespace
}  // namespace servescope::lessons
