// Attention panel: the user's request's attention weights for the chosen layer and head, query
// tokens against cached tokens, as the engine captured them.
#include "app/gui/panels/panel_adapter.h"
#include "app/gui/window/token_display.h"
#include "widgets/attention_panel.h"

namespace servescope::gui {
namespace {

class AttentionAdapter final : public PanelAdapter {
 public:
  AttentionAdapter(QWidget* parent, std::function<void(int, int)> on_selection)
      : panel_(new widgets::AttentionPanel(parent)) {
    QObject::connect(panel_, &widgets::AttentionPanel::selection_changed, panel_,
                     [callback = std::move(on_selection)](int layer, int head) {
                       if (callback) callback(layer, head);
                     });
  }
  widgets::PanelView* view() const override { return panel_; }
  bool has_data() const override { return !panel_->snapshot().weights.empty(); }

  void refresh(const PanelFeed& feed) override {
    widgets::AttentionSnapshot snapshot;
    snapshot.layer_count = static_cast<int>(feed.info.n_layers);
    snapshot.head_count = static_cast<int>(feed.info.n_heads);
    snapshot.layer = panel_->snapshot().layer;
    snapshot.head = panel_->snapshot().head;
    const AttentionSample* sample = feed.attention;
    if (sample != nullptr && !sample->rows.empty() && feed.info.tokenizer) {
      const Tokenizer& tokenizer = *feed.info.tokenizer;
      snapshot.layer = static_cast<int>(sample->layer);
      snapshot.head = static_cast<int>(sample->head);
      for (const int32_t id : sample->key_ids)
        snapshot.key_pieces.push_back(token_display_text(tokenizer, id));
      const size_t keys = sample->key_ids.size();
      snapshot.first_query_position = sample->first_query_position;
      for (size_t i = 0; i < sample->rows.size(); ++i) {
        const size_t position = static_cast<size_t>(sample->first_query_position) + i;
        snapshot.query_pieces.push_back(position < keys ? snapshot.key_pieces[position]
                                                        : QString());
        std::vector<float> row = sample->rows[i];
        row.resize(keys, 0.0f);  // masked (future) keys: the panel does not draw them
        snapshot.weights.insert(snapshot.weights.end(), row.begin(), row.end());
      }
    }
    panel_->set_snapshot(std::move(snapshot));
  }

 private:
  widgets::AttentionPanel* panel_;
};

}  // namespace

std::unique_ptr<PanelAdapter> make_attention_adapter(QWidget* parent,
                                                     std::function<void(int, int)> on_selection) {
  return std::make_unique<AttentionAdapter>(parent, std::move(on_selection));
}

}  // namespace servescope::gui
