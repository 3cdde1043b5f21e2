#include "app/gui/lesson_ui/lab_report_file.h"

#include <QAbstractTextDocumentLayout>
#include <QBuffer>
#include <QDateTime>
#include <QFileInfo>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextObjectInterface>
#include <algorithm>

#include "app/lessons/format.h"
#include "engine/compute/devices.h"

namespace servescope::gui {
namespace {

// Charts are drawn in the document's units (pixels at 96 dpi), as vectors: QPainter paths
// and text, into the PDF through the text layout and into the HTML as inline SVG.
constexpr qreal kChartWidth = 560;
constexpr qreal kRowHeight = 22;
constexpr qreal kTitleHeight = 22;
constexpr qreal kAxisHeight = 20;
const QColor kBar(0x00, 0x72, 0xB2);         // Okabe-Ito blue
const QColor kPrediction(0xD5, 0x5E, 0x00);  // Okabe-Ito vermillion

QSizeF chart_size(const lessons::ReportChart& chart) {
  return {kChartWidth, kTitleHeight + kRowHeight * double(chart.bars.size()) + kAxisHeight};
}

QString quantity(double value, const std::string& unit) {
  return QString::fromStdString(lessons::format_quantity(value, unit));
}

// Bars from zero to each median with a whisker over its runs' range, the value beside it,
// and the learner's prediction as a dashed line.
void paint_chart(QPainter& painter, const QRectF& box, const lessons::ReportChart& chart) {
  painter.save();
  QFont font = painter.font();
  font.setPixelSize(12);
  painter.setFont(font);
  const QFontMetricsF metrics(font);
  painter.setPen(Qt::black);
  painter.drawText(QRectF(box.left(), box.top(), box.width(), kTitleHeight),
                   Qt::AlignLeft | Qt::AlignVCenter, QString::fromStdString(chart.title));
  qreal label_width = 0;
  double top_value = chart.prediction.value_or(0.0);
  for (const lessons::ReportBar& b : chart.bars) {
    label_width = std::max(label_width, metrics.horizontalAdvance(QString::fromStdString(b.label)));
    top_value = std::max(top_value, b.high);
  }
  label_width = std::min(label_width + 8, box.width() * 0.4);
  const qreal value_room = metrics.horizontalAdvance(quantity(top_value, chart.unit)) + 8;
  const QRectF plot(box.left() + label_width, box.top() + kTitleHeight,
                    box.width() - label_width - value_room,
                    kRowHeight * double(chart.bars.size()));
  const auto x = [&](double v) {
    return plot.left() + (top_value > 0 ? v / top_value : 0.0) * plot.width();
  };
  for (size_t i = 0; i < chart.bars.size(); ++i) {
    const lessons::ReportBar& b = chart.bars[i];
    const QRectF row(plot.left(), plot.top() + kRowHeight * double(i), plot.width(), kRowHeight);
    painter.setPen(Qt::black);
    painter.drawText(QRectF(box.left(), row.top(), label_width - 6, row.height()),
                     Qt::AlignRight | Qt::AlignVCenter, QString::fromStdString(b.label));
    painter.fillRect(QRectF(x(0), row.top() + 4, x(b.median) - x(0), row.height() - 8), kBar);
    if (b.high > b.low) {
      painter.setPen(QPen(Qt::black, 1));
      const qreal mid = row.center().y();
      painter.drawLine(QPointF(x(b.low), mid), QPointF(x(b.high), mid));
      painter.drawLine(QPointF(x(b.low), mid - 4), QPointF(x(b.low), mid + 4));
      painter.drawLine(QPointF(x(b.high), mid - 4), QPointF(x(b.high), mid + 4));
    }
    painter.drawText(QRectF(x(std::max(b.median, b.high)) + 4, row.top(), value_room, row.height()),
                     Qt::AlignLeft | Qt::AlignVCenter, quantity(b.median, chart.unit));
  }
  painter.setPen(QPen(Qt::black, 1));
  painter.drawLine(plot.bottomLeft(), plot.bottomRight());
  painter.drawText(QRectF(plot.left() - 20, plot.bottom() + 2, 40, kAxisHeight - 4),
                   Qt::AlignCenter, QStringLiteral("0"));
  if (chart.prediction) {
    painter.setPen(QPen(kPrediction, 1.5, Qt::DashLine));
    const qreal px = x(*chart.prediction);
    painter.drawLine(QPointF(px, plot.top()), QPointF(px, plot.bottom()));
    painter.setPen(kPrediction);
    const QString text = QObject::tr("your prediction: %1").arg(quantity(*chart.prediction, chart.unit));
    const qreal w = metrics.horizontalAdvance(text) + 4;
    painter.drawText(QRectF(std::clamp(px - w / 2, box.left(), box.right() - w), plot.bottom() + 2,
                            w, kAxisHeight - 4),
                     Qt::AlignCenter, text);
  }
  painter.restore();
}

QByteArray chart_svg(const lessons::ReportChart& chart) {
  QBuffer buffer;
  buffer.open(QIODevice::WriteOnly);
  const QSize size = chart_size(chart).toSize();
  {
    QSvgGenerator svg;
    svg.setOutputDevice(&buffer);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle(QString::fromStdString(chart.title));
    QPainter painter(&svg);
    paint_chart(painter, QRectF(QPointF(0, 0), QSizeF(size)), chart);
  }
  QByteArray out = buffer.data();
  const qsizetype start = out.indexOf("<svg");  // inline: no XML declaration or doctype
  return start >= 0 ? out.mid(start) : out;
}

// The HTML with each chart marker's text replaced by its chart as inline SVG.
QString with_svg_charts(QString html, const std::vector<const lessons::ReportChart*>& charts) {
  static const QRegularExpression marker(QStringLiteral("CHART-(\\d+)(?!\\d)"));
  QString out;
  qsizetype done = 0;
  for (QRegularExpressionMatchIterator it = marker.globalMatch(html); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    const size_t index = m.captured(1).toULongLong();
    out += html.mid(done, m.capturedStart() - done);
    out += index < charts.size() ? QString::fromUtf8(chart_svg(*charts[index])) : m.captured();
    done = m.capturedEnd();
  }
  return out + html.mid(done);
}

// Draws the charts where the text layout places them (the PDF).
class ChartObjects final : public QObject, public QTextObjectInterface {
  Q_OBJECT
  Q_INTERFACES(QTextObjectInterface)

 public:
  static constexpr int kType = QTextFormat::UserObject + 1;
  static constexpr int kIndex = QTextFormat::UserProperty + 1;

  explicit ChartObjects(std::vector<const lessons::ReportChart*> charts, QObject* parent)
      : QObject(parent), charts_(std::move(charts)) {}

  QSizeF intrinsicSize(QTextDocument* document, int, const QTextFormat& format) override {
    return chart_size(chart(format)) * scale(document);
  }
  void drawObject(QPainter* painter, const QRectF& rect, QTextDocument* document, int,
                  const QTextFormat& format) override {
    painter->save();
    painter->translate(rect.topLeft());
    painter->scale(scale(document), scale(document));
    paint_chart(*painter, QRectF(QPointF(0, 0), chart_size(chart(format))), chart(format));
    painter->restore();
  }

 private:
  // Printing lays the document out in the printer's pixels: the chart keeps its size at 96 dpi.
  static qreal scale(QTextDocument* document) {
    const QPaintDevice* device = document->documentLayout()->paintDevice();
    return device ? device->logicalDpiY() / 96.0 : 1.0;
  }
  const lessons::ReportChart& chart(const QTextFormat& format) const {
    return *charts_.at(static_cast<size_t>(format.intProperty(kIndex)));
  }
  std::vector<const lessons::ReportChart*> charts_;
};

// Puts each chart object where its marker is, last first (CHART-1 is not CHART-10's start).
void place_chart_objects(QTextDocument& document,
                         const std::vector<const lessons::ReportChart*>& charts) {
  auto* objects = new ChartObjects(charts, &document);
  document.documentLayout()->registerHandler(ChartObjects::kType, objects);
  for (size_t i = charts.size(); i-- > 0;) {
    QTextCursor cursor = document.find(QString::fromStdString(lessons::chart_marker(i)), 0,
                                       QTextDocument::FindWholeWords);
    if (cursor.isNull()) continue;
    QTextCharFormat format;
    format.setObjectType(ChartObjects::kType);
    format.setProperty(ChartObjects::kIndex, static_cast<int>(i));
    cursor.insertText(QString(QChar::ObjectReplacementCharacter), format);
  }
}

}  // namespace

QString lab_report_pdf_path(const QString& html_path) {
  const QFileInfo file(html_path);
  if (file.suffix().compare("html", Qt::CaseInsensitive) != 0) return html_path + ".pdf";
  return file.path() + "/" + file.completeBaseName() + ".pdf";
}

void write_lab_report(const lessons::LabReport& report, const QString& html_path) {
  QTextDocument document;
  document.setMarkdown(QString::fromStdString(lessons::lab_report_markdown(report)));
  document.setMetaInformation(QTextDocument::DocumentTitle, QObject::tr("ServeScope lab report"));

  const std::vector<const lessons::ReportChart*> charts = lessons::report_charts(report);

  QSaveFile html(html_path);  // whole or not at all
  if (!html.open(QIODevice::WriteOnly) ||
      html.write(with_svg_charts(document.toHtml(), charts).toUtf8()) < 0 || !html.commit()) {
    throw LabReportError(html_path.toStdString() + ": " + html.errorString().toStdString());
  }
  const QString pdf_path = lab_report_pdf_path(html_path);
  place_chart_objects(document, charts);
  {
    QPdfWriter pdf(pdf_path);
    pdf.setPageSize(QPageSize(QPageSize::A4));
    pdf.setTitle(QObject::tr("ServeScope lab report"));
    pdf.setCreator(QStringLiteral("ServeScope"));
    document.print(&pdf);
  }
  // QPdfWriter reports no error of its own: an unwritable path leaves no file.
  if (QFileInfo(pdf_path).size() <= 0) {
    throw LabReportError(pdf_path.toStdString() + ": could not be written");
  }
}

lessons::ReportFacts lab_report_facts(const lessons::ModelFacts* model) {
  const compute::CpuDescription cpu = compute::describe_cpu();
  lessons::ReportFacts facts;
  facts.machine =
      cpu.model_name + ", " + std::to_string(cpu.cores) + (cpu.cores == 1 ? " core" : " cores");
  facts.model = model ? model->name + " (" +
                            lessons::format_number(static_cast<double>(model->parameters)) +
                            " parameters, " + model->weight_type + " weights)"
                      : std::string("?");
  facts.written_at = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
  return facts;
}

}  // namespace servescope::gui

#include "lab_report_file.moc"
