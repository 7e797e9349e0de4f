// The command-line flags of the tools, on CLI11: one table gives the parser, the range checks and
// --help, so a flag cannot be accepted without being described, or described without its default.
//
//   pf::flags::FlagSet f("pf-train", "trains a placeflow model");
//   f.Int("--steps", &steps, "training steps", 1, 1'000'000'000);
//   f.Double("--lr", &lr, "learning rate", pf::flags::Positive()).Default("the model's");
//   f.String("--devices", &devices, "where the towers go", {"cpu", "gpu", "all"});
//   f.Switch("--restore", &restore, "continue from the latest checkpoint");
//   f.String("--job-name", &job, "cluster task", {"ps", "worker"}).Alias("--job_name");
//   pf::Status s = f.Parse(argc, argv);   // InvalidArgument: one line naming the flag
//   if (f.help_requested()) std::fputs(f.Help().c_str(), stdout);
//
// CLI11 (CLI::App) parses: values come as "--flag value" or "--flag=value", a flag given twice
// keeps its last value, a switch also takes "--flag=true|false". The values are checked here so
// that the errors keep one style ("--batch must be an integer in [1, 10000000], got '0'"): a
// value must parse whole ("10abc" is an error) and numbers are checked against their range. A
// flag's initial value is its default and is printed as such unless Default() says otherwise (a
// value outside the range such as 0 can stand for "unset"). Naming: dashes (--job-name); the
// TensorFlow spellings (--job_name) are aliases (docs/flags.md).
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "placeflow/core/status.h"

namespace CLI {
class App;
}

namespace pf::flags {

struct DoubleRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
};
// (0, +inf): learning rates, timeouts. NaN and infinities are never accepted.
inline DoubleRange Positive() { return {0, std::numeric_limits<double>::max(), true}; }

class FlagSet {
 public:
  struct Flag {
    std::string name, value_name, help, default_text;
    enum class Kind { kSwitch, kString, kInt, kDouble } kind;
    void* target;
    std::vector<std::string> choices;  // kString: the accepted values (empty: any)
    std::vector<std::string> aliases;  // other spellings ("--job_name" for "--job-name")
    int64_t int_min = 0, int_max = 0;
    DoubleRange range;
    // Overrides the printed default ("the model's", "auto").
    Flag& Default(std::string text) {
      default_text = std::move(text);
      return *this;
    }
    // The word after the flag in --help ("N", "DIR").
    Flag& Value(std::string name) {
      value_name = std::move(name);
      return *this;
    }
    // Another spelling of the flag; errors and --help name the flag by its first name.
    Flag& Alias(std::string name) {
      aliases.push_back(std::move(name));
      return *this;
    }
  };

  FlagSet(std::string program, std::string summary);
  // A move leaves the parser behind: it is built again on first use (it points at the table).
  FlagSet(FlagSet&& other) noexcept;
  ~FlagSet();

  Flag& Switch(const std::string& name, bool* target, const std::string& help);
  Flag& String(const std::string& name, std::string* target, const std::string& help,
               std::vector<std::string> choices = {});
  Flag& Int(const std::string& name, int64_t* target, const std::string& help, int64_t min,
            int64_t max);
  Flag& Double(const std::string& name, double* target, const std::string& help, DoubleRange range);
  // Free text after the flag descriptions in --help (examples).
  void set_epilog(std::string text) { epilog_ = std::move(text); }

  // Sets the targets from argv[1..]. An unknown flag, a missing or malformed value, or a number
  // out of range is InvalidArgument with one line: "--batch must be an integer in [1, 10000000],
  // got '0'". --help and -h set help_requested() and stop parsing.
  Status Parse(int argc, const char* const* argv);
  bool help_requested() const { return help_requested_; }
  // CLI11's help (CLI::App::help), laid out by this table's formatter: "usage: <program>
  // [flags]", the summary, then one entry per flag with its default.
  std::string Help();
  const std::deque<Flag>& flags() const { return flags_; }

 private:
  Flag& Add(Flag f);
  // The CLI::App for the table as it is now (built on first use; Alias/Default may come later).
  CLI::App& App();
  std::string HelpText() const;
  Status Set(const Flag& f, const std::string& value) const;
  std::string program_, summary_, epilog_;
  std::deque<Flag> flags_;  // a deque: Add's references stay valid
  bool help_requested_ = false;
  std::unique_ptr<CLI::App> app_;
  friend class HelpFormatter;
};

// Parses all of `text` as an integer in [min, max]; `what` names it in the error.
StatusOr<int64_t> ParseInt(const std::string& text, const std::string& what, int64_t min,
                           int64_t max);

}  // namespace pf::flags
