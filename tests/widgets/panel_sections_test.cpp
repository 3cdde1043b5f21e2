// The choice of which sections a panel shows in the room it has.
#include "widgets/panel_sections.h"

#include <gtest/gtest.h>

namespace servescope::widgets {
namespace {

const std::vector<SectionNeed> kBatching = {
    {"slots", 7.0}, {"latencies", 6.0}, {"sweep", 9.0}};

TEST(SectionsThatFit, AllOfThemWhenThereIsRoom) {
  EXPECT_EQ(sections_that_fit(kBatching, 40.0, {}), (QStringList{"slots", "latencies", "sweep"}));
}

TEST(SectionsThatFit, DropsTheLeastImportantFirst) {
  EXPECT_EQ(sections_that_fit(kBatching, 16.0, {}), (QStringList{"slots", "latencies"}));
}

TEST(SectionsThatFit, KeepsTheHighlightedSectionAndDropsAnotherForIt) {
  // The batching lesson points at the sweep: then sweep and slots, not the latency table.
  EXPECT_EQ(sections_that_fit(kBatching, 16.0, "sweep"), (QStringList{"slots", "sweep"}));
}

TEST(SectionsThatFit, TakesASmallerLaterSectionWhereALargerOneDoesNotFit) {
  const std::vector<SectionNeed> sections = {{"a", 5.0}, {"big", 20.0}, {"small", 3.0}};
  EXPECT_EQ(sections_that_fit(sections, 9.0, {}), (QStringList{"a", "small"}));
}

TEST(SectionsThatFit, ShowsTheFirstEvenWithoutRoomSoThePanelIsNeverBlank) {
  EXPECT_EQ(sections_that_fit(kBatching, 2.0, {}), (QStringList{"slots"}));
  EXPECT_EQ(sections_that_fit(kBatching, 2.0, "sweep"), (QStringList{"sweep"}));
  EXPECT_TRUE(sections_that_fit({}, 10.0, {}).isEmpty());
}

TEST(SectionsThatFit, AnUnknownHighlightChangesNothing) {
  EXPECT_EQ(sections_that_fit(kBatching, 16.0, "roof"), sections_that_fit(kBatching, 16.0, {}));
}

TEST(HiddenSectionsNote, NamesWhatIsHiddenAndHowToSeeIt) {
  EXPECT_TRUE(hidden_sections_note({}).isEmpty());
  EXPECT_EQ(hidden_sections_note({"occupancy"}),
            "Hidden for room: occupancy. A larger window or T (hide text) shows it.");
  EXPECT_EQ(hidden_sections_note({"occupancy", "latency table"}),
            "Hidden for room: occupancy, latency table. A larger window or T (hide text) shows "
            "them.");
}

}  // namespace
}  // namespace servescope::widgets
