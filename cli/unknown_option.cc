#include "cli/unknown_option.h"

#include "base/suggest.h"

namespace orch::cli {
namespace {

bool Declares(const CLI::App& app, const std::string& name) {
  return app.get_option_no_throw(name) != nullptr;
}

const CLI::App* Subcommand(const CLI::App& app, const std::string& word) {
  std::vector<const CLI::App*> found =
      app.get_subcommands([&word](const CLI::App* sub) { return sub->check_name(word); });
  return found.empty() ? nullptr : found.front();
}

}  // namespace

std::string UnknownOptionError(const CLI::App& app, const std::vector<std::string>& args) {
  std::vector<const CLI::App*> chain = {&app};
  std::string command = app.get_name();
  for (const std::string& arg : args) {
    if (arg == "--") break;
    if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      std::string name = arg.substr(0, arg.find('='));
      bool known = false;
      for (const CLI::App* level : chain) known = known || Declares(*level, name);
      if (known) continue;
      std::vector<std::string> names;
      for (const CLI::App* level : chain) {
        for (const CLI::Option* option : level->get_options()) {
          for (const std::string& lname : option->get_lnames()) names.push_back("--" + lname);
        }
      }
      std::string guess = ClosestName(name, names);
      return command + ": unknown option " + name +
             (guess.empty() ? "" : " (did you mean " + guess + "?)");
    }
    if (arg.empty() || arg[0] == '-') continue;
    if (const CLI::App* sub = Subcommand(*chain.back(), arg); sub != nullptr) {
      chain.push_back(sub);
      command += " " + sub->get_name();
    }
  }
  return "";
}

}  // namespace orch::cli
