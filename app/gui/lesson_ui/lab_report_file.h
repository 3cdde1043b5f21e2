// The lab report (app/lessons/lab_report.h) as files to hand in: one HTML file and, beside it,
// the same document as PDF, both through Qt's own QTextDocument (and QPdfWriter for the PDF).
#pragma once

#include <QString>
#include <stdexcept>
#include <vector>

#include "app/lessons/lab_report.h"
#include "app/lessons/lesson_set.h"

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

// "AMD EPYC, 2 cores": this machine as the report names it.
std::string this_machine();
// "servescope-stories (4,613,376 parameters, f32 weights)".
std::string model_words(const lessons::ModelFacts& model);

}  // namespace servescope::gui
