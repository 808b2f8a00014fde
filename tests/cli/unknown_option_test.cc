#include "cli/unknown_option.h"

#include <gtest/gtest.h>

#include <string>

namespace orch::cli {
namespace {

// A command line shaped as orch's: a subcommand with a positional that an unknown
// option would otherwise fill, and a nested subcommand.
struct Commands {
  CLI::App app{"test"};
  std::string spec, bundle, dir, out;
  bool watch = false;
  Commands() {
    app.name("orch");
    app.set_version_flag("--version", "1");
    CLI::App* run = app.add_subcommand("run", "");
    CLI::Option* positional = run->add_option("SPEC", spec, "");
    run->add_option("--bundle", bundle, "")->excludes(positional);
    run->add_option("--model-dir", dir, "");
    run->add_flag("--watch,!--no-watch", watch, "");
    CLI::App* model = app.add_subcommand("model", "");
    model->add_subcommand("synth", "")->add_option("-o,--output", out, "");
  }
  std::string Check(const std::vector<std::string>& args) const {
    return UnknownOptionError(app, args);
  }
};

TEST(UnknownOptionTest, AMistypedOptionIsNamedWithTheClosestOneOfItsCommand) {
  Commands c;
  EXPECT_EQ(c.Check({"run", "--bundle", "b.tar", "--model-dirr", "m"}),
            "orch run: unknown option --model-dirr (did you mean --model-dir?)");
  EXPECT_EQ(c.Check({"run", "spec.toml", "--model-dirr=m"}),
            "orch run: unknown option --model-dirr (did you mean --model-dir?)");
  EXPECT_EQ(c.Check({"model", "synth", "--outptu", "x"}),
            "orch model synth: unknown option --outptu (did you mean --output?)");
  EXPECT_EQ(c.Check({"run", "--frobnicate"}), "orch run: unknown option --frobnicate");
}

TEST(UnknownOptionTest, DeclaredOptionsValuesAndWordsAfterADoubleDashPass) {
  Commands c;
  EXPECT_EQ(c.Check({"run", "--bundle=b.tar", "--model-dir", "m", "--no-watch"}), "");
  EXPECT_EQ(c.Check({"run", "spec.toml", "--watch", "-x"}), "");
  EXPECT_EQ(c.Check({"--version"}), "");
  EXPECT_EQ(c.Check({"model", "synth", "--output", "x", "--help"}), "");
  EXPECT_EQ(c.Check({"run", "spec.toml", "--", "--not-an-option"}), "");
  // An option of another subcommand is unknown here.
  EXPECT_EQ(c.Check({"model", "--bundle"}), "orch model: unknown option --bundle");
}

}  // namespace
}  // namespace orch::cli
