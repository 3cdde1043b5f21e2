#include "app/gui/deployments/add_entry_dialogs.h"

#include <QCheckBox>
#include <QCoreApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

namespace servescope::gui {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("AddEntryDialogs", text); }

QDoubleSpinBox* figure(double max, double value, const QString& suffix) {
  auto* box = new QDoubleSpinBox;
  box->setRange(0.01, max);
  box->setDecimals(2);
  box->setValue(value);
  box->setSuffix(suffix);
  return box;
}

QSpinBox* count(int max, int value) {
  auto* box = new QSpinBox;
  box->setRange(1, max);
  box->setValue(value);
  box->setGroupSeparatorShown(true);
  return box;
}

// The dialog with its OK button enabled only while `name` holds text.
struct Form {
  QDialog dialog;
  QFormLayout* form;
  QLineEdit* name;
  explicit Form(QWidget* parent, const QString& title) : dialog(parent) {
    dialog.setWindowTitle(title);
    form = new QFormLayout(&dialog);
    name = new QLineEdit;
    form->addRow(tr("&Name"), name);
  }
  bool run() {
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    QPushButton* ok = buttons->button(QDialogButtonBox::Ok);
    ok->setEnabled(false);
    QObject::connect(name, &QLineEdit::textChanged, ok,
                     [ok](const QString& text) { ok->setEnabled(!text.trimmed().isEmpty()); });
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    form->addRow(buttons);
    return dialog.exec() == QDialog::Accepted;
  }
};

}  // namespace

std::optional<serving::DeviceSpec> ask_for_device(QWidget* parent) {
  Form f(parent, tr("Add a device"));
  QDoubleSpinBox* memory = figure(1e5, 16, tr(" GB"));
  QDoubleSpinBox* bandwidth = figure(1e6, 100, tr(" GB/s"));
  QDoubleSpinBox* peak = figure(1e5, 10, tr(" TFLOP/s"));
  auto* source = new QLineEdit(tr("added by you"));
  f.form->addRow(tr("&Memory"), memory);
  f.form->addRow(tr("&Bandwidth"), bandwidth);
  f.form->addRow(tr("&Peak rate"), peak);
  f.form->addRow(tr("&Source"), source);
  peak->setToolTip(tr("The dense rate the weights' matrix products run at (e.g. FP16 tensor)"));
  if (!f.run()) return std::nullopt;
  serving::DeviceSpec device;
  device.name = f.name->text().trimmed().toStdString();
  device.memory_gb = memory->value();
  device.bandwidth_gb_per_s = bandwidth->value();
  device.peak_tflop_per_s = peak->value();
  device.source =
      source->text().trimmed().isEmpty() ? "added by you" : source->text().trimmed().toStdString();
  return device;
}

std::optional<app::PublishedModel> ask_for_model_shape(QWidget* parent) {
  Form f(parent, tr("Add a model shape"));
  QSpinBox* layers = count(1000, 32);
  QSpinBox* dim = count(1 << 20, 4096);
  QSpinBox* heads = count(4096, 32);
  QSpinBox* kv_heads = count(4096, 8);
  QSpinBox* head_dim = count(4096, 128);
  QSpinBox* ffn = count(1 << 22, 14336);
  QSpinBox* vocab = count(1 << 22, 32000);
  QSpinBox* context = count(1 << 24, 8192);
  auto* qkv_bias = new QCheckBox(tr("q, k, v &biases (Qwen2)"));
  auto* tied = new QCheckBox(tr("&Tied output (logits use the embedding table)"));
  auto* source = new QLineEdit(tr("added by you"));
  f.form->addRow(tr("&Layers"), layers);
  f.form->addRow(tr("&Width (dim)"), dim);
  f.form->addRow(tr("&Heads"), heads);
  f.form->addRow(tr("&KV heads"), kv_heads);
  f.form->addRow(tr("Head &dim"), head_dim);
  f.form->addRow(tr("&FFN width"), ffn);
  f.form->addRow(tr("&Vocabulary"), vocab);
  f.form->addRow(tr("&Context"), context);
  f.form->addRow(qkv_bias);
  f.form->addRow(tied);
  f.form->addRow(tr("&Source"), source);
  if (!f.run()) return std::nullopt;
  app::PublishedModel m;
  m.name = f.name->text().trimmed().toStdString();
  m.source =
      source->text().trimmed().isEmpty() ? "added by you" : source->text().trimmed().toStdString();
  model::ModelConfig& s = m.shape;
  s.name = m.name;
  s.n_layers = layers->value();
  s.dim = dim->value();
  s.n_heads = heads->value();
  s.n_kv_heads = kv_heads->value();
  s.head_dim = head_dim->value();
  s.ffn_dim = ffn->value();
  s.vocab_size = vocab->value();
  s.context_length = context->value();
  s.qkv_bias = qkv_bias->isChecked();
  s.tied_output = tied->isChecked();
  return m;
}

}  // namespace servescope::gui
