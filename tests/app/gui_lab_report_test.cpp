// The lab report's files: its charts are SVG a renderer reads, in the HTML at their markers'
// places, and the PDF is a PDF; FILE.html gives FILE.pdf.
#include <gtest/gtest.h>

#include <QFile>
#include <QRegularExpression>
#include <QSvgRenderer>
#include <QTemporaryDir>

#include "app/gui/lesson_ui/lab_report_file.h"

namespace servescope::gui {
namespace {

lessons::LabReport report_with_a_chart() {
  lessons::ReportStep step;
  step.title = "Waiting for a batch";
  step.measures = {{"Your time to first token", "312 ms", "median of 3 runs; 305 ms to 340 ms"}};
  step.chart = {"Your time to first token", "ms", {{"continuous", 4.5, 4.25, 5.0},
                                                   {"static", 312.5, 305.0, 340.0}},
                300.0};
  lessons::ReportLesson lesson;
  lesson.title = "Batching";
  lesson.steps = {step};
  return {{"a machine", "a model", "2026-12-07T10:00:00Z"}, {lesson}};
}

QByteArray contents(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

TEST(LabReportFile, ChartsAreSvgInTheHtmlAndThePdfIsAPdf) {
  QTemporaryDir dir;
  const QString html_path = dir.filePath("report.html");
  write_lab_report(report_with_a_chart(), html_path);
  const QString html = QString::fromUtf8(contents(html_path));
  EXPECT_FALSE(html.contains("CHART-"));
  const QRegularExpressionMatch svg =
      QRegularExpression("<svg.*?</svg>", QRegularExpression::DotMatchesEverythingOption)
          .match(html);
  ASSERT_TRUE(svg.hasMatch());
  QSvgRenderer renderer(svg.captured().toUtf8());
  EXPECT_TRUE(renderer.isValid());
  EXPECT_GT(renderer.viewBoxF().width(), 100.0);
  EXPECT_TRUE(svg.captured().contains("your prediction: 300 ms"));
  EXPECT_LT(html.indexOf("Your time to first token"), svg.capturedStart());  // after its table
  EXPECT_EQ(contents(dir.filePath("report.pdf")).left(5), QByteArray("%PDF-"));
  EXPECT_EQ(lab_report_pdf_path("/a/b.html"), "/a/b.pdf");
  EXPECT_EQ(lab_report_pdf_path("/a/b.HTML"), "/a/b.pdf");
  EXPECT_EQ(lab_report_pdf_path("/a/report"), "/a/report.pdf");
}

}  // namespace
}  // namespace servescope::gui
