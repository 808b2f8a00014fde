#include "drivers/llamacpp/printable_text.h"

#include <gtest/gtest.h>

namespace orch::drivers::llamacpp {
namespace {

TEST(PrintableTextTest, KeepsWellFormedUtf8) {
  EXPECT_EQ(PrintableText(" math"), " math");
  EXPECT_EQ(PrintableText("\xC3\xA9t\xC3\xA9"), "\xC3\xA9t\xC3\xA9");  // été
  EXPECT_EQ(PrintableText("\xE2\x82\xAC"), "\xE2\x82\xAC");            // €
  EXPECT_EQ(PrintableText("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");    // emoji
}

TEST(PrintableTextTest, WritesStrayBytesAsHexEscapes) {
  EXPECT_EQ(PrintableText("\xAC"), "\\xac");
  EXPECT_EQ(PrintableText("\xE2\x82"), "\\xe2\\x82");  // truncated sequence
  EXPECT_EQ(PrintableText("a\xC3"
                          "b"),
            "a\\xc3b");  // lead without continuation
  EXPECT_EQ(PrintableText("\xFF\xFE"), "\\xff\\xfe");
}

}  // namespace
}  // namespace orch::drivers::llamacpp
