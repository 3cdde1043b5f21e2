#include "app/gui/lesson_ui/lab_report_file.h"

#include <QFileInfo>
#include <QPageSize>
#include <QPdfWriter>
#include <QSaveFile>
#include <QTextDocument>

#include "app/lessons/format.h"
#include "engine/compute/devices.h"

namespace servescope::gui {

QString lab_report_pdf_path(const QString& html_path) {
  const QFileInfo file(html_path);
  if (file.suffix().compare("html", Qt::CaseInsensitive) != 0) return html_path + ".pdf";
  return file.path() + "/" + file.completeBaseName() + ".pdf";
}

void write_lab_report(const lessons::LabReport& report, const QString& html_path) {
  QTextDocument document;
  document.setMarkdown(QString::fromStdString(lessons::lab_report_markdown(report)));
  document.setMetaInformation(QTextDocument::DocumentTitle, QObject::tr("ServeScope lab report"));

  QSaveFile html(html_path);  // whole or not at all
  if (!html.open(QIODevice::WriteOnly) || html.write(document.toHtml().toUtf8()) < 0 ||
      !html.commit()) {
    throw LabReportError(html_path.toStdString() + ": " + html.errorString().toStdString());
  }
  const QString pdf_path = lab_report_pdf_path(html_path);
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

std::string this_machine() {
  const compute::CpuDescription cpu = compute::describe_cpu();
  return cpu.model_name + ", " + std::to_string(cpu.cores) + (cpu.cores == 1 ? " core" : " cores");
}

std::string model_words(const lessons::ModelFacts& model) {
  return model.name + " (" + lessons::format_number(static_cast<double>(model.parameters)) +
         " parameters, " + model.weight_type + " weights)";
}

}  // namespace servescope::gui
