// The vocabulary is the contract between lesson files, their README and the window.
#include "app/lessons/vocabulary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace servescope::lessons {
namespace {

std::string lessons_readme() {
  const auto path =
      std::filesystem::path(SERVESCOPE_TEST_DATA_DIR) / ".." / ".." / "lessons" / "README.md";
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

::testing::AssertionResult documented(const std::string& readme, const std::string& text) {
  if (readme.find(text) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "lessons/README.md lacks: " << text;
}

TEST(Vocabulary, TheAuthorsReferenceDocumentsEveryEntry) {
  const std::string readme = lessons_readme();
  ASSERT_FALSE(readme.empty());
  for (const ActionSpec& a : action_specs()) {
    EXPECT_TRUE(documented(readme, "| `" + std::string(a.name) + "` |"));
    EXPECT_TRUE(documented(readme, std::string(a.example))) << a.name;
  }
  for (const MeasureSpec& m : measure_specs()) {
    EXPECT_TRUE(documented(readme, "| `" + std::string(m.name) + "` | " + std::string(m.unit)));
  }
  for (const std::string_view panel : panel_names()) {
    std::string row = "| `" + std::string(panel) + "` | ";
    const auto elements = highlight_elements(panel);
    for (size_t i = 0; i < elements.size(); ++i) {
      row += (i > 0 ? ", `" : "`") + std::string(elements[i]) + "`";
    }
    EXPECT_TRUE(documented(readme, row + " |"));
  }
  for (const PlaceholderSpec& p : model_placeholders()) {
    EXPECT_TRUE(documented(readme, "`" + std::string(p.name) + "`"));
  }
  for (const GeneratorSpec& g : generator_specs()) {
    EXPECT_TRUE(documented(readme, "| `" + std::string(g.name) + "` |"));
    for (const std::string_view value : g.values) {
      EXPECT_TRUE(documented(readme, "`" + std::string(value) + "`")) << g.name;
    }
  }
}

TEST(Vocabulary, NamesAreUniqueAndLookupsFindThem) {
  std::set<std::string_view> names;
  for (const ActionSpec& a : action_specs()) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    EXPECT_EQ(find_action(a.name), &a);
  }
  EXPECT_EQ(names.size(), 23u);  // the actions lessons/README.md lists
  for (const MeasureSpec& m : measure_specs()) EXPECT_EQ(find_measure(m.name), &m);
  for (const GeneratorSpec& g : generator_specs()) EXPECT_EQ(find_generator(g.name), &g);
  EXPECT_EQ(find_action("warp_speed"), nullptr);
  EXPECT_EQ(measure_specs().size(), 55u);
  EXPECT_EQ(generator_specs().size(), 5u);
  EXPECT_EQ(model_choices(), (std::vector<std::string>{"bundled", "timing:25M", "timing:100M",
                                                       "timing:400M", "timing:1B"}));
  for (const std::string_view panel : panel_names()) {
    EXPECT_FALSE(highlight_elements(panel).empty()) << panel;
  }
  EXPECT_TRUE(highlight_elements("nowhere").empty());
}

}  // namespace
}  // namespace servescope::lessons
