// The tokens of a prompt or of a generation as a list model: one row per token, with its text,
// id and probability as roles. TokenChips draws it as chips; tests and screen readers read it.
#pragma once

#include <QAbstractListModel>
#include <QVector>

#include "app/gui/engine_bridge/engine_types.h"

namespace servescope::gui {

class TokenListModel : public QAbstractListModel {
  Q_OBJECT

 public:
  enum Role {
    kTextRole = Qt::UserRole + 1,  // QString: the token's text as the model wrote it
    kIdRole,                       // int: the token id
    kProbabilityRole,              // double: its probability; < 0 when not reported
  };

  using QAbstractListModel::QAbstractListModel;

  void set_tokens(QVector<GeneratedToken> tokens);
  void append_tokens(const QVector<GeneratedToken>& tokens);
  const QVector<GeneratedToken>& tokens() const { return tokens_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  // DisplayRole: the text with its spaces, returns and tabs made visible; ToolTipRole: token,
  // id, probability and the alternatives (rich text); AccessibleTextRole: the same in words.
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;

  // A token's text as a chip shows it: "·the" for " the", "∅" for an empty piece.
  static QString display_text(const QString& text);
  QString tooltip_for(int row) const;
  QString spoken_text(int row) const;

 private:
  QVector<GeneratedToken> tokens_;
};

}  // namespace servescope::gui
