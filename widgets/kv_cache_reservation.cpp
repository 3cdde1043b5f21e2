// The KV panel's "paged against reserved" section: the live requests' blocks next to what
// reserving each one's longest length up front would hold, on one scale with the pool's size.
#include <QPainter>
#include <algorithm>

#include "widgets/chart_painting.h"
#include "widgets/kv_cache_panel.h"
#include "widgets/theme.h"

namespace servescope::widgets {

void KvCachePanel::paint_reservation(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  const KvReservation& r = snapshot_.reservation;
  qreal top = area.top() + chart::draw_heading(painter, area,
                                               tr("Paged against reserved: what reservation "
                                                  "would need"),
                                               t);
  const QRectF rest(area.left(), top, area.width(), std::max<qreal>(area.bottom() - top, 0));
  if (!r.known) {
    chart::draw_note(painter, rest,
                     tr("Each request's longest length is not known here (a recording does "
                        "not hold it)."),
                     t);
    return;
  }
  if (r.requests == 0) {
    chart::draw_note(painter, rest, tr("No request holds blocks now."), t);
    return;
  }
  const QFontMetricsF metrics(painter.font());
  const double scale = std::max({r.reserved_bytes, r.paged_bytes, r.capacity_bytes, 1.0});
  const qreal label_width =
      std::max(metrics.horizontalAdvance(tr("paged")), metrics.horizontalAdvance(tr("reserved"))) +
      8;
  const qreal bar_width = std::max<qreal>(area.width() - label_width, 10);
  const qreal bar_height = metrics.height() * 1.1;
  const auto bar = [&](const QString& label, double whole, double used_bytes,
                       const QString& tip) {
    painter.setPen(t.text);
    painter.drawText(QRectF(area.left(), top, label_width, bar_height),
                     Qt::AlignLeft | Qt::AlignVCenter, label);
    const qreal x = area.left() + label_width;
    const QRectF full(x, top, std::max<qreal>(2.0, bar_width * whole / scale), bar_height);
    painter.fillRect(full, t.surface);
    painter.setPen(QPen(t.muted_text, 1));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(full);
    const QRectF used(x, top, std::max<qreal>(1.0, bar_width * used_bytes / scale), bar_height);
    painter.fillRect(used, t.series(0));
    add_tooltip(full, tip);
    top += bar_height + 4;
  };
  // Shared blocks (a cached prefix, samples of one prompt) are held once: the paged bar's
  // tokens are the ones its blocks hold, fewer than the requests' own when they share.
  const bool shared = r.paged_used_bytes < r.used_bytes;
  bar(tr("paged"), r.paged_bytes, r.paged_used_bytes,
      tr("The blocks these requests hold: %1, of which their tokens use %2%3")
          .arg(chart::format_bytes(r.paged_bytes), chart::format_bytes(r.paged_used_bytes),
               shared ? tr(" (shared blocks counted once)") : QString()));
  bar(tr("reserved"), r.reserved_bytes, r.used_bytes,
      tr("Each request's longest length (prompt + max tokens) set aside up front: %1, of which "
         "their tokens use %2")
          .arg(chart::format_bytes(r.reserved_bytes), chart::format_bytes(r.used_bytes)));
  // The pool's size, as a line across both bars.
  const qreal pool_x = area.left() + label_width + bar_width * r.capacity_bytes / scale;
  painter.setPen(QPen(t.warning, 2));
  painter.drawLine(QPointF(pool_x, area.top() + metrics.height() + 2), QPointF(pool_x, top - 4));
  const double unused =
      r.reserved_bytes > 0 ? 100.0 * (1.0 - r.used_bytes / r.reserved_bytes) : 0.0;
  const double paged_unused =
      r.paged_bytes > 0 ? 100.0 * (1.0 - r.paged_used_bytes / r.paged_bytes) : 0.0;
  const QString paged_note = shared ? tr("in their last blocks; shared blocks held once")
                                    : tr("in their last blocks");
  const QString summary =
      tr("%1 requests use %2. Paged: %3 (%4% unused, %5). Reserved: %6 (%7% unused). %8 of the "
         "%1 would not have fitted in the pool of %9 (the line), first come, first served.")
          .arg(r.requests)
          .arg(chart::format_bytes(r.used_bytes), chart::format_bytes(r.paged_bytes),
               chart::format_number(paged_unused, 2), paged_note,
               chart::format_bytes(r.reserved_bytes), chart::format_number(unused, 2))
          .arg(r.would_not_fit)
          .arg(chart::format_bytes(r.capacity_bytes));
  painter.setPen(t.text);
  painter.drawText(QRectF(area.left(), top, area.width(), std::max<qreal>(area.bottom() - top, 0)),
                   Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, summary);
}

}  // namespace servescope::widgets
