#include "app/gui/deployments/deployments_window.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>
#include <fstream>

#include "app/gui/deployments/add_entry_dialogs.h"
#include "app/gui/deployments/deployment_chart.h"
#include "engine/serving/kv_budget.h"
#include "widgets/chart_painting.h"

namespace servescope::gui {

using widgets::chart::format_bytes;
using widgets::chart::format_number;

std::optional<serving::DeviceSpec> this_machine(double memory_gb_per_s,
                                                double compute_gflop_per_s) {
  if (!(memory_gb_per_s > 0.0) || !(compute_gflop_per_s > 0.0)) return std::nullopt;
  serving::DeviceSpec device;
  device.name = QCoreApplication::translate("DeploymentsWindow", "This machine").toStdString();
  device.memory_gb = static_cast<double>(serving::physical_memory_bytes()) / 1e9;
  device.bandwidth_gb_per_s = memory_gb_per_s;
  device.peak_tflop_per_s = compute_gflop_per_s / 1000.0;
  device.source = QCoreApplication::translate(
                      "DeploymentsWindow",
                      "measured here: main-memory bandwidth and the matrix-product rate of the "
                      "loaded model's weights, by the roofline probe; memory as the operating "
                      "system reports it")
                      .toStdString();
  return device;
}

DeploymentsWindow::DeploymentsWindow(std::filesystem::path shipped, std::filesystem::path user_file,
                                     QWidget* parent)
    : QDialog(parent),
      shipped_path_(std::move(shipped)),
      user_path_(std::move(user_file)),
      model_picker_(new QComboBox),
      weight_picker_(new QComboBox),
      kv_picker_(new QComboBox),
      context_(new QSpinBox),
      summary_(new QLabel),
      problem_(new QLabel),
      table_(new DeploymentTableModel(this)),
      view_(new QTableView),
      chart_(new DeploymentChart) {
  setWindowTitle(tr("Here and there"));
  setObjectName("here-and-there");
  using T = gguf::GgmlType;
  for (const auto& [label, type] : {std::pair{"F16", T::F16}, std::pair{"Q8_0", T::Q8_0},
                                    std::pair{"Q4_K", T::Q4_K}, std::pair{"Q4_0", T::Q4_0}}) {
    weight_picker_->addItem(label, static_cast<int>(type));
  }
  kv_picker_->addItem("F16", static_cast<int>(T::F16));
  kv_picker_->addItem("Q8_0", static_cast<int>(T::Q8_0));
  context_->setRange(1, 1 << 24);
  context_->setValue(4096);
  context_->setGroupSeparatorShown(true);
  context_->setSuffix(tr(" tokens"));
  context_->setToolTip(tr("Every request's length: its KV cache and what a decode step reads"));

  auto* choices = new QHBoxLayout;
  const auto labelled = [&](const QString& text, QWidget* field) {
    auto* label = new QLabel(text);
    label->setBuddy(field);
    choices->addWidget(label);
    choices->addWidget(field);
  };
  labelled(tr("&Model"), model_picker_);
  labelled(tr("&Weights"), weight_picker_);
  labelled(tr("&KV cache"), kv_picker_);
  labelled(tr("&Context"), context_);
  choices->addStretch();

  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  problem_->setWordWrap(true);
  problem_->setObjectName("deployments-problem");
  problem_->hide();

  auto* sorted = new QSortFilterProxyModel(this);
  sorted->setSourceModel(table_);
  sorted->setSortRole(Qt::UserRole);
  view_->setModel(sorted);
  view_->setSortingEnabled(true);
  view_->sortByColumn(-1, Qt::AscendingOrder);  // the file's order until a header is clicked
  view_->verticalHeader()->hide();
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setAccessibleName(tr("Deployments"));
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->setWordWrap(false);  // one line per device; the sources are in the tooltips

  auto* add_device_button = new QPushButton(tr("Add &device..."));
  auto* add_model_button = new QPushButton(tr("Add model &shape..."));
  connect(add_device_button, &QPushButton::clicked, this, [this] {
    if (auto device = ask_for_device(this)) add_device(*device);
  });
  connect(add_model_button, &QPushButton::clicked, this, [this] {
    if (auto model = ask_for_model_shape(this)) add_model(*model);
  });
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  buttons->addButton(add_device_button, QDialogButtonBox::ActionRole);
  buttons->addButton(add_model_button, QDialogButtonBox::ActionRole);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(choices);
  layout->addWidget(summary_);
  layout->addWidget(problem_);
  layout->addWidget(view_, 1);
  layout->addWidget(chart_);
  layout->addWidget(buttons);
  resize(1240, 540);

  load();
  connect(model_picker_, &QComboBox::currentIndexChanged, this, [this] {
    const int index = model_picker_->currentIndex();
    if (index >= 0 && index < static_cast<int>(data_.models.size())) {
      const auto longest = data_.models[static_cast<size_t>(index)].shape.context_length;
      context_->setMaximum(static_cast<int>(std::min<int64_t>(longest, 1 << 24)));
    }
    recompute();
  });
  connect(weight_picker_, &QComboBox::currentIndexChanged, this, &DeploymentsWindow::recompute);
  connect(kv_picker_, &QComboBox::currentIndexChanged, this, &DeploymentsWindow::recompute);
  connect(context_, &QSpinBox::valueChanged, this, &DeploymentsWindow::recompute);
  recompute();
}

void DeploymentsWindow::load() {
  QStringList problems;
  data_ = {};
  user_ = {};
  try {
    data_ = app::read_deployments(shipped_path_);
  } catch (const std::exception& error) {
    problems << QString::fromStdString(error.what());
  }
  if (std::filesystem::exists(user_path_)) {
    try {
      user_ = app::read_deployments(user_path_);
    } catch (const std::exception& error) {
      problems << tr("Your own entries were not read: %1").arg(error.what());
    }
  }
  data_.models.insert(data_.models.end(), user_.models.begin(), user_.models.end());
  data_.devices.insert(data_.devices.end(), user_.devices.begin(), user_.devices.end());
  problem_->setText(problems.join('\n'));
  problem_->setVisible(!problems.isEmpty());
  fill_model_picker();
}

void DeploymentsWindow::fill_model_picker() {
  const QSignalBlocker quiet(model_picker_);
  const int kept = model_picker_->currentIndex();
  model_picker_->clear();
  for (const app::PublishedModel& m : data_.models) {
    model_picker_->addItem(QString::fromStdString(m.name));
  }
  model_picker_->setCurrentIndex(std::clamp(kept, 0, model_picker_->count() - 1));
}

void DeploymentsWindow::set_this_machine(std::optional<serving::DeviceSpec> device) {
  this_machine_ = std::move(device);
  recompute();
}

void DeploymentsWindow::choose(int model, gguf::GgmlType weights, gguf::GgmlType kv_type,
                               int context_tokens) {
  model_picker_->setCurrentIndex(model);
  weight_picker_->setCurrentIndex(weight_picker_->findData(static_cast<int>(weights)));
  kv_picker_->setCurrentIndex(kv_picker_->findData(static_cast<int>(kv_type)));
  context_->setValue(context_tokens);
  recompute();
}

void DeploymentsWindow::recompute() {
  const int index = model_picker_->currentIndex();
  if (index < 0 || index >= static_cast<int>(data_.models.size())) {
    table_->set_rows({}, 0);
    chart_->set_rows({});
    summary_->setText(tr("No model shapes to compute with."));
    return;
  }
  const app::PublishedModel& model = data_.models[static_cast<size_t>(index)];
  const auto weights = static_cast<gguf::GgmlType>(weight_picker_->currentData().toInt());
  const auto kv_type = static_cast<gguf::GgmlType>(kv_picker_->currentData().toInt());
  const int64_t context = context_->value();
  std::vector<DeploymentRow> rows;
  for (const serving::DeviceSpec& device : data_.devices) {
    rows.push_back({device, false,
                    serving::deployment_figures(model.shape, weights, kv_type, device, context)});
  }
  if (this_machine_) {
    rows.push_back(
        {*this_machine_, true,
         serving::deployment_figures(model.shape, weights, kv_type, *this_machine_, context)});
  }
  const QLocale locale = QLocale::system();
  if (!rows.empty()) {
    const serving::DeploymentFigures& f = rows.front().figures;
    summary_->setText(
        tr("%1 as %2: %3 billion parameters, %4 GB (%5) of weights. KV cache in %6: %7 per "
           "token, %8 per request at %9 tokens. Computed with the engine's formulas from the "
           "published shape (%10) and each device's datasheet (memory in GB of 10^9 bytes); only "
           "this machine's bandwidth and compute rate are measured.")
            .arg(QString::fromStdString(model.name), weight_picker_->currentText(),
                 format_number(static_cast<double>(f.parameters) / 1e9),
                 format_number(static_cast<double>(f.weight_bytes) / 1e9),
                 format_bytes(f.weight_bytes), kv_picker_->currentText(),
                 format_bytes(f.kv_bytes_per_token), format_bytes(f.kv_bytes_per_request),
                 locale.toString(static_cast<qlonglong>(context)),
                 QString::fromStdString(model.source)));
  }
  chart_->set_rows(rows);
  table_->set_rows(std::move(rows), context);
  view_->resizeColumnsToContents();
}

QString DeploymentsWindow::summary() const { return summary_->text(); }
QString DeploymentsWindow::problem() const { return problem_->text(); }

bool DeploymentsWindow::save_user_entries(const app::DeploymentData& user) {
  const std::string text = app::deployments_json(user);
  try {
    app::parse_deployments(text, tr("the new entry").toStdString());  // the file's own checks
    std::filesystem::create_directories(user_path_.parent_path());
    std::ofstream out(user_path_);
    out << text;
    if (!out.flush()) throw std::runtime_error("could not write " + user_path_.string());
  } catch (const std::exception& error) {
    problem_->setText(tr("Not added: %1").arg(error.what()));
    problem_->show();
    return false;
  }
  load();
  recompute();
  return true;
}

bool DeploymentsWindow::add_device(const serving::DeviceSpec& device) {
  app::DeploymentData user = user_;
  user.devices.push_back(device);
  return save_user_entries(user);
}

bool DeploymentsWindow::add_model(const app::PublishedModel& model) {
  app::DeploymentData user = user_;
  user.models.push_back(model);
  if (!save_user_entries(user)) return false;
  model_picker_->setCurrentIndex(model_picker_->count() - 1);
  return true;
}

}  // namespace servescope::gui
