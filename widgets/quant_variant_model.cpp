#include "widgets/quant_variant_model.h"

#include <QColor>
#include <cmath>

#include "widgets/chart_painting.h"
#include "widgets/theme.h"
#include "widgets/token_text.h"

namespace servescope::widgets {
namespace {

const char* const kHeaderTips[QuantVariantModel::kColumnCount] = {
    QT_TRANSLATE_NOOP("QuantVariantModel", "Element type the weights are stored in."),
    QT_TRANSLATE_NOOP("QuantVariantModel", "Element type the key-value cache is stored in."),
    QT_TRANSLATE_NOOP("QuantVariantModel",
                      "Size of the weights (the verdict's memory adds a full context's KV "
                      "cache)."),
    QT_TRANSLATE_NOOP("QuantVariantModel",
                      "Bits each weight takes on average: 8 x bytes / parameters, scales and "
                      "the tensors kept in F32 included."),
    QT_TRANSLATE_NOOP("QuantVariantModel",
                      "Mean KL divergence (nats) of the next-token distributions from the "
                      "baseline's: 0 means identical."),
    QT_TRANSLATE_NOOP("QuantVariantModel",
                      "Share of positions where the most likely next token equals the "
                      "baseline's."),
    QT_TRANSLATE_NOOP("QuantVariantModel", "Tokens generated per second by one request alone."),
    QT_TRANSLATE_NOOP("QuantVariantModel",
                      "Decode tokens per second relative to the baseline (above 1 is faster)."),
    QT_TRANSLATE_NOOP("QuantVariantModel",
                      "Time to first token under the fixed load, median / 99th percentile."),
    QT_TRANSLATE_NOOP("QuantVariantModel",
                      "Time per output token under the fixed load, median / 99th percentile."),
    QT_TRANSLATE_NOOP("QuantVariantModel",
                      "Device time one request occupies under the fixed load (the run's wall "
                      "time over its requests)."),
    QT_TRANSLATE_NOOP("QuantVariantModel",
                      "Accept when mean KL, p99 TPOT and decode speed-up meet your limits and "
                      "memory is smaller than the baseline's (quant-report's rule)."),
};

QString pair_text(double p50, double p99) {
  return QStringLiteral("%1 / %2").arg(chart::format_number(p50), chart::format_number(p99));
}

}  // namespace

QuantVariantModel::QuantVariantModel(QObject* parent) : QAbstractTableModel(parent) {}

void QuantVariantModel::set_variants(std::vector<QuantVariantRow> variants, QString cost_unit,
                                     QuantJudge judge) {
  beginResetModel();
  variants_ = std::move(variants);
  cost_unit_ = std::move(cost_unit);
  judge_ = std::move(judge);
  endResetModel();
  emit headerDataChanged(Qt::Horizontal, kCost, kCost);
}

void QuantVariantModel::set_limits(const QuantLimits& limits) {
  limits_ = limits;
  if (!variants_.empty()) {
    emit dataChanged(index(0, kVerdict), index(rowCount() - 1, kVerdict));
  }
}

QuantVerdict QuantVariantModel::verdict(int row) const {
  const QuantVariantRow* base = baseline_of(variants_);
  if (!judge_ || row < 0 || row >= rowCount() || base == &variants_[row]) return {};
  return judge_(row, limits_);
}

int QuantVariantModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(variants_.size());
}

int QuantVariantModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QString QuantVariantModel::header_text(int column) const {
  switch (column) {
    case kWeights:
      return tr("Weights");
    case kKvCache:
      return tr("KV\ncache");
    case kSize:
      return tr("Size");
    case kBitsPerWeight:
      return tr("Bits/\nweight");
    case kMeanKl:
      return tr("Mean KL\n(nats)");
    case kTop1:
      return tr("Top-1\n(%)");
    case kDecode:
      return tr("Decode\n(tok/s)");
    case kSpeedup:
      return tr("Speed-up\n(x)");
    case kTtft:
      return tr("TTFT (ms)\np50 / p99");
    case kTpot:
      return tr("TPOT (ms)\np50 / p99");
    case kCost:
      return cost_unit_.isEmpty() ? tr("Cost per\nrequest") : tr("Cost\n(%1)").arg(cost_unit_);
    case kVerdict:
      return tr("Verdict");
    default:
      return {};
  }
}

QString QuantVariantModel::cell_text(const QuantVariantRow& row, int column, int row_index) const {
  const QuantVariantRow* base = baseline_of(variants_);
  switch (column) {
    case kWeights:
      return row.weight_type;
    case kKvCache:
      return row.kv_type;
    case kSize:
      return chart::format_bytes(row.weight_bytes);
    case kBitsPerWeight:
      return QString::number(row.bits_per_weight, 'f', 2);
    case kMeanKl:
      return QString::number(row.mean_kl, 'g', 3);
    case kTop1:
      return QString::number(100.0 * row.top1_agreement, 'f', 1);
    case kDecode:
      return chart::format_number(row.decode_tokens_per_s);
    case kSpeedup:
      return QString::number(decode_speedup(row, *base), 'f', 2);
    case kTtft:
      return pair_text(row.ttft_p50_ms, row.ttft_p99_ms);
    case kTpot:
      return pair_text(row.tpot_p50_ms, row.tpot_p99_ms);
    case kCost:
      return chart::format_number(row.cost_per_request);
    case kVerdict: {
      if (base == &row) return tr("baseline");
      if (!judged()) return QStringLiteral("\u2014");
      return verdict(row_index).accepted ? tr("accept") : tr("reject");
    }
    default:
      return {};
  }
}

QVariant QuantVariantModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const QuantVariantRow& row = variants_[index.row()];
  switch (role) {
    case Qt::DisplayRole:
      return cell_text(row, index.column(), index.row());
    case Qt::TextAlignmentRole:
      return index.column() <= kKvCache || index.column() == kVerdict
                 ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                 : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ToolTipRole: {
      if (index.column() == kVerdict && judged() && baseline_of(variants_) != &row) {
        const QuantVerdict v = verdict(index.row());
        return v.accepted ? tr("Accepted: within every limit.")
                          : tr("Rejected: %1.").arg(v.reasons.join(QStringLiteral("; ")));
      }
      return tr(kHeaderTips[index.column()]);
    }
    case Qt::DecorationRole: {
      if (index.column() != kVerdict || !judged() || baseline_of(variants_) == &row) return {};
      // A mark in bluish green for accept, vermillion for reject (Okabe-Ito) beside the word,
      // which stays in the text colour: green text on white read at 3.4:1.
      return verdict(index.row()).accepted ? theme().series(2) : theme().series(5);
    }
    default:
      return {};
  }
}

QVariant QuantVariantModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= kColumnCount) {
    return QAbstractTableModel::headerData(section, orientation, role);
  }
  if (role == Qt::DisplayRole) return header_text(section);
  if (role == Qt::ToolTipRole) return tr(kHeaderTips[section]);
  return {};
}

QString QuantVariantModel::csv() const {
  QString out = QStringLiteral(
      "weights,kv_cache,weight_bytes,bits_per_weight,memory_bytes,prefill_tokens_per_s,"
      "decode_tokens_per_s,decode_speedup,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,tpot_p99_ms,"
      "cost_per_request,perplexity,mean_kl,top1_agreement,verdict\n");
  const QuantVariantRow* base = baseline_of(variants_);
  for (int i = 0; i < rowCount(); ++i) {
    const QuantVariantRow& r = variants_[i];
    QStringList fields = {csv_field(r.weight_type), csv_field(r.kv_type)};
    for (const double v : {r.weight_bytes, r.bits_per_weight, r.memory_bytes,
                           r.prefill_tokens_per_s, r.decode_tokens_per_s, decode_speedup(r, *base),
                           r.ttft_p50_ms, r.ttft_p99_ms, r.tpot_p50_ms, r.tpot_p99_ms,
                           r.cost_per_request, r.perplexity, r.mean_kl, r.top1_agreement}) {
      fields << QString::number(v, 'g', 9);
    }
    fields << cell_text(r, kVerdict, i);
    out += fields.join(QLatin1Char(',')) + QLatin1Char('\n');
  }
  return out;
}

}  // namespace servescope::widgets
