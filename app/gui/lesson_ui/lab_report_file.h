// The lab report (app/lessons/lab_report.h) as files to hand in: one HTML file and, beside it,
// the same document as PDF, both through Qt's own QTextDocument (and QPdfWriter for the PDF).
#pragma once

#include <QString>
#include <stdexcept>

#include "app/lessons/lab_report.h"

namespace servescope::gui {

// A report file that could not be written; the message names it.
class LabReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// FILE.html -> FILE.pdf (another name gets .pdf added).
QString lab_report_pdf_path(const QString& html_path);

// Writes `report` to `html_path` and to lab_report_pdf_path(html_path); LabReportError when
// either cannot be written.
void write_lab_report(const lessons::LabReport& report, const QString& html_path);

// This machine ("AMD EPYC, 2 cores"), the model ("servescope-stories (4,613,376 parameters,
// f32 weights)", "?" without one) and the time now (UTC), as the report names them.
lessons::ReportFacts lab_report_facts(const lessons::ModelFacts* model);

}  // namespace servescope::gui
