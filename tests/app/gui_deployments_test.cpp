// View > Here and there: the table shows what the engine's formulas give for each device, says
// which figures are measured and which computed, and keeps what the user adds in their own file.
#include <gtest/gtest.h>

#include <QApplication>
#include <QTemporaryDir>
#include <filesystem>
#include <fstream>

#include "app/gui/deployments/deployments_window.h"
#include "tests/app/gui_test_support.h"
#include "widgets/theme.h"

namespace servescope::gui {
namespace {

const std::filesystem::path kShipped =
    std::filesystem::path(SERVESCOPE_SOURCE_DIR) / "assets/deployments/deployments.json";

class DeploymentsFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::app();
    ASSERT_TRUE(folder_.isValid());
    user_file_ = folder_.path().toStdString() + "/deployments.json";
  }
  std::unique_ptr<DeploymentsWindow> open() {
    return std::make_unique<DeploymentsWindow>(kShipped, user_file_);
  }
  static QVariant cell(const DeploymentsWindow& w, int row, int column, int role = Qt::UserRole) {
    return w.table().data(w.table().index(row, column), role);
  }

  QTemporaryDir folder_;
  std::filesystem::path user_file_;
};

TEST_F(DeploymentsFixture, EachDeviceRowHoldsTheFormulasFiguresAndSaysTheyAreComputed) {
  auto window = open();
  ASSERT_TRUE(window->problem().isEmpty()) << window->problem().toStdString();
  window->choose(0, gguf::GgmlType::F16, gguf::GgmlType::F16, 4096);  // Llama 3 8B
  const app::DeploymentData& data = window->data();
  ASSERT_EQ(window->table().rowCount(), static_cast<int>(data.devices.size()));
  for (int row = 0; row < window->table().rowCount(); ++row) {
    const serving::DeploymentFigures expected =
        serving::deployment_figures(data.models[0].shape, gguf::GgmlType::F16, gguf::GgmlType::F16,
                                    data.devices[static_cast<size_t>(row)], 4096);
    using C = DeploymentTableModel;
    EXPECT_DOUBLE_EQ(cell(*window, row, C::kDecodeFloor).toDouble(), expected.decode_floor_ms);
    EXPECT_DOUBLE_EQ(cell(*window, row, C::kTokensPerSecond).toDouble(),
                     1000.0 / expected.decode_floor_ms);
    EXPECT_EQ(cell(*window, row, C::kRequestsFit).toLongLong(), expected.requests_that_fit);
    EXPECT_EQ(cell(*window, row, C::kSource, Qt::DisplayRole).toString(),
              "computed from the datasheet");
  }
  EXPECT_TRUE(window->summary().contains("8.03 billion parameters"))
      << window->summary().toStdString();
}

TEST_F(DeploymentsFixture, ThisMachineIsARowOfItsOwnMarkedMeasured) {
  auto window = open();
  const int datasheets = window->table().rowCount();
  window->set_this_machine(this_machine(20.0, 150.0));  // 20 GB/s, 150 GFLOP/s
  ASSERT_EQ(window->table().rowCount(), datasheets + 1);
  const int last = datasheets;
  EXPECT_EQ(cell(*window, last, DeploymentTableModel::kSource, Qt::DisplayRole).toString(),
            "measured here");
  EXPECT_DOUBLE_EQ(cell(*window, last, DeploymentTableModel::kBandwidth).toDouble(), 20.0);
  EXPECT_DOUBLE_EQ(cell(*window, last, DeploymentTableModel::kPeak).toDouble(), 0.15);
  EXPECT_FALSE(this_machine(0.0, 150.0).has_value()) << "unmeasured roofs give no row";
}

TEST_F(DeploymentsFixture, AnAddedDeviceIsKeptInTheUsersFileAndAnInvalidShapeIsRefused) {
  auto window = open();
  const int before = window->table().rowCount();
  serving::DeviceSpec mine{"My laptop GPU", 8.0, 256.0, 20.0, "my notes"};
  ASSERT_TRUE(window->add_device(mine)) << window->problem().toStdString();
  EXPECT_EQ(window->table().rowCount(), before + 1);
  auto again = open();  // a new window reads it back
  EXPECT_EQ(again->table().rowCount(), before + 1);
  EXPECT_EQ(again->data().devices.back().name, "My laptop GPU");

  app::PublishedModel odd;
  odd.name = "Odd";
  odd.source = "mine";
  odd.shape = again->data().models[0].shape;
  odd.shape.n_kv_heads = 5;  // 32 heads cannot share 5 KV heads evenly
  EXPECT_FALSE(again->add_model(odd));
  EXPECT_TRUE(again->problem().contains("multiple of")) << again->problem().toStdString();
}

TEST_F(DeploymentsFixture, ABrokenUserFileIsNamedAndTheShippedRowsStillShow) {
  std::ofstream(user_file_) << "{ not json";
  auto window = open();
  EXPECT_TRUE(window->problem().contains("Your own entries were not read"))
      << window->problem().toStdString();
  EXPECT_GT(window->table().rowCount(), 0);
}

// SERVESCOPE_TEST_SHOTS=FOLDER keeps the window as the test saw it, light and dark.
TEST_F(DeploymentsFixture, ScreenshotsLightAndDark) {
  const QString shots = qEnvironmentVariable("SERVESCOPE_TEST_SHOTS");
  if (shots.isEmpty()) GTEST_SKIP() << "SERVESCOPE_TEST_SHOTS not set";
  auto window = open();
  window->set_this_machine(this_machine(18.0, 120.0));
  window->choose(0, gguf::GgmlType::Q4_K, gguf::GgmlType::F16, 4096);
  for (const bool dark : {false, true}) {
    widgets::set_theme(dark ? widgets::ThemeKind::kDark : widgets::ThemeKind::kLight);
    QApplication::setPalette(widgets::palette_of(widgets::theme()));  // as the window applies it
    window->show();
    QCoreApplication::processEvents();  // the palette change reaches every widget
    window->grab().save(shots + (dark ? "/here-and-there-dark.png" : "/here-and-there-light.png"));
  }
  widgets::set_theme(widgets::ThemeKind::kLight);
  QApplication::setPalette(widgets::palette_of(widgets::theme()));
}

}  // namespace
}  // namespace servescope::gui
