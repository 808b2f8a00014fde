// ExperimentNameOf (plan_json.h): the experiment's name from a SAX pass that stops there.
#include <nlohmann/json.hpp>

#include "plan_document/plan_json.h"

namespace orch::plan_document {
namespace {

using nlohmann::json;

// Finds experiment.name in a stream of SAX events and stops there.
class NameFinder final : public json::json_sax_t {
 public:
  std::string name;

  bool key(string_t& k) override {
    in_experiment_key_ = depth_ == 1 && k == "experiment";
    name_key_ = depth_ == 2 && in_experiment_ && k == "name";
    return true;
  }
  bool start_object(std::size_t) override { return Enter(); }
  bool start_array(std::size_t) override { return Enter(); }
  bool end_object() override { return Leave(); }
  bool end_array() override { return Leave(); }
  bool string(string_t& value) override {
    if (!name_key_) return Value();
    name = value;
    return false;  // found: stop
  }
  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool parse_error(std::size_t, const std::string&, const json::exception&) override {
    return false;
  }

 private:
  bool Enter() {
    if (depth_ == 1) in_experiment_ = in_experiment_key_;
    in_experiment_key_ = name_key_ = false;
    ++depth_;
    return true;
  }
  bool Leave() {
    if (--depth_ == 1) in_experiment_ = false;
    return true;
  }
  bool Value() {
    in_experiment_key_ = name_key_ = false;
    return true;
  }
  int depth_ = 0;
  bool in_experiment_key_ = false;  // the last key was the top level's "experiment"
  bool in_experiment_ = false;      // inside that object
  bool name_key_ = false;           // the last key was its "name"
};

}  // namespace

std::string ExperimentNameOf(std::string_view text) {
  NameFinder finder;
  // The finder stops the parse once it has the name, which sax_parse reports as a
  // failure: its result says nothing. Not strict: the rest of the text is not read.
  (void)json::sax_parse(text.begin(), text.end(), &finder, json::input_format_t::json, false);
  return finder.name;
}

}  // namespace orch::plan_document
