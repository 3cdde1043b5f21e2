// Remote mode (issue 30): the window attached to a serving engine (a scripted llama-server on
// 127.0.0.1). The user's prompt and the classmates stream there; the user's tokens come with
// the server's probabilities; the Batching panel shows the server's reports and the client's
// measurements, each marked; the panels that need the engine's insides say why they are
// empty; a refused connection and an address that is not a server end in a message, back on
// the local engine.
#include <gtest/gtest.h>

#include <QTemporaryDir>
#include <cmath>

#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/remote/remote_connection.h"
#include "app/gui/remote/remote_views.h"
#include "app/gui/window/main_window.h"
#include "tests/app/gui_test_support.h"
#include "tests/app/gui_window_support.h"
#include "tests/remote/scripted_server.h"

namespace servescope::gui {
namespace {

using remote::answer;
using remote::ScriptedServer;
using testing::wait_until;

const QByteArray kModels = R"({"object":"list","data":[{"id":"/srv/models/stories.gguf"}]})";
const QByteArray kLogprobs =
    R"({"content":[{"token":" t","logprob":-0.25,"top_logprobs":[)"
    R"({"token":" t","logprob":-0.25},{"token":" a","logprob":-2.0}]}]})";
const QByteArray kSlots =
    R"([{"id":0,"n_ctx":256,"is_processing":true},{"id":1,"n_ctx":256,"is_processing":false}])";

ScriptedServer llama_like_server() {
  return ScriptedServer([](const QByteArray& line, QTcpSocket& socket) {
    if (line.startsWith("GET /v1/models")) {
      answer(socket, 200, "application/json", kModels);
    } else if (line.startsWith("GET /metrics")) {
      answer(socket, 200, "text/plain", remote::kLlamaMetrics);
    } else if (line.startsWith("GET /slots")) {
      answer(socket, 200, "application/json", kSlots);
    } else {
      remote::stream_tokens(socket, 6, 15, false, kLogprobs);
    }
  });
}

const widgets::RemoteSeries* series_named(const widgets::RemoteView& view, const QString& name) {
  for (const widgets::RemoteChart& chart : view.charts) {
    for (const widgets::RemoteSeries& series : chart.series) {
      if (series.name == name) return &series;
    }
  }
  return nullptr;
}

class RemoteMode : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::app();
    window_ = std::make_unique<MainWindow>(testing::test_window_options(cache_.path()));
    window_->show();
  }
  QTemporaryDir cache_;
  std::unique_ptr<MainWindow> window_;
};

TEST_F(RemoteMode, TheUserAndClassmatesStreamToTheServerAndThePanelsShowItsFigures) {
  ScriptedServer server = llama_like_server();
  MainWindow& window = *window_;
  window.connect_to_server(server.url());
  EXPECT_TRUE(window.remote_mode());
  // Pinning compares the local engine's runs: off while the panels show a server's.
  EXPECT_FALSE(window.pinned_figures().pin_action()->isEnabled());
  ASSERT_TRUE(wait_until([&] { return window.remote_connected(); }, 10000)) << window.message().toStdString();
  window.show_panel(PanelId::kBatching);
  window.set_classmates(3);
  window.set_prompt("Once upon a time");
  window.set_max_tokens(6);
  window.generate();
  EXPECT_TRUE(window.generating());
  ASSERT_TRUE(wait_until([&] { return !window.generating(); }, 10000));
  // The user's tokens as the server sent them, with its probabilities and alternatives.
  ASSERT_EQ(window.generated_tokens().size(), 6);
  for (const GeneratedToken& token : window.generated_tokens()) {
    EXPECT_EQ(token.id, -1);
    EXPECT_NEAR(token.probability, std::exp(-0.25), 1e-9);
    ASSERT_EQ(token.alternatives.size(), 2);
  }
  const RemoteFolder& folder = window.remote()->folder();
  ASSERT_TRUE(wait_until([&] { return folder.requests().size() >= 4 && !folder.polls().empty(); }));

  // The Batching panel: every series says where it came from; the user's request is a row.
  const widgets::PanelView& batching = *window.panels().panel(PanelId::kBatching);
  ASSERT_TRUE(wait_until([&] {
    return batching.remote_view() && batching.remote_view()->requests.size() >= 4 &&
           series_named(*batching.remote_view(), "running");
  }));
  const widgets::RemoteView& view = *batching.remote_view();
  EXPECT_TRUE(view.heading.contains("llama.cpp's server")) << view.heading.toStdString();
  EXPECT_TRUE(view.heading.contains("stories.gguf")) << view.heading.toStdString();
  EXPECT_EQ(series_named(view, "running")->source, widgets::FigureSource::kReported);
  EXPECT_EQ(series_named(view, "slots busy")->source, widgets::FigureSource::kReported);
  EXPECT_EQ(series_named(view, "streams open")->source, widgets::FigureSource::kMeasured);
  EXPECT_EQ(series_named(view, "running")->points.back().y(), 1.0);  // requests_processing
  const auto own = std::find_if(view.requests.begin(), view.requests.end(),
                                [](const widgets::RemoteRequestRow& r) { return r.own; });
  ASSERT_NE(own, view.requests.end());
  EXPECT_EQ(own->output_tokens, 6);
  EXPECT_GT(own->ttft_ms, 0.0);
  EXPECT_GT(own->tpot_ms, 0.0);
  EXPECT_TRUE(remote_view_csv(view).contains("reported by the server"));

  // A panel that needs the engine's insides says so.
  window.show_panel(PanelId::kRoofline);
  const widgets::PanelView& roofline = *window.panels().panel(PanelId::kRoofline);
  ASSERT_TRUE(wait_until([&] { return roofline.remote_view().has_value(); }));
  EXPECT_TRUE(roofline.remote_view()->not_available.contains("Not available from a remote server"));
  EXPECT_TRUE(roofline.remote_view()->charts.empty());

  // The attention panel's layer and head pickers act on the local engine: hidden meanwhile.
  window.show_panel(PanelId::kAttention);
  const widgets::PanelView& attention = *window.panels().panel(PanelId::kAttention);
  ASSERT_TRUE(wait_until([&] { return attention.remote_view().has_value(); }));
  const auto shown_controls = [&attention] {
    int shown = 0;
    for (const QWidget* child : attention.findChildren<QWidget*>(Qt::FindDirectChildrenOnly)) {
      if (child->isVisible()) ++shown;
    }
    return shown;
  };
  EXPECT_EQ(shown_controls(), 0);

  window.disconnect_from_server();
  EXPECT_FALSE(window.remote_mode());
  EXPECT_GT(shown_controls(), 0);
  EXPECT_TRUE(window.pinned_figures().pin_action()->isEnabled());
  EXPECT_TRUE(window.generated_tokens().isEmpty()) << "the server's text leaves with it";
  for (const PanelId id : kAllPanels) EXPECT_FALSE(window.panels().panel(id)->remote_view());
}

TEST_F(RemoteMode, ARefusedConnectionReturnsToTheLocalEngineWithAMessage) {
  QTcpServer closed;
  closed.listen(QHostAddress::LocalHost, 0);
  const quint16 port = closed.serverPort();
  closed.close();
  window_->connect_to_server(QUrl(QString("http://127.0.0.1:%1").arg(port)));
  ASSERT_TRUE(wait_until([&] { return !window_->remote_mode(); }, 10000));
  EXPECT_TRUE(window_->message().contains("connection was refused")) << window_->message().toStdString();
}

TEST_F(RemoteMode, AnAddressThatIsNotAServersIsRefusedAtOnce) {
  window_->connect_to_server(QUrl("ftp://127.0.0.1/models"));
  EXPECT_FALSE(window_->remote_mode());
  EXPECT_TRUE(window_->message().contains("Not a server's address")) << window_->message().toStdString();
}

// The rates the Phases panel draws: a counter's growth per second over the last second.
TEST(RemoteRates, ACountersGrowthPerSecondAndNoRateAcrossAReset) {
  std::deque<RemotePollPoint> polls;
  for (int i = 0; i <= 30; ++i) {
    RemotePollPoint p;
    p.at_ms = 100.0 * i;
    p.tokens_received = i <= 20 ? 50 * i : 50 * (i - 21);  // the counter restarts at poll 21
    polls.push_back(p);
  }
  const auto received = [](const RemotePollPoint& p) {
    return std::optional<double>(static_cast<double>(p.tokens_received));
  };
  const std::vector<QPointF> rates = counter_rate(polls, received);
  ASSERT_FALSE(rates.empty());
  EXPECT_EQ(rates.front().x(), 1.0);  // the first poll a second after another
  for (const QPointF& r : rates) {
    if (r.x() <= 2.0) {
      EXPECT_NEAR(r.y(), 500.0, 1e-9) << r.x();
    }
    EXPECT_FALSE(r.x() > 2.0 && r.x() < 3.1) << "no rate across the restart, at " << r.x();
  }
}

}  // namespace
}  // namespace servescope::gui

namespace servescope::gui {
namespace {

// The folder keeps the last 200 requests, and the user's latest among them however many
// classmates came after it.
TEST(RemoteFolderTest, KeepsTheUsersLatestRequestAmongHundredsOfClassmates) {
  RemoteFolder folder;
  folder.reset({});
  folder.on_sent(1, true, 0.0);
  const auto end = [&folder](int64_t id) {
    remote::RemoteRequestEnd e;
    e.record.request_id = id;
    folder.on_end(e);
  };
  end(1);
  for (int64_t id = 2; id < 500; ++id) {
    folder.on_sent(id, false, 1.0 * static_cast<double>(id));
    end(id);
  }
  EXPECT_EQ(folder.requests().size(), RemoteFolder::kMaxRequests);
  EXPECT_EQ(folder.requests_sent(), 499);
  EXPECT_TRUE(folder.requests().front().own);
  EXPECT_EQ(folder.requests().back().record.request_id, 499);
  EXPECT_EQ(folder.streams_open(), 0);
}

// "Since connecting" figures come from the first report, which outlives the polls kept.
TEST(RemoteFolderTest, KeepsTheServersFirstReportPastThePollsKept) {
  RemoteFolder folder;
  folder.reset({});
  for (size_t i = 0; i < RemoteFolder::kMaxPolls + 10; ++i) {
    remote::ServerPoll poll;
    poll.at_ms = static_cast<double>(i);
    poll.metrics = remote::ServerMetrics{};
    poll.metrics->generated_tokens_total = static_cast<double>(i);
    folder.on_poll(poll);
  }
  EXPECT_EQ(folder.polls().size(), RemoteFolder::kMaxPolls);
  ASSERT_TRUE(folder.first_metrics());
  EXPECT_EQ(folder.first_metrics()->generated_tokens_total, 0.0);
}

}  // namespace
}  // namespace servescope::gui

#include <QAbstractSpinBox>
#include <QWheelEvent>

namespace servescope::gui {
namespace {

// Scrolling the controls column over a number box scrolls the column; the box's value moves
// only once it has the focus (a walk had turned Temperature from 0.80 to 0.35 unseen).
TEST(ControlsColumn, AWheelOverAnUnfocusedBoxLeavesItsValue) {
  testing::app();
  QTemporaryDir cache;
  MainWindow window(testing::test_window_options(cache.path()));
  window.show();
  int boxes = 0;
  for (QAbstractSpinBox* box : window.findChildren<QAbstractSpinBox*>()) {
    if (!box->isVisible() || !box->isEnabled() || box->focusPolicy() != Qt::StrongFocus) continue;
    ++boxes;
    box->clearFocus();
    const QString before = box->text();
    QWheelEvent wheel(QPointF(5, 5), box->mapToGlobal(QPointF(5, 5)), QPoint(), QPoint(0, 120),
                      Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QCoreApplication::sendEvent(box, &wheel);
    EXPECT_EQ(box->text(), before) << box->objectName().toStdString();
  }
  EXPECT_GE(boxes, 5) << "the sampling boxes and the classmates' at least";
}

}  // namespace
}  // namespace servescope::gui
