#include "tools/flags.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace pf::flags {
namespace {

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string RangeText(const DoubleRange& r) {
  const bool has_min = std::isfinite(r.min), has_max = r.max < std::numeric_limits<double>::max();
  if (has_min && has_max && !r.min_exclusive) return fmt::format("in [{}, {}]", r.min, r.max);
  std::string out;
  if (has_min) out = fmt::format("{} {}", r.min_exclusive ? ">" : ">=", r.min);
  if (has_max) out += fmt::format("{}<= {}", out.empty() ? "" : " and ", r.max);
  return out.empty() ? "finite" : out;
}

// Breaks `line` at spaces before column 100, continuing under the description (column 31).
std::string Wrap(const std::string& line) {
  constexpr size_t kWidth = 100, kIndent = 31;
  std::string out, rest = line;
  while (rest.size() > kWidth) {
    size_t cut = rest.rfind(' ', kWidth);
    if (cut == std::string::npos || cut <= kIndent) break;
    out += rest.substr(0, cut) + "\n";
    rest = std::string(kIndent, ' ') + rest.substr(cut + 1);
  }
  return out + rest + "\n";
}

}  // namespace

StatusOr<int64_t> ParseInt(const std::string& text, const std::string& what, int64_t min,
                           int64_t max) {
  auto bad = [&] {
    if (max == std::numeric_limits<int64_t>::max())
      return errors::InvalidArgument(what, " must be an integer >= ", min, ", got '", text, "'");
    return errors::InvalidArgument(what, " must be an integer in [", min, ", ", max, "], got '",
                                   text, "'");
  };
  if (text.empty()) return bad();
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  // ERANGE: past int64 ("99999999999999999999"), also out of [min, max].
  if (*end != '\0' || errno == ERANGE || v < min || v > max) return bad();
  return static_cast<int64_t>(v);
}

FlagSet::Flag& FlagSet::Add(Flag f) {
  flags_.push_back(std::move(f));
  return flags_.back();
}

FlagSet::Flag& FlagSet::Switch(const std::string& name, bool* target, const std::string& help) {
  return Add({name, "", help, *target ? "on" : "off", Flag::Kind::kSwitch, target});
}

FlagSet::Flag& FlagSet::String(const std::string& name, std::string* target,
                               const std::string& help, std::vector<std::string> choices) {
  // Short choice lists show as the value ("cpu|gpu|all"), long ones in the description.
  const std::string shown = Join(choices, "|");
  Flag f{name,
         choices.empty() || shown.size() > 20 ? "NAME" : shown,
         help,
         target->empty() ? "none" : *target,
         Flag::Kind::kString,
         target};
  f.choices = std::move(choices);
  return Add(std::move(f));
}

FlagSet::Flag& FlagSet::Int(const std::string& name, int64_t* target, const std::string& help,
                            int64_t min, int64_t max) {
  Flag f{name, "N", help, std::to_string(*target), Flag::Kind::kInt, target};
  f.int_min = min;
  f.int_max = max;
  return Add(std::move(f));
}

FlagSet::Flag& FlagSet::Double(const std::string& name, double* target, const std::string& help,
                               DoubleRange range) {
  Flag f{name, "F", help, fmt::format("{}", *target), Flag::Kind::kDouble, target};
  f.range = range;
  return Add(std::move(f));
}

Status FlagSet::Set(const Flag& f, const std::string& value) const {
  switch (f.kind) {
    case Flag::Kind::kSwitch:
      return errors::InvalidArgument(f.name, " takes no value, got '", value, "'");
    case Flag::Kind::kString:
      if (!f.choices.empty() &&
          std::find(f.choices.begin(), f.choices.end(), value) == f.choices.end()) {
        return errors::InvalidArgument(f.name, " must be one of ", Join(f.choices, ", "), ", got '",
                                       value, "'");
      }
      *static_cast<std::string*>(f.target) = value;
      return Status::OK();
    case Flag::Kind::kInt: {
      PF_ASSIGN_OR_RETURN(*static_cast<int64_t*>(f.target),
                          ParseInt(value, f.name, f.int_min, f.int_max));
      return Status::OK();
    }
    case Flag::Kind::kDouble: {
      char* end = nullptr;
      errno = 0;
      const double v = value.empty() ? NAN : std::strtod(value.c_str(), &end);
      const DoubleRange& r = f.range;
      const bool ok = !value.empty() && *end == '\0' && std::isfinite(v) &&
                      (r.min_exclusive ? v > r.min : v >= r.min) && v <= r.max;
      if (!ok)
        return errors::InvalidArgument(f.name, " must be a number ", RangeText(r), ", got '", value,
                                       "'");
      *static_cast<double*>(f.target) = v;
      return Status::OK();
    }
  }
  return errors::Internal("unknown flag kind");
}

// CLI11's help, laid out by the table (the layout tests/tools/cli_test.cc and
// tests/install/check_install.sh read).
class HelpFormatter : public CLI::FormatterBase {
 public:
  explicit HelpFormatter(const FlagSet* set) : set_(set) {}
  std::string make_help(const CLI::App*, std::string, CLI::AppFormatMode) const override {
    return set_->HelpText();
  }

 private:
  const FlagSet* set_;
};

FlagSet::FlagSet(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

FlagSet::FlagSet(FlagSet&& other) noexcept
    : program_(std::move(other.program_)),
      summary_(std::move(other.summary_)),
      epilog_(std::move(other.epilog_)),
      flags_(std::move(other.flags_)),
      help_requested_(other.help_requested_) {}

FlagSet::~FlagSet() = default;

CLI::App& FlagSet::App() {
  if (app_) return *app_;
  app_ = std::make_unique<CLI::App>(summary_, program_);
  app_->formatter(std::make_shared<HelpFormatter>(this));
  // Unknown arguments are collected and reported below in the tools' words.
  app_->allow_extras();
  // --help stops parsing where it stands: "--help --batch 0" prints the help.
  app_->set_help_flag();
  app_->add_flag_callback(
          "-h,--help", [] { throw CLI::CallForHelp(); }, "this help")
      ->trigger_on_parse();
  for (const Flag& f : flags_) {
    std::string names = f.name;
    for (const std::string& a : f.aliases) names += "," + a;
    CLI::Option* o = nullptr;
    if (f.kind == Flag::Kind::kSwitch) {
      o = app_->add_flag(names, *static_cast<bool*>(f.target), f.help);
    } else {
      o = app_->add_option_function<std::string>(
          names,
          [this, &f](const std::string& value) {
            Status s = Set(f, value);
            if (!s.ok()) throw CLI::ValidationError(s.message());
          },
          f.help);
    }
    // Checked as they come, in argv's order; the last of repeated values wins.
    o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->trigger_on_parse();
  }
  return *app_;
}

Status FlagSet::Parse(int argc, const char* const* argv) {
  help_requested_ = false;
  CLI::App& app = App();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    help_requested_ = true;
    return Status::OK();
  } catch (const CLI::ArgumentMismatch& e) {
    // "--steps: 1 required TEXT missing"
    const std::string what = e.what();
    if (what.ends_with(" missing"))
      return errors::InvalidArgument("missing value for ", what.substr(0, what.find(':')));
    return errors::InvalidArgument(what);
  } catch (const CLI::ConversionError& e) {
    // A switch given a value that is no boolean: "Could not convert: --restore = maybe".
    const std::string what = e.what();
    const size_t at = what.find(": "), eq = what.find(" = ");
    if (at == std::string::npos || eq == std::string::npos) return errors::InvalidArgument(what);
    return errors::InvalidArgument(what.substr(at + 2, eq - at - 2),
                                   " takes no value (or true/false), got '", what.substr(eq + 3),
                                   "'");
  } catch (const CLI::ParseError& e) {
    return errors::InvalidArgument(e.what());
  }
  const std::vector<std::string> rest = app.remaining();
  if (!rest.empty()) {
    const std::string& arg = rest.front();
    const std::string name = arg.rfind("--", 0) == 0 ? arg.substr(0, arg.find('=')) : arg;
    return errors::InvalidArgument("unknown flag '", name, "' (see ", program_, " --help)");
  }
  return Status::OK();
}

std::string FlagSet::Help() { return App().help(); }

std::string FlagSet::HelpText() const {
  std::string out = fmt::format("usage: {} [FLAG VALUE | FLAG=VALUE | SWITCH]...\n{}\n\nflags:\n",
                                program_, summary_);
  for (const Flag& f : flags_) {
    std::string head = f.name + (f.value_name.empty() ? "" : " " + f.value_name);
    std::string range;
    if (f.kind == Flag::Kind::kInt) {
      range = f.int_max == std::numeric_limits<int64_t>::max()
                  ? fmt::format("; >= {}", f.int_min)
                  : fmt::format("; {}..{}", f.int_min, f.int_max);
    } else if (f.kind == Flag::Kind::kDouble) {
      range = "; " + RangeText(f.range);
    }
    if (!f.choices.empty() && f.value_name == "NAME") range = "; one of " + Join(f.choices, ", ");
    if (!f.aliases.empty()) range += "; also " + Join(f.aliases, ", ");
    out += Wrap(fmt::format("  {:<28} {} (default: {}{})", head, f.help, f.default_text, range));
  }
  if (!epilog_.empty()) out += "\n" + epilog_;
  return out;
}

}  // namespace pf::flags
