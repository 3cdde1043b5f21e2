// KV-cache panel: the paged block pool as a grid filling token by token (colour = owning
// request, outline = prefix-shared, recent events flashing), bytes allocated against retained
// tokens on the formula's line with this model's numbers, K and V bytes per layer, and the
// device memory split into weights, KV cache and working memory.
#pragma once

#include <QStringList>
#include <cstdint>
#include <optional>
#include <vector>

#include "widgets/chart_painting.h"
#include "widgets/panel_view.h"
#include "widgets/request_colours.h"

namespace servescope::widgets {

enum class KvBlockEvent {
  kNone,
  kAllocate,
  kWrite,
  kFree,
  kEvict,
  kPreempt,
  kPrefixHit,
  kFork,         // another sample of the same prompt took a share of it
  kCopyOnWrite,  // a copy of a shared block, taken by the sample about to write into it
};
QString kv_block_event_name(KvBlockEvent event);

struct KvBlock {
  int64_t owner = -1;  // id of the request holding the block; -1 when free
  // Slots holding valid keys and values, 0..block_size: the engine's pool's name (the CSV
  // export's column keeps its first name, tokens_used).
  int32_t fill = 0;
  int32_t ref_count = 0;       // sequences using it; above 1 it is a shared prefix
  bool cached_prefix = false;  // free, yet still holding a prefix the cache can reuse
  KvBlockEvent last_event = KvBlockEvent::kNone;
  int32_t event_age_frames = 0;  // frames since last_event; it fades over kEventFadeFrames
};

// The model numbers of the KV formula.
struct KvModelShape {
  int64_t layers = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  double bytes_per_element = 0.0;  // 4 for F32, 2 for F16, 34/32 for Q8_0 (scale included)
  QString element_type;            // "F16"
};

struct KvPoint {
  int64_t retained_tokens = 0;   // tokens whose K and V are held, over all sequences
  double allocated_bytes = 0.0;  // bytes of the blocks those sequences hold, as measured
};

struct KvLayerBytes {
  double k_bytes = 0.0;
  double v_bytes = 0.0;
};

// Per-purpose device memory from the backend's accounting; capacity 0 = not reported.
struct DeviceMemory {
  QString device;
  double weights_bytes = 0.0;
  double kv_cache_bytes = 0.0;  // the whole block pool, in use or not
  double working_bytes = 0.0;   // activations, scratch, staging
  double capacity_bytes = 0.0;
};

// Paged against reserved (engine/serving/kv_reservation.h): the requests holding blocks now,
// the bytes their blocks hold against what reserving each one's longest length up front would.
struct KvReservation {
  bool known = false;  // every request's longest length was reported (a recording has none)
  int64_t requests = 0;
  double used_bytes = 0.0;      // their tokens' keys and values, each request its own
  double paged_bytes = 0.0;     // the blocks they hold, a shared block once
  double paged_used_bytes = 0.0;  // the tokens those blocks hold (below used_bytes when shared)
  double reserved_bytes = 0.0;  // their longest lengths
  double capacity_bytes = 0.0;  // the block pool's
  int64_t would_not_fit = 0;    // first come, first served
};

struct KvCacheSnapshot {
  int32_t block_size = 16;  // tokens per block
  std::vector<KvBlock> blocks;
  KvModelShape model;
  std::vector<KvPoint> history;  // oldest first; the last one is now
  std::vector<KvLayerBytes> layers;
  DeviceMemory memory;
  OwnRequests own_requests;  // the user's, in their own colour
  KvReservation reservation;
};

class KvCachePanel : public PanelView {
  Q_OBJECT

 public:
  static constexpr int kEventFadeFrames = 45;  // about 0.75 s at 60 frames per second

  explicit KvCachePanel(QWidget* parent = nullptr);

  void set_snapshot(KvCacheSnapshot snapshot);
  const KvCacheSnapshot& snapshot() const { return snapshot_; }

  QString title() const override;
  QStringList highlight_elements() const override {
    return {"retained-bytes", "blocks", "layers", "memory", "reservation"};
  }
  QString csv() const override;
  QSize minimumSizeHint() const override;  // below it the panel asks for more room

  // What the panel shows, for tests and the app.
  int used_block_count() const;
  int shared_block_count() const;
  // Blocks sharing saves: a block held by n sequences would be n blocks, one per sequence.
  int64_t blocks_saved_by_sharing() const;
  int highlighted_block_count() const;                 // blocks whose last event is still fading
  static double event_strength(const KvBlock& block);  // 1 just happened .. 0 faded
  double bytes_per_token() const;  // 2 x layers x kv_heads x head_dim x bytes per element
  double bytes_per_block() const;
  // Allocated bytes for `tokens` held by one request, rounded up to whole blocks.
  double formula_bytes(int64_t tokens) const;
  QString formula_text() const;
  QStringList legend_labels() const;
  // Columns and rows of the block grid inside a rectangle of this size.
  QSize grid_shape(QSizeF area) const;
  // (label, bytes) of the device-memory bar, in drawing order; "free" only with a capacity.
  std::vector<std::pair<QString, double>> memory_segments() const;
  // The block painted under `pos` in the last paint.
  std::optional<int> block_at(QPointF pos) const;
  // That block described ("Block 3: your request 2, 12 of 16 tokens written."), or empty.
  QString block_tooltip_at(QPointF pos) const;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::vector<chart::LegendEntry> legend(bool compact = false) const;
  void paint_grid(QPainter& painter, const QRectF& area);
  void paint_block(QPainter& painter, const QRectF& cell, const KvBlock& block);
  void paint_formula_chart(QPainter& painter, const QRectF& area);
  void paint_layers(QPainter& painter, const QRectF& area);
  void paint_memory(QPainter& painter, const QRectF& area);
  void paint_reservation(QPainter& painter, const QRectF& area);  // kv_cache_reservation.cpp

  KvCacheSnapshot snapshot_;
  // Grid layout of the last paint.
  QPointF grid_origin_;
  qreal cell_ = 0.0;
  int grid_columns_ = 0;
  bool explained_ = true;  // room for the long labels in this paint
};

}  // namespace servescope::widgets
