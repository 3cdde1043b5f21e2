#include "app/gui/deployments/deployment_table.h"

#include <QLocale>

#include "widgets/chart_painting.h"

namespace servescope::gui {

using widgets::chart::format_number;

double tokens_per_second_ceiling(const serving::DeploymentFigures& figures) {
  return figures.decode_floor_ms > 0.0 ? 1000.0 / figures.decode_floor_ms : 0.0;
}

void DeploymentTableModel::set_rows(std::vector<DeploymentRow> rows, qint64 context_tokens) {
  beginResetModel();
  rows_ = std::move(rows);
  context_tokens_ = context_tokens;
  endResetModel();
}

int DeploymentTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DeploymentTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant DeploymentTableModel::headerData(int section, Qt::Orientation orientation,
                                          int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::DisplayRole) {
    switch (section) {
      case kDevice:
        return tr("Device");
      case kMemory:
        return tr("Memory");
      case kBandwidth:
        return tr("Bandwidth");
      case kPeak:
        return tr("Peak");
      case kDecodeFloor:
        return tr("Decode floor");
      case kTokensPerSecond:
        return tr("Tokens/s, batch 1");
      case kRidge:
        return tr("Ridge");
      case kComputeBatch:
        return tr("Compute-bound at");
      case kRequestsFit:
        return tr("Requests that fit");
      case kSource:
        return tr("Source");
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case kDecodeFloor:
        return tr(
            "The shortest a decode step of one request at the context can take: its "
            "bytes (the weights once, its KV cache) over the bandwidth, or its FLOPs over "
            "the peak rate if those take longer");
      case kTokensPerSecond:
        return tr("One request's ceiling: one token per decode floor");
      case kRidge:
        return tr(
            "Peak FLOP/s over bandwidth: a step doing fewer FLOPs per byte than this is "
            "memory-bound");
      case kComputeBatch:
        return tr(
            "The smallest decode batch, every request at the context, whose FLOPs take "
            "longer than its bytes; \"never\" when each added request adds as many bytes "
            "(its KV cache) as the rate can use");
      case kRequestsFit:
        return tr(
            "How many requests' KV caches at the context fit in memory beside the "
            "weights (working memory not counted)");
      default:
        return {};
    }
  }
  return {};
}

QVariant DeploymentTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const DeploymentRow& row = rows_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      return text(row, index.column());
    case Qt::UserRole:
      return number(row, index.column());
    case Qt::ToolTipRole:
      return tooltip(row, index.column());
    case Qt::TextAlignmentRole:
      return index.column() == kDevice || index.column() == kSource
                 ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                 : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    default:
      return {};
  }
}

QVariant DeploymentTableModel::number(const DeploymentRow& row, int column) const {
  const serving::DeploymentFigures& f = row.figures;
  switch (column) {
    case kMemory:
      return row.device.memory_gb;
    case kBandwidth:
      return row.device.bandwidth_gb_per_s;
    case kPeak:
      return row.device.peak_tflop_per_s;
    case kDecodeFloor:
      return f.decode_floor_ms;
    case kTokensPerSecond:
      return tokens_per_second_ceiling(f);
    case kRidge:
      return f.ridge_flop_per_byte;
    case kComputeBatch:
      return f.compute_bound_batch ? QVariant(static_cast<qlonglong>(*f.compute_bound_batch))
                                   : QVariant();
    case kRequestsFit:
      return static_cast<qlonglong>(f.requests_that_fit);
    default:
      return text(row, column);
  }
}

QString DeploymentTableModel::text(const DeploymentRow& row, int column) const {
  const serving::DeploymentFigures& f = row.figures;
  const QLocale locale = QLocale::system();
  switch (column) {
    case kDevice:
      return QString::fromStdString(row.device.name);
    case kMemory:
      return tr("%1 GB").arg(format_number(row.device.memory_gb));
    case kBandwidth:
      return tr("%1 GB/s").arg(format_number(row.device.bandwidth_gb_per_s));
    case kPeak:
      return tr("%1 TFLOP/s").arg(format_number(row.device.peak_tflop_per_s));
    case kDecodeFloor:
      return tr("%1 ms%2").arg(format_number(f.decode_floor_ms),
                               f.decode_compute_bound ? tr(" (compute)") : QString());
    case kTokensPerSecond:
      return format_number(tokens_per_second_ceiling(f));
    case kRidge:
      return tr("%1 FLOP/B").arg(format_number(f.ridge_flop_per_byte));
    case kComputeBatch:
      return f.compute_bound_batch ? locale.toString(static_cast<qlonglong>(*f.compute_bound_batch))
                                   : tr("never");
    case kRequestsFit:
      return f.weights_fit ? locale.toString(static_cast<qlonglong>(f.requests_that_fit))
                           : tr("weights do not fit");
    case kSource:
      return row.measured_here ? tr("measured here") : tr("computed from the datasheet");
    default:
      return {};
  }
}

QString DeploymentTableModel::tooltip(const DeploymentRow& row, int column) const {
  const QString source = QString::fromStdString(row.device.source);
  if (column == kSource || column == kDevice || column == kBandwidth || column == kPeak ||
      column == kMemory) {
    return source;
  }
  const serving::DeploymentFigures& f = row.figures;
  switch (column) {
    case kDecodeFloor:
      return tr("%1 moved and %2 FLOP per step at %3 tokens of context")
          .arg(widgets::chart::format_bytes(f.decode_bytes), format_number(f.decode_flops))
          .arg(QLocale::system().toString(context_tokens_));
    case kRequestsFit:
      return tr("%1 of KV cache per request at %2 tokens, beside %3 of weights")
          .arg(widgets::chart::format_bytes(f.kv_bytes_per_request))
          .arg(QLocale::system().toString(context_tokens_))
          .arg(widgets::chart::format_bytes(f.weight_bytes));
    default:
      return source;
  }
}

}  // namespace servescope::gui
