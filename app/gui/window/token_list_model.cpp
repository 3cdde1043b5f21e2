#include "app/gui/window/token_list_model.h"

namespace servescope::gui {

void TokenListModel::set_tokens(QVector<GeneratedToken> tokens) {
  beginResetModel();
  tokens_ = std::move(tokens);
  endResetModel();
}

void TokenListModel::append_tokens(const QVector<GeneratedToken>& tokens) {
  if (tokens.isEmpty()) return;
  const int first = static_cast<int>(tokens_.size());
  beginInsertRows({}, first, first + static_cast<int>(tokens.size()) - 1);
  tokens_ += tokens;
  endInsertRows();
}

int TokenListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(tokens_.size());
}

QVariant TokenListModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= tokens_.size()) return {};
  const GeneratedToken& token = tokens_[index.row()];
  switch (role) {
    case Qt::DisplayRole:
      return display_text(token.text);
    case Qt::ToolTipRole:
      return tooltip_for(index.row());
    case Qt::AccessibleTextRole:
      return spoken_text(index.row());
    case kTextRole:
      return token.text;
    case kIdRole:
      return token.id;
    case kProbabilityRole:
      return token.probability;
    default:
      return {};
  }
}

QHash<int, QByteArray> TokenListModel::roleNames() const {
  QHash<int, QByteArray> names = QAbstractListModel::roleNames();
  names[kTextRole] = "text";
  names[kIdRole] = "id";
  names[kProbabilityRole] = "probability";
  return names;
}

QString TokenListModel::display_text(const QString& text) {
  QString shown = text;
  shown.replace(' ', QChar(0x00B7));   // a visible space: tokens often start with one
  shown.replace('\n', QChar(0x21B5));  // return symbol
  shown.replace('\t', QChar(0x2192));
  return shown.isEmpty() ? QString(QChar(0x2205)) : shown;
}

QString TokenListModel::tooltip_for(int row) const {
  if (row < 0 || row >= tokens_.size()) return {};
  const GeneratedToken& token = tokens_[row];
  // A server's token (remote mode) comes without an id of this model's vocabulary.
  QString text = token.id < 0 ? tr("<b>%1</b> &nbsp; from the server")
                                    .arg(display_text(token.text).toHtmlEscaped())
                              : tr("<b>%1</b> &nbsp; token id %2")
                                    .arg(display_text(token.text).toHtmlEscaped())
                                    .arg(token.id);
  if (token.probability >= 0.0) {
    text += tr("<br>probability %1%").arg(100.0 * token.probability, 0, 'f', 1);
  }
  if (!token.alternatives.isEmpty()) {
    text += tr("<br><br>the model's top choices here:") + "<table>";
    for (const auto& [piece, p] : token.alternatives) {
      text += QString("<tr><td>%1</td><td align=right>&nbsp;%2%</td></tr>")
                  .arg(display_text(piece).toHtmlEscaped())
                  .arg(100.0 * p, 0, 'f', 1);
    }
    text += "</table>";
  }
  return text;
}

QString TokenListModel::spoken_text(int row) const {
  if (row < 0 || row >= tokens_.size()) return {};
  const GeneratedToken& token = tokens_[row];
  // The text as it is (a screen reader says "space" itself), then the numbers.
  QString text = tr("token %1 of %2: \"%3\"").arg(row + 1).arg(tokens_.size()).arg(token.text);
  if (token.id >= 0) text += tr(", id %1").arg(token.id);
  if (token.probability >= 0.0) {
    text += tr(", probability %1%").arg(100.0 * token.probability, 0, 'f', 1);
  }
  return text;
}

}  // namespace servescope::gui
