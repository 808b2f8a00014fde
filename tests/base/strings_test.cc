#include "base/strings.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "base/errno_status.h"

namespace orch {
namespace {

TEST(StringsTest, LowerFoldsAsciiLettersOnly) {
  EXPECT_EQ(Lower("Q4_K_M"), "q4_k_m");
  EXPECT_EQ(Lower("\xC3\x89t\xC3\xA9 GPU"), "\xC3\x89t\xC3\xA9 gpu");
  EXPECT_EQ(Lower(""), "");
}

TEST(StringsTest, TrimRemovesAsciiWhitespaceAtBothEndsTrimEndOnlyAtTheEnd) {
  EXPECT_EQ(Trim(" \t f16 \r\n"), "f16");
  EXPECT_EQ(TrimEnd(" \t f16 \r\n"), " \t f16");
  EXPECT_EQ(Trim(" \n "), "");
  EXPECT_EQ(TrimEnd("a b"), "a b");
}

TEST(StringsTest, EscapeHtmlWritesTheSpecialCharactersAsEntities) {
  EXPECT_EQ(EscapeHtml("<a href=\"x\">Tom & Jerry's</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry's&lt;/a&gt;");
  EXPECT_EQ(EscapeHtml("plain"), "plain");
}

TEST(StringsTest, ErrnoErrorsNameWhatFailedAndWhy) {
  Status io = ErrnoError("write /x", EACCES);
  EXPECT_EQ(io.code(), StatusCode::kIoError);
  EXPECT_EQ(io.message(), std::string("write /x: ") + std::strerror(EACCES));
  EXPECT_EQ(ErrnoPathError("open /x", ENOENT).code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoPathError("open /x/y", ENOTDIR).code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoPathError("open /x", EIO).code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace orch
